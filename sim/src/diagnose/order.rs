//! Call orders across groups: who deviates when ranks wait for one another in a cycle.
//!
//! Ranks that wait for one another in a cycle of plain waits each sit in a call of one group
//! while a peer waits for them in a call of another. That is a deadlock only when nobody
//! deviates from an order the others follow. A rank's own history says what its order is: the
//! last time it made a call like the one it sits in and a call like the one its peer waits for,
//! which came first. A rank that now makes them the other way round deviates; one whose history
//! agrees does not. When some ranks of the cycle are shown to deviate and at least one is shown
//! to follow the common order, the deviating ranks are the cause (each with the call it made
//! first); otherwise the cycle is a deadlock.
//!
//! The rule is the same for a simulated run (a rank's recent calls in the fold) and for the
//! Flight Recorder dumps of a real job (a rank's records).

/// A call as orders compare them: its group and what it is (an op with its sizes, or its place
/// in the program, whatever makes the same call of two iterations equal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallKey {
    pub group: u32,
    pub like: u64,
}

/// Whether a rank sitting in `head` while a peer waits for it in `awaited` (a call of another
/// group it has not made) deviates from its own order: `history` is its calls before `head`,
/// oldest first. None when its history holds no earlier pair of such calls.
pub fn deviates(history: &[CallKey], head: CallKey, awaited: CallKey) -> Option<bool> {
    if head.group == awaited.group {
        return None;
    }
    let h = history.iter().rposition(|k| *k == head)?;
    let a = history.iter().rposition(|k| *k == awaited)?;
    // last time, the call like `awaited` came after the one like `head`: `head` first is its
    // order
    Some(h > a)
}

/// One rank of a cycle: its verdicts against each peer of the cycle that waits for it.
#[derive(Clone, Debug, Default)]
pub struct Votes {
    pub deviates: bool,
    pub follows: bool,
}

impl Votes {
    pub fn add(&mut self, v: Option<bool>) {
        match v {
            Some(true) => self.deviates = true,
            Some(false) => self.follows = true,
            None => {}
        }
    }
}

/// The ranks of a cycle that deviate, given each rank's votes: those shown to deviate, when at
/// least one other rank is shown to follow the common order and the deviating ranks are fewer.
/// Empty: the cycle is a deadlock.
pub fn deviants(votes: &[(u32, Votes)]) -> Vec<u32> {
    let dev: Vec<u32> = votes
        .iter()
        .filter(|(_, v)| v.deviates && !v.follows)
        .map(|(r, _)| *r)
        .collect();
    let follow = votes
        .iter()
        .filter(|(_, v)| v.follows && !v.deviates)
        .count();
    if dev.is_empty() || follow == 0 || dev.len() >= votes.len() {
        return Vec::new();
    }
    dev
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: u32 = 0;
    const P: u32 = 1;

    fn k(group: u32) -> CallKey {
        CallKey { group, like: 7 }
    }

    #[test]
    fn a_rank_that_swaps_two_calls_of_its_loop_deviates() {
        // every iteration: world, then pair; rank 1 now calls the pair first
        let history = [k(W), k(P), k(W), k(P)];
        assert_eq!(deviates(&history, k(P), k(W)), Some(true));
        assert_eq!(deviates(&history, k(W), k(P)), Some(false));
        // without an earlier iteration nothing can be said
        assert_eq!(deviates(&[], k(P), k(W)), None);
        assert_eq!(deviates(&[k(W)], k(P), k(W)), None);
    }

    #[test]
    fn the_deviating_minority_is_named_and_a_tie_is_a_deadlock() {
        let vote = |d: bool, f: bool| Votes {
            deviates: d,
            follows: f,
        };
        assert_eq!(
            deviants(&[(0, vote(false, true)), (1, vote(true, false))]),
            [1]
        );
        // nobody shown to follow: no common order to deviate from
        assert!(deviants(&[(0, vote(false, false)), (1, vote(true, false))]).is_empty());
        assert!(deviants(&[(0, vote(true, false)), (1, vote(true, false))]).is_empty());
        // contradictory evidence on a rank is no evidence
        assert!(deviants(&[(0, vote(false, true)), (1, vote(true, true))]).is_empty());
    }
}
