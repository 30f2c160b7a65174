//! Rank lists as the command line writes them: `3`, `0-99,101-255`, `0-3 7`.
//!
//! Printing goes through [`ringside_sim::diagnose::fmt_ranks`] (runs of four or more as `a-b`),
//! so what the viewer shows reads back here; [`fit_ranks`] cuts such a list to a width and says
//! exactly how many ranks it left out.

use ringside_sim::diagnose::fmt_ranks;

/// Parses a rank list: numbers and `a-b` ranges separated by commas or spaces. Ranks must be
/// below `world`. The result is sorted, without duplicates.
pub fn parse_ranks(text: &str, world: u32) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    let words = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty());
    let rank = |s: &str| -> Result<u32, String> {
        let r: u32 = s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a rank"))?;
        if r >= world {
            return Err(format!(
                "rank {r} is not in the world (0-{})",
                world.max(1) - 1
            ));
        }
        Ok(r)
    };
    for w in words {
        match w.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (rank(a)?, rank(b)?);
                if a > b {
                    return Err(format!("`{w}`: the range runs backwards"));
                }
                out.extend(a..=b);
            }
            None => out.push(rank(w)?),
        }
    }
    if out.is_empty() {
        return Err("no rank given".into());
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// `ranks` as a rank list no wider than `width` characters: whole entries only, then
/// `…+N` with the exact number of ranks left out.
pub fn fit_ranks(ranks: &[u32], width: usize) -> String {
    let full = fmt_ranks(ranks);
    if full.chars().count() <= width {
        return full;
    }
    let parts: Vec<&str> = full.split(',').collect();
    let count = |p: &str| -> usize {
        match p.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().unwrap_or(0), b.parse().unwrap_or(0));
                b.saturating_sub(a) + 1
            }
            None => 1,
        }
    };
    let total: usize = parts.iter().map(|p| count(p)).sum();
    let mut shown = String::new();
    let mut kept = 0;
    for p in &parts {
        let candidate = if shown.is_empty() {
            p.to_string()
        } else {
            format!("{shown},{p}")
        };
        let tail = format!(",…+{}", total - kept - count(p));
        if candidate.chars().count() + tail.chars().count() > width {
            break;
        }
        shown = candidate;
        kept += count(p);
    }
    if shown.is_empty() {
        format!("…+{total}")
    } else {
        format!("{shown},…+{}", total - kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_like_the_command_line_writes_them() {
        assert_eq!(parse_ranks("3", 8), Ok(vec![3]));
        assert_eq!(parse_ranks("0-2,5 7", 8), Ok(vec![0, 1, 2, 5, 7]));
        let all_but_100: Vec<u32> = (0..256).filter(|&r| r != 100).collect();
        assert_eq!(parse_ranks("0-99,101-255", 256), Ok(all_but_100.clone()));
        assert_eq!(fmt_ranks(&all_but_100), "0-99,101-255");
        assert!(parse_ranks("3-1", 8).unwrap_err().contains("backwards"));
        assert!(parse_ranks("9", 8)
            .unwrap_err()
            .contains("not in the world"));
        assert!(parse_ranks("x", 8).is_err());
        assert!(parse_ranks(" , ", 8).is_err());
    }

    #[test]
    fn a_cut_list_counts_what_it_leaves_out_exactly() {
        let r: Vec<u32> = (0..256).filter(|&r| r % 3 != 0).collect();
        for w in [1, 5, 12, 30, 80] {
            let s = fit_ranks(&r, w);
            assert!(s.chars().count() <= w.max(5), "{s} in {w}");
            let (shown, more) = s.rsplit_once("…+").expect("cut");
            let kept = if shown.is_empty() {
                0
            } else {
                parse_ranks(shown.trim_end_matches(','), 256).unwrap().len()
            };
            assert_eq!(kept + more.parse::<usize>().unwrap(), r.len(), "{s}");
        }
        assert_eq!(fit_ranks(&[1, 2, 3, 4, 9], 20), "1-4,9");
    }
}
