//! A call added or skipped: from the first place two ranks' calls along one group differ, how
//! the culprit's later calls line up with the others'. The import's call-site verdict and the
//! simulated diagnosis both ask it here.

/// How a culprit's calls from a divergence on line up with a rank that kept the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shift {
    /// The culprit's calls are the others' one place later: it made an extra call.
    Extra,
    /// One place earlier: it skipped a call.
    Skipped,
}

/// The culprit's calls from place `s` on against the right rank's: `agree(c, r)` compares the
/// culprit's call at place `c` with the right rank's at `r` (None when either has none there).
/// The longer run of agreeing calls tells, an extra call on a tie; a shift that disagrees
/// within its first two calls is none.
pub fn shift(s: u64, agree: impl Fn(u64, u64) -> Option<bool>) -> Option<Shift> {
    let run = |extra: bool| -> usize {
        let mut n = 0;
        for k in 0u64.. {
            let (c, r) = if extra {
                (s + k + 1, s + k)
            } else {
                (s + k, s + k + 1)
            };
            match agree(c, r) {
                Some(true) => n += 1,
                Some(false) if k < 2 => return 0,
                _ => return n,
            }
        }
        n
    };
    let (extra, skipped) = (run(true), run(false));
    if extra > 0 && extra >= skipped {
        Some(Shift::Extra)
    } else if skipped > 0 {
        Some(Shift::Skipped)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(culprit: &[u8], right: &[u8]) -> Option<Shift> {
        let s = culprit
            .iter()
            .zip(right)
            .position(|(a, b)| a != b)
            .unwrap_or(0) as u64;
        shift(s, |c, r| {
            Some(culprit.get(c as usize)? == right.get(r as usize)?)
        })
    }

    #[test]
    fn an_extra_call_shifts_the_rest_one_later() {
        assert_eq!(of(b"aaXbcd", b"aabcd"), Some(Shift::Extra));
    }

    #[test]
    fn a_skipped_call_shifts_the_rest_one_earlier() {
        assert_eq!(of(b"aacde", b"aabcde"), Some(Shift::Skipped));
    }

    #[test]
    fn calls_that_differ_everywhere_are_no_shift() {
        assert_eq!(of(b"aaxyz", b"aabcd"), None);
    }

    #[test]
    fn the_longer_agreement_tells() {
        // one later agrees for one call only, one earlier for three
        assert_eq!(of(b"abcdX", b"abbcdX"), Some(Shift::Skipped));
    }
}
