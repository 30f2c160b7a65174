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
//! Where the ranks run programs (a simulated run), the programs vote too: a rank whose program
//! makes the two calls in the order fewer programs do deviates. A rank's own history decides
//! when it shows the rank deviating from itself (a loop that swapped two calls in a later
//! iteration, which the programs' first calls do not show); else the programs' vote, else its
//! history ([`verdict`]). The rule is the same for a simulated run (a rank's program before its
//! current call) and for the Flight Recorder dumps of a real job (a rank's records), where the
//! ranks of the sibling groups (the other replicas of a stage: the groups of the same
//! description and size) vote in the programs' place, by the order in which they made the same
//! two calls (`fr::analyze::cycles`).

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

/// Whether a rank deviates, from its own history (`own`, [`deviates`]) and from the others'
/// vote (`programs`: its program orders the two calls as fewer programs do; in dumps, fewer
/// ranks of the sibling groups), either None when it cannot tell: its own history when that
/// shows it deviating, else the others' vote, else its own history.
pub fn verdict(own: Option<bool>, programs: Option<bool>) -> Option<bool> {
    match (own, programs) {
        (Some(true), _) => Some(true),
        (_, Some(p)) => Some(p),
        (own, None) => own,
    }
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
    fn a_rank_that_swapped_in_a_later_iteration_deviates_whatever_the_programs_say() {
        // rank 1's program starts world, pair like everyone's: the programs say it follows
        let history = [k(W), k(P)];
        let own = deviates(&history, k(P), k(W));
        assert_eq!(verdict(own, Some(false)), Some(true));
        // a rank that keeps its own order is judged by the programs
        assert_eq!(verdict(Some(false), Some(true)), Some(true));
        assert_eq!(verdict(Some(false), None), Some(false));
        assert_eq!(verdict(None, None), None);
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
