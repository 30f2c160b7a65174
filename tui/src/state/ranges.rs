//! Rank lists as the command line writes them: `3`, `0-99,101-255`, `7-255/8`, `0-3 7`.
//!
//! The notation is [`ringside_sim::ranklist`]'s (runs of four or more as `a-b`, ranks an equal
//! step apart as `a-b/step`), so what the viewer shows reads back here; [`fit_ranks`] cuts such
//! a list to a width and says exactly how many ranks it left out.

use ringside_sim::ranklist;

/// Parses a rank list: numbers, `a-b` ranges and `a-b/step` ranges separated by commas or
/// spaces. Ranks must be below `world`. The result is sorted, without duplicates.
pub fn parse_ranks(text: &str, world: u32) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    let words = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty());
    for w in words {
        let ranks = ranklist::parse(w, u64::from(world)).map_err(|e| match e {
            // a range past the world names its first rank outside it
            e if e.starts_with("more ranks") => format!("`{w}` holds more ranks than the world"),
            e => e,
        })?;
        if let Some(r) = ranks.iter().find(|&&r| r >= world) {
            return Err(format!(
                "rank {r} is not in the world (0-{})",
                world.max(1) - 1
            ));
        }
        out.extend(ranks);
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
    let parts = ranklist::terms(ranks);
    let full = parts
        .iter()
        .map(|(t, _)| t.as_str())
        .collect::<Vec<_>>()
        .join(",");
    if full.chars().count() <= width {
        return full;
    }
    let total: usize = parts.iter().map(|(_, n)| n).sum();
    let mut shown = String::new();
    let mut kept = 0;
    for (p, n) in &parts {
        let candidate = if shown.is_empty() {
            p.to_string()
        } else {
            format!("{shown},{p}")
        };
        let tail = format!(",…+{}", total - kept - n);
        if candidate.chars().count() + tail.chars().count() > width {
            break;
        }
        shown = candidate;
        kept += n;
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
        assert_eq!(ranklist::fmt_ranks(&all_but_100), "0-99,101-255");
        // every 8th rank, as the viewer writes it
        let every_8th: Vec<u32> = (7..256).step_by(8).collect();
        assert_eq!(ranklist::fmt_ranks(&every_8th), "7-255/8");
        assert_eq!(parse_ranks("7-255/8", 256), Ok(every_8th));
        assert!(parse_ranks("7-263/8", 256)
            .unwrap_err()
            .contains("not in the world"));
        assert!(parse_ranks("3-1", 8)
            .unwrap_err()
            .contains("ends before it starts"));
        assert!(parse_ranks("9", 8)
            .unwrap_err()
            .contains("not in the world"));
        assert!(parse_ranks("x", 8).is_err());
        assert!(parse_ranks(" , ", 8).is_err());
    }

    #[test]
    fn a_cut_list_counts_what_it_leaves_out_exactly() {
        let r: Vec<u32> = (0..256).filter(|&r| r % 3 != 0 && r % 7 != 0).collect();
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
        // stepped terms are counted whole
        let but_every_8th: Vec<u32> = (0..256).filter(|&r| r % 8 != 7).collect();
        let s = fit_ranks(&but_every_8th, 30);
        assert_eq!(s, "0-248/8,1-249/8,2-250/8,…+128", "{s}");
    }
}
