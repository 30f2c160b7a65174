//! Who is in a group, and where: group index <-> world rank.

use crate::Rank;
use std::sync::Arc;

/// Shared, immutable description of a group's membership for its collectives. Every rank of a
/// group can hold the same `Arc`, so that a world of p ranks keeps one copy, not p.
#[derive(Debug, PartialEq, Eq)]
pub struct Members {
    /// World rank of each group index.
    pub ranks: Vec<Rank>,
    /// How to find a world rank's group index.
    lookup: Lookup,
}

#[derive(Debug, PartialEq, Eq)]
enum Lookup {
    /// World rank r is group index r, for r below the length: the world and its like.
    Identity,
    /// Group index of each world rank from `first` on (`u32::MAX` when not a member): for
    /// groups that fill most of their span of world ranks.
    Dense { first: u32, index_of: Vec<u32> },
    /// (world rank, group index), sorted by rank: for sparse groups, such as a mesh column.
    Sparse(Vec<(Rank, u32)>),
}

impl Members {
    pub fn new(ranks: Vec<Rank>) -> Arc<Members> {
        if ranks.iter().enumerate().all(|(i, r)| r.0 as usize == i) {
            return Arc::new(Members {
                ranks,
                lookup: Lookup::Identity,
            });
        }
        let first = ranks.iter().map(|r| r.0).min().unwrap_or(0);
        // in u64: a rank at u32::MAX must not wrap the span to nothing
        let span = ranks
            .iter()
            .map(|r| u64::from(r.0 - first) + 1)
            .max()
            .unwrap_or(0);
        let lookup = if span <= 2 * ranks.len() as u64 + 64 {
            let span = span as usize;
            let mut index_of = vec![u32::MAX; span];
            for (i, r) in ranks.iter().enumerate() {
                index_of[(r.0 - first) as usize] = i as u32;
            }
            Lookup::Dense { first, index_of }
        } else {
            let mut by_rank: Vec<(Rank, u32)> = ranks
                .iter()
                .enumerate()
                .map(|(i, &r)| (r, i as u32))
                .collect();
            by_rank.sort_unstable();
            Lookup::Sparse(by_rank)
        };
        Arc::new(Members { ranks, lookup })
    }

    #[inline]
    pub fn index(&self, r: Rank) -> Option<u32> {
        match &self.lookup {
            Lookup::Identity => ((r.0 as usize) < self.ranks.len()).then_some(r.0),
            Lookup::Dense { first, index_of } => {
                r.0.checked_sub(*first)
                    .and_then(|k| index_of.get(k as usize))
                    .copied()
                    .filter(|&i| i != u32::MAX)
            }
            Lookup::Sparse(v) => v.binary_search_by_key(&r, |&(q, _)| q).ok().map(|k| v[k].1),
        }
    }
    pub fn len(&self) -> usize {
        self.ranks.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_find_their_index_dense_or_sparse() {
        for ranks in [
            vec![0, 1, 2, 3],
            vec![0, 2, 1],
            vec![0],
            vec![5, 6, 7],
            vec![3, 1, 2],
            vec![0, 1000, 2000, 3000],
            vec![4000, 7, 2500],
            vec![0, u32::MAX],
            vec![u32::MAX],
            vec![],
        ] {
            let m = Members::new(ranks.iter().map(|&r| Rank(r)).collect());
            for (i, &r) in ranks.iter().enumerate() {
                assert_eq!(m.index(Rank(r)), Some(i as u32), "{ranks:?}");
            }
            for r in [4u32, 8, 999, 1001, 5000] {
                if !ranks.contains(&r) {
                    assert_eq!(m.index(Rank(r)), None, "{ranks:?} {r}");
                }
            }
        }
    }
}
