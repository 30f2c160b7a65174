//! Where the blocks of a working buffer lie: block `b` of `nb` covers elements
//! `[b*len/nb, (b+1)*len/nb)` and modeled bytes `[b*n/nb, (b+1)*n/nb)`.
//!
//! [`Blocks`] answers the same for one call without a hardware division per lookup (chunks are
//! cut and applied for every message, and 64-bit divisions are slow): with len = q*nb + r,
//! floor(b*len/nb) = b*q + floor(b*r/nb), and b*r < nb^2 fits in 32 bits for nb <= 2^16, where
//! a multiplication by a precomputed inverse divides exactly (Lemire, Kaser & Kurz, "Faster
//! Remainder by Direct Computation", 2019).

use std::ops::Range;

/// Element range of blocks `[lo, hi)` of `nb` in a buffer of `len` elements.
#[inline]
pub fn block_elems(lo: u32, hi: u32, nb: u32, len: usize) -> Range<usize> {
    let nb = u64::from(nb.max(1));
    let len = len as u64;
    let at = |b: u32| (u64::from(b) * len / nb) as usize;
    at(lo)..at(hi)
}

/// Modeled bytes of blocks `[lo, hi)` of `nb` in a buffer of `n` bytes.
#[inline]
pub fn block_bytes(lo: u32, hi: u32, nb: u32, n: u64) -> u64 {
    if n <= u64::from(u32::MAX) {
        // b * n fits in u64: avoid 128-bit division on the hot path
        let nb = u64::from(nb.max(1));
        let at = |b: u32| u64::from(b) * n / nb;
        return at(hi) - at(lo);
    }
    let nb = u128::from(nb.max(1));
    let at = |b: u32| (u128::from(b) * u128::from(n) / nb) as u64;
    at(hi) - at(lo)
}

/// The blocks of one call's buffer: `len` elements and `n` modeled bytes in `nb` blocks.
#[derive(Clone, Copy, Debug)]
pub struct Blocks {
    nb: u32,
    len: usize,
    n: u64,
    fast: Option<Inverse>,
}

/// len and n split by nb, and the inverse of nb.
#[derive(Clone, Copy, Debug)]
struct Inverse {
    /// nb divides both len and n: every block has len_q elements and n_q bytes.
    even: bool,
    /// ceil(2^64 / nb).
    m: u64,
    len_q: u64,
    len_r: u32,
    n_q: u64,
    n_r: u32,
}

impl Inverse {
    /// floor(x / nb) for any 32-bit x.
    #[inline]
    fn div(&self, x: u32) -> u64 {
        ((u128::from(self.m) * u128::from(x)) >> 64) as u64
    }
}

impl Blocks {
    pub fn new(nb: u32, len: usize, n: u64) -> Blocks {
        let d = nb.max(1);
        let fast = (2..=1 << 16).contains(&d).then(|| {
            let d64 = u64::from(d);
            Inverse {
                even: (len as u64).is_multiple_of(d64) && n.is_multiple_of(d64),
                m: u64::MAX / d64 + 1,
                len_q: len as u64 / d64,
                len_r: (len as u64 % d64) as u32,
                n_q: n / d64,
                n_r: (n % d64) as u32,
            }
        });
        Blocks { nb, len, n, fast }
    }

    pub fn nblocks(&self) -> u32 {
        self.nb
    }

    /// Element range of blocks `[lo, hi)`: `block_elems(lo, hi, nb, len)`.
    #[inline]
    pub fn elems(&self, lo: u32, hi: u32) -> Range<usize> {
        match &self.fast {
            Some(f) => {
                let at = |b: u32| (u64::from(b) * f.len_q + f.div(b * f.len_r)) as usize;
                at(lo)..at(hi)
            }
            None => block_elems(lo, hi, self.nb, self.len),
        }
    }

    /// Element range and modeled bytes of block `b` alone: `(self.elems(b, b + 1),
    /// self.bytes(b, b + 1))`, with less arithmetic when the blocks are all alike.
    #[inline]
    pub fn one(&self, b: u32) -> (Range<usize>, u64) {
        match &self.fast {
            Some(f) if f.even => {
                let at = (u64::from(b) * f.len_q) as usize;
                (at..at + f.len_q as usize, f.n_q)
            }
            _ => (self.elems(b, b + 1), self.bytes(b, b + 1)),
        }
    }

    /// Modeled bytes of blocks `[lo, hi)`: `block_bytes(lo, hi, nb, n)`.
    #[inline]
    pub fn bytes(&self, lo: u32, hi: u32) -> u64 {
        match &self.fast {
            Some(f) => {
                let at = |b: u32| u64::from(b) * f.n_q + f.div(b * f.n_r);
                at(hi) - at(lo)
            }
            None => block_bytes(lo, hi, self.nb, self.n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_the_buffer_exactly() {
        for len in [0usize, 1, 5, 7, 64] {
            for nb in [1u32, 2, 3, 8, 9] {
                let total: usize = (0..nb).map(|b| block_elems(b, b + 1, nb, len).len()).sum();
                assert_eq!(total, len);
                let bytes: u64 = (0..nb).map(|b| block_bytes(b, b + 1, nb, 1001)).sum();
                assert_eq!(bytes, 1001);
            }
        }
    }

    fn same(nb: u32, len: usize, n: u64, lo: u32, hi: u32) {
        let b = Blocks::new(nb, len, n);
        assert_eq!(
            b.elems(lo, hi),
            block_elems(lo, hi, nb, len),
            "{nb} {len} {lo}..{hi}"
        );
        assert_eq!(
            b.bytes(lo, hi),
            block_bytes(lo, hi, nb, n),
            "{nb} {n} {lo}..{hi}"
        );
        if lo < nb {
            let one = (
                block_elems(lo, lo + 1, nb, len),
                block_bytes(lo, lo + 1, nb, n),
            );
            assert_eq!(b.one(lo), one, "{nb} {len} {n} block {lo}");
        }
    }

    #[test]
    fn the_inverse_divides_exactly_at_the_edges() {
        for nb in [1u32, 2, 3, 7, 4096, 4097, 65_535, 65_536, 65_537, 1 << 20] {
            for len in [0usize, 1, 63, 64, 1 << 20, usize::MAX >> 40] {
                for n in [
                    0u64,
                    1,
                    1 << 20,
                    (1 << 32) + 1,
                    1 << 40,
                    u64::MAX >> 1,
                    u64::MAX,
                ] {
                    for (lo, hi) in [(0, 0), (0, 1), (nb / 2, nb), (nb - 1, nb), (0, nb)] {
                        same(nb, len, n, lo, hi);
                    }
                }
            }
        }
    }

    /// Random cases from a fixed seed (splitmix64): the crate has no test framework dependency.
    #[test]
    fn the_inverse_agrees_with_division() {
        let mut x = 0x5eed_u64;
        let mut next = move || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        for _ in 0..20_000 {
            let nb = 1 + (next() % 69_999) as u32;
            let len = (next() % (1 << 24)) as usize;
            let n = next();
            let (a, b) = (next() as u32 % (nb + 1), next() as u32 % (nb + 1));
            same(nb, len, n, a.min(b), a.max(b));
        }
    }
}
