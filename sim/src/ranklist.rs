//! Lists of ranks as every report writes them and `missing:` causes parse them back.
//!
//! A list is terms separated by commas, each rank in exactly one term:
//! - `5`: one rank;
//! - `0-99`: every rank from 0 to 99 (a run of four or more consecutive ranks);
//! - `7-4095/8`: every 8th rank from 7 to 4095 (four or more ranks an equal step apart, the last
//!   one reached from the first by whole steps).
//!
//! Terms are written in the order of their first rank. A list is written with steps only when
//! runs alone take more than eight terms and steps take fewer, so a short list reads as it is
//! (`1,3,5,7`) and a list that is plain runs (`0-99,101-1023`) is written as it always was; the ranks of the data-parallel peers of a large job (every 8th
//! rank) are one term, and every rank but those, `0-4088/8,1-4089/8,...,6-4094/8`, one per
//! offset instead of one per block.

/// The fewest members a run or a step takes to be written as one term.
const MIN_RUN: usize = 4;

/// The most terms a list of runs and single ranks is left as it is: short enough to read whole.
const PLAIN_TERMS: usize = 8;

/// How many of the most frequent steps a list is tried with.
const STEPS_TRIED: usize = 4;

/// One term: `first` to `last` by `step` (a single rank has `first == last`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Term {
    first: u32,
    last: u32,
    step: u32,
}

impl std::fmt::Display for Term {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.first == self.last, self.step) {
            (true, _) => write!(f, "{}", self.first),
            (false, 1) => write!(f, "{}-{}", self.first, self.last),
            (false, s) => write!(f, "{}-{}/{s}", self.first, self.last),
        }
    }
}

/// `v` (sorted, distinct) as runs of consecutive ranks (`MIN_RUN` or more) and single ranks.
fn runs(v: &[u32], out: &mut Vec<Term>) {
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        if j + 1 - i >= MIN_RUN {
            out.push(Term {
                first: v[i],
                last: v[j],
                step: 1,
            });
        } else {
            out.extend(v[i..=j].iter().map(|&x| Term {
                first: x,
                last: x,
                step: 1,
            }));
        }
        i = j + 1;
    }
}

/// `v` (sorted, distinct) with step `step`: runs at least `step` (and `MIN_RUN`) long as runs,
/// then chains of the other ranks `step` apart (`MIN_RUN` or more), then what is left as runs
/// and ranks.
fn with_step(v: &[u32], step: u32) -> Vec<Term> {
    let mut out = Vec::new();
    let mut rest: Vec<u32> = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        if j + 1 - i >= MIN_RUN && (j + 1 - i) as u64 >= u64::from(step) {
            out.push(Term {
                first: v[i],
                last: v[j],
                step: 1,
            });
        } else {
            rest.extend_from_slice(&v[i..=j]);
        }
        i = j + 1;
    }
    let mut used = vec![false; rest.len()];
    for k in 0..rest.len() {
        if used[k] {
            continue;
        }
        let mut chain = vec![k];
        let mut at = k;
        while let Some(next) = rest[at].checked_add(step) {
            match rest[at + 1..].binary_search(&next) {
                Ok(d) => {
                    at += 1 + d;
                    chain.push(at);
                }
                Err(_) => break,
            }
        }
        if chain.len() >= MIN_RUN {
            for &c in &chain {
                used[c] = true;
            }
            out.push(Term {
                first: rest[k],
                last: rest[at],
                step,
            });
        }
    }
    let left: Vec<u32> = (0..rest.len())
        .filter(|&k| !used[k])
        .map(|k| rest[k])
        .collect();
    runs(&left, &mut out);
    out.sort_unstable();
    out
}

/// The steps worth trying on `v` (sorted, distinct): the most frequent gaps between
/// neighbouring ranks and between the starts of neighbouring runs, above 1.
fn steps(v: &[u32]) -> Vec<u32> {
    let mut seen: std::collections::BTreeMap<u32, usize> = std::collections::BTreeMap::new();
    let mut run_start = v.first().copied();
    for w in v.windows(2) {
        let gap = w[1] - w[0];
        if gap > 1 {
            *seen.entry(gap).or_default() += 1;
            if let Some(s) = run_start {
                *seen.entry(w[1] - s).or_default() += 1;
            }
            run_start = Some(w[1]);
        }
    }
    let mut by_count: Vec<(usize, u32)> = seen
        .into_iter()
        .filter(|&(s, _)| s > 1)
        .map(|(s, n)| (n, s))
        .collect();
    by_count.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    by_count
        .into_iter()
        .take(STEPS_TRIED)
        .map(|(_, s)| s)
        .collect()
}

/// A list of ranks in the notation of the module doc, e.g. `0-99,101-1023` or `7-4095/8`.
pub fn fmt_ranks(r: &[u32]) -> String {
    terms(r)
        .iter()
        .map(|(t, _)| t.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// The terms of the list [`fmt_ranks`] writes, each with how many ranks it holds (for a list
/// cut to a width, which counts what it leaves out).
pub fn terms(r: &[u32]) -> Vec<(String, usize)> {
    let mut v = r.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut best = Vec::new();
    runs(&v, &mut best);
    if best.len() > PLAIN_TERMS {
        for s in steps(&v) {
            let t = with_step(&v, s);
            if t.len() < best.len() {
                best = t;
            }
        }
    }
    best.iter()
        .map(|t| {
            let n = (t.last - t.first) / t.step + 1;
            (t.to_string(), n as usize)
        })
        .collect()
}

/// The ranks of a list in the notation of the module doc, in the order written, at most `max`
/// of them; the error says which term is wrong.
pub fn parse(s: &str, max: u64) -> Result<Vec<u32>, String> {
    let rank = |x: &str| -> Result<u32, String> {
        if x.is_empty() || !x.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("`{x}` is not a rank number"));
        }
        x.parse().map_err(|_| format!("rank `{x}` is too large"))
    };
    let mut ranks: Vec<u32> = Vec::new();
    for part in s.split(',') {
        let (span, step) = match part.split_once('/') {
            Some((span, step)) => {
                let n = rank(step)
                    .map_err(|_| format!("`{part}`: the step `{step}` is not a number"))?;
                if n == 0 {
                    return Err(format!("`{part}`: a step is at least 1"));
                }
                (span, n)
            }
            None => (part, 1),
        };
        let (a, b) = match span.split_once('-') {
            Some((a, b)) => (rank(a)?, rank(b)?),
            None if step > 1 => {
                return Err(format!("`{part}`: a step needs a range, as in `7-4095/8`"))
            }
            None => {
                let r = rank(span)?;
                (r, r)
            }
        };
        if b < a {
            return Err(format!("the range `{part}` ends before it starts"));
        }
        if (b - a) % step != 0 {
            return Err(format!(
                "the range `{part}` does not end on a step: {b} is not {a} plus a multiple of {step}"
            ));
        }
        let n = u64::from((b - a) / step) + 1;
        if ranks.len() as u64 + n > max {
            return Err(format!("more ranks than the largest world ({max})"));
        }
        ranks.extend((0..n as u32).map(|k| a + k * step));
    }
    let mut sorted = ranks.clone();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("rank {} is named twice", w[0]));
    }
    Ok(ranks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(v: &[u32]) -> String {
        let s = fmt_ranks(v);
        let mut back = parse(&s, u64::MAX).expect(&s);
        back.sort_unstable();
        let mut want = v.to_vec();
        want.sort_unstable();
        want.dedup();
        assert_eq!(back, want, "{s}");
        s
    }

    #[test]
    fn plain_runs_are_written_as_they_always_were() {
        assert_eq!(round_trip(&[4, 0, 1, 2]), "0,1,2,4");
        assert_eq!(round_trip(&[0, 1, 2, 3, 4, 5, 7]), "0-5,7");
        let v: Vec<u32> = (0..1024).filter(|&r| r != 100).collect();
        assert_eq!(round_trip(&v), "0-99,101-1023");
        assert_eq!(round_trip(&[0, 2]), "0,2");
        assert_eq!(fmt_ranks(&[]), "");
    }

    #[test]
    fn ranks_an_equal_step_apart_are_one_term() {
        let every_8th: Vec<u32> = (7..4096).step_by(8).collect();
        assert_eq!(round_trip(&every_8th), "7-4095/8");
        let every_4th: Vec<u32> = (3..64).step_by(4).chain([100]).collect();
        assert_eq!(round_trip(&every_4th), "3-63/4,100");
        // fewer than four an equal step apart are listed, and so is a short list
        assert_eq!(
            round_trip(&[0, 8, 16, 500, 1000, 1500, 2000, 2500, 3000]),
            "0-3000/500,8,16"
        );
        assert_eq!(round_trip(&[1, 3, 5, 7]), "1,3,5,7");
        assert_eq!(
            round_trip(&[0, 2, 4, 6, 8, 10, 12, 14]),
            "0,2,4,6,8,10,12,14"
        );
        assert_eq!(round_trip(&[0, 2, 4, 6, 8, 10, 12, 14, 16]), "0-16/2");
        // every rank but every 8th: one term per offset, the long run kept whole
        let but: Vec<u32> = (0..4096)
            .filter(|r| r % 8 != 7 || (256..3848).contains(r))
            .collect();
        let s = round_trip(&but);
        assert!(s.starts_with("0-248/8,1-249/8,"), "{s}");
        assert!(s.contains(",6-254/8,256-3854,3856-4088/8,"), "{s}");
        assert_eq!(s.split(',').count(), 15, "{s}");
    }

    #[test]
    fn lists_are_parsed_strictly() {
        assert_eq!(parse("7-31/8,1", 100), Ok(vec![7, 15, 23, 31, 1]));
        assert_eq!(parse("0-3", 100), Ok(vec![0, 1, 2, 3]));
        for bad in [
            "7-30/8", "7/8", "7-31/0", "7-31/x", "31-7/8", "0-3,2", "a", "1,,2",
        ] {
            assert!(parse(bad, 100).is_err(), "{bad}");
        }
        assert!(parse("0-100", 100).is_err());
        assert!(parse("0-4294967295/1", 1_000_000).is_err());
    }
}
