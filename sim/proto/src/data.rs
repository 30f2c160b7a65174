//! Real data: typed buffers, reductions, and the deterministic inputs of each rank.
//!
//! A collective's timing is driven by its modeled size in bytes; its correctness by a small
//! real buffer of `elements` values, chunks of which travel in the messages, so the real reduction
//! happens and every result can be checked against the exact expected value.

use crate::vocab::{Dtype, ReduceOp};
use std::ops::Range;

/// A typed vector of real values.
#[derive(Clone, Debug, PartialEq)]
pub enum Buffer {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I64(Vec<i64>),
}

impl Buffer {
    pub fn zeros(dtype: Dtype, len: usize) -> Buffer {
        match dtype {
            Dtype::F32 => Buffer::F32(vec![0.0; len]),
            Dtype::F64 => Buffer::F64(vec![0.0; len]),
            Dtype::I64 => Buffer::I64(vec![0; len]),
        }
    }

    pub fn with_capacity(dtype: Dtype, cap: usize) -> Buffer {
        match dtype {
            Dtype::F32 => Buffer::F32(Vec::with_capacity(cap)),
            Dtype::F64 => Buffer::F64(Vec::with_capacity(cap)),
            Dtype::I64 => Buffer::I64(Vec::with_capacity(cap)),
        }
    }

    pub fn empty(dtype: Dtype) -> Buffer {
        Buffer::zeros(dtype, 0)
    }

    pub fn dtype(&self) -> Dtype {
        match self {
            Buffer::F32(_) => Dtype::F32,
            Buffer::F64(_) => Dtype::F64,
            Buffer::I64(_) => Dtype::I64,
        }
    }

    /// The address of element `i` (one past the end at most), for a driver's cache hint:
    /// nothing is read through it.
    #[inline(always)]
    pub fn element_addr(&self, i: usize) -> *const u8 {
        match self {
            Buffer::F32(v) => v.as_ptr().wrapping_add(i).cast(),
            Buffer::F64(v) => v.as_ptr().wrapping_add(i).cast(),
            Buffer::I64(v) => v.as_ptr().wrapping_add(i).cast(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Buffer::F32(v) => v.len(),
            Buffer::F64(v) => v.len(),
            Buffer::I64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A new buffer holding `self[range]`.
    pub fn part(&self, range: Range<usize>) -> Buffer {
        match self {
            Buffer::F32(s) => Buffer::F32(s[range].to_vec()),
            Buffer::F64(s) => Buffer::F64(s[range].to_vec()),
            Buffer::I64(s) => Buffer::I64(s[range].to_vec()),
        }
    }

    /// Makes `self` a copy of `src[range]`, reusing its allocation when the dtypes agree.
    #[inline(always)]
    pub fn assign_from(&mut self, src: &Buffer, range: Range<usize>) {
        match (&mut *self, src) {
            (Buffer::F32(d), Buffer::F32(s)) => assign(d, &s[range]),
            (Buffer::F64(d), Buffer::F64(s)) => assign(d, &s[range]),
            (Buffer::I64(d), Buffer::I64(s)) => assign(d, &s[range]),
            _ => *self = src.part(range),
        }
    }

    /// Empties `self` and makes it of `dtype`, keeping its allocation when it already is.
    pub fn clear_as(&mut self, dtype: Dtype) {
        match self {
            Buffer::F32(v) if dtype == Dtype::F32 => v.clear(),
            Buffer::F64(v) if dtype == Dtype::F64 => v.clear(),
            Buffer::I64(v) if dtype == Dtype::I64 => v.clear(),
            _ => *self = Buffer::empty(dtype),
        }
    }

    /// Appends `src[range]` to `self` (same dtype).
    pub fn extend_from(&mut self, src: &Buffer, range: Range<usize>) {
        match (self, src) {
            (Buffer::F32(d), Buffer::F32(s)) => d.extend_from_slice(&s[range]),
            (Buffer::F64(d), Buffer::F64(s)) => d.extend_from_slice(&s[range]),
            (Buffer::I64(d), Buffer::I64(s)) => d.extend_from_slice(&s[range]),
            _ => {}
        }
    }

    /// Overwrites `self[at..at + len]` with `src[from..from + len]`. Returns false on a dtype
    /// or length mismatch (which a fingerprint check rules out; the caller treats it as corrupt).
    #[inline(always)]
    pub fn copy_from(&mut self, at: usize, src: &Buffer, from: usize, len: usize) -> bool {
        match (self, src) {
            (Buffer::F32(d), Buffer::F32(s)) if at + len <= d.len() && from + len <= s.len() => {
                copy(&mut d[at..at + len], &s[from..from + len])
            }
            (Buffer::F64(d), Buffer::F64(s)) if at + len <= d.len() && from + len <= s.len() => {
                copy(&mut d[at..at + len], &s[from..from + len])
            }
            (Buffer::I64(d), Buffer::I64(s)) if at + len <= d.len() && from + len <= s.len() => {
                copy(&mut d[at..at + len], &s[from..from + len])
            }
            _ => return false,
        }
        true
    }

    /// `self[at..at + len] = op(self[at..], src[from..])`, element-wise.
    #[inline(always)]
    pub fn reduce_from(
        &mut self,
        at: usize,
        src: &Buffer,
        from: usize,
        len: usize,
        op: ReduceOp,
    ) -> bool {
        match (self, src) {
            (Buffer::F32(d), Buffer::F32(s)) if at + len <= d.len() && from + len <= s.len() => {
                reduce_each(
                    &mut d[at..at + len],
                    s[from..from + len].iter().copied(),
                    op,
                )
            }
            (Buffer::F64(d), Buffer::F64(s)) if at + len <= d.len() && from + len <= s.len() => {
                reduce_each(
                    &mut d[at..at + len],
                    s[from..from + len].iter().copied(),
                    op,
                )
            }
            (Buffer::I64(d), Buffer::I64(s)) if at + len <= d.len() && from + len <= s.len() => {
                reduce_each(
                    &mut d[at..at + len],
                    s[from..from + len].iter().copied(),
                    op,
                )
            }
            _ => return false,
        }
        true
    }

    /// A stable 64-bit hash of the exact bit patterns (FNV-1a), used to compare results.
    pub fn hash(&self) -> u64 {
        let mut h = Fnv::new();
        match self {
            Buffer::F32(v) => v.iter().for_each(|x| h.write(&x.to_bits().to_le_bytes())),
            Buffer::F64(v) => v.iter().for_each(|x| h.write(&x.to_bits().to_le_bytes())),
            Buffer::I64(v) => v.iter().for_each(|x| h.write(&x.to_le_bytes())),
        }
        h.finish()
    }

    /// Whether two buffers hold the very same bits (of the same type).
    pub fn same_bits(&self, other: &Buffer) -> bool {
        match (self, other) {
            (Buffer::F32(a), Buffer::F32(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (Buffer::F64(a), Buffer::F64(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (Buffer::I64(a), Buffer::I64(b)) => a == b,
            _ => false,
        }
    }

    /// Whether two buffers hold the same values, exactly for i64 and within a relative
    /// tolerance for floats (reduction order differs between algorithms).
    pub fn approx_eq(&self, other: &Buffer) -> bool {
        fn close(a: f64, b: f64, tol: f64) -> bool {
            a == b || (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0)
        }
        match (self, other) {
            // the same values (the usual case: sums of quarters are exact in any order) are
            // told apart from near ones in one pass the processor runs several elements at a time
            (Buffer::F32(a), Buffer::F32(b)) => {
                a == b
                    || a.len() == b.len()
                        && a.iter()
                            .zip(b)
                            .all(|(x, y)| close(f64::from(*x), f64::from(*y), 1e-4))
            }
            (Buffer::F64(a), Buffer::F64(b)) => {
                a == b || a.len() == b.len() && a.iter().zip(b).all(|(x, y)| close(*x, *y, 1e-10))
            }
            (Buffer::I64(a), Buffer::I64(b)) => a == b,
            _ => false,
        }
    }

    /// The deterministic input of `rank` for one call: a pure function of its arguments, so the
    /// expected result of any collective can be recomputed from the scenario alone.
    pub fn input(
        dtype: Dtype,
        reduce: ReduceOp,
        len: usize,
        seed: u64,
        rank: u32,
        iteration: u32,
        op_index: u32,
    ) -> Buffer {
        let v = InputValues::new(reduce, seed, rank, iteration, op_index);
        match dtype {
            Dtype::I64 => Buffer::I64((0..len).map(|e| v.int(e)).collect()),
            Dtype::F32 => Buffer::F32((0..len).map(|e| v.float(e) as f32).collect()),
            Dtype::F64 => Buffer::F64((0..len).map(|e| v.float(e)).collect()),
        }
    }

    /// `reduce_from(0, &Buffer::input(..., len, ...), 0, len, reduce)` without building the
    /// input: reduces the first `len` elements with `rank`'s input of the call (false, and
    /// nothing changed, when the buffer is shorter).
    pub fn reduce_input(
        &mut self,
        reduce: ReduceOp,
        len: usize,
        seed: u64,
        rank: u32,
        iteration: u32,
        op_index: u32,
    ) -> bool {
        if len > self.len() {
            return false;
        }
        let v = InputValues::new(reduce, seed, rank, iteration, op_index);
        match self {
            Buffer::F32(d) => reduce_each(d, (0..len).map(|e| v.float(e) as f32), reduce),
            Buffer::F64(d) => reduce_each(d, (0..len).map(|e| v.float(e)), reduce),
            Buffer::I64(d) => reduce_each(d, (0..len).map(|e| v.int(e)), reduce),
        }
        true
    }
}

/// An element type's reductions (integers wrap).
trait Reduce: Copy {
    fn plus(self, b: Self) -> Self;
    fn times(self, b: Self) -> Self;
    fn larger(self, b: Self) -> Self;
    fn smaller(self, b: Self) -> Self;
}

macro_rules! reduce_floats {
    ($($t:ty),*) => {$(
        impl Reduce for $t {
            fn plus(self, b: Self) -> Self { self + b }
            fn times(self, b: Self) -> Self { self * b }
            fn larger(self, b: Self) -> Self { <$t>::max(self, b) }
            fn smaller(self, b: Self) -> Self { <$t>::min(self, b) }
        }
    )*};
}

reduce_floats!(f32, f64);

impl Reduce for i64 {
    fn plus(self, b: Self) -> Self {
        self.wrapping_add(b)
    }
    fn times(self, b: Self) -> Self {
        self.wrapping_mul(b)
    }
    fn larger(self, b: Self) -> Self {
        Ord::max(self, b)
    }
    fn smaller(self, b: Self) -> Self {
        Ord::min(self, b)
    }
}

/// `d[i] = op(d[i], x)` for the i-th value `x` of `xs`, as far as both go; the choice of `op`
/// is made once, not per element.
#[inline(always)]
fn reduce_each<T: Reduce>(d: &mut [T], xs: impl Iterator<Item = T>, op: ReduceOp) {
    fn go<T: Copy>(d: &mut [T], xs: impl Iterator<Item = T>, f: impl Fn(T, T) -> T) {
        for (d, x) in d.iter_mut().zip(xs) {
            *d = f(*d, x);
        }
    }
    match op {
        ReduceOp::Sum => go(d, xs, T::plus),
        ReduceOp::Prod => go(d, xs, T::times),
        ReduceOp::Max => go(d, xs, T::larger),
        ReduceOp::Min => go(d, xs, T::smaller),
    }
}

/// The values of one rank's input of one call ([`Buffer::input`]), element by element.
#[derive(Clone, Copy)]
struct InputValues {
    base: u64,
    reduce: ReduceOp,
}

impl InputValues {
    #[inline(always)]
    fn new(reduce: ReduceOp, seed: u64, rank: u32, iteration: u32, op_index: u32) -> Self {
        let base =
            mix(seed ^ mix(u64::from(rank) << 32 | u64::from(iteration)) ^ u64::from(op_index));
        InputValues { base, reduce }
    }

    #[inline(always)]
    fn int(&self, e: usize) -> i64 {
        let h = mix(self.base ^ (e as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        match self.reduce {
            // factors in {-3..3} \ {0}: exact in i64 (wrapping) and tame in floats
            ReduceOp::Prod => [-3, -2, -1, 1, 2, 3][(h % 6) as usize],
            _ => (h % 513) as i64 - 256,
        }
    }

    /// Floats: quarters for sums (exact in any order), small factors for products.
    #[inline(always)]
    fn float(&self, e: usize) -> f64 {
        float_of(self.int(e), self.reduce)
    }
}

impl Buffer {
    /// The data of a point-to-point message: the `order`-th (from 1) from world rank `from` to
    /// world rank `to` in group `group`, `len` elements. A pure function of its arguments, so a
    /// receiver's data can be checked against what the sender of that message sends.
    pub fn message(
        dtype: Dtype,
        len: usize,
        seed: u64,
        group: u32,
        from: u32,
        to: u32,
        order: u64,
    ) -> Buffer {
        let channel = mix(0x7032_705f_6d73_6721 ^ (u64::from(group) << 32 | u64::from(to)));
        Buffer::input(
            dtype,
            ReduceOp::Sum,
            len,
            seed ^ channel,
            from,
            (order >> 32) as u32,
            order as u32,
        )
    }
}

fn float_of(v: i64, reduce: ReduceOp) -> f64 {
    match reduce {
        ReduceOp::Prod => 1.0 + v as f64 / 16.0,
        _ => v as f64 / 4.0,
    }
}

/// SplitMix64's finalizer: a fixed, value-stable mixing function.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a, 64 bit: small, stable across platforms and releases.
#[derive(Clone, Copy, Debug)]
pub struct Fnv(u64);

impl Fnv {
    pub fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    pub fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    pub fn finish(self) -> u64 {
        self.0
    }
}

impl Default for Fnv {
    fn default() -> Self {
        Fnv::new()
    }
}

/// Below this many elements a copy is a plain loop: a chunk of a few elements is copied for
/// every message, and a call to `memcpy` costs more than the copy.
const SHORT_COPY: usize = 8;

/// `d[..] = s[..]` (same lengths).
#[inline(always)]
fn copy<T: Copy>(d: &mut [T], s: &[T]) {
    if s.len() <= SHORT_COPY {
        for (x, y) in d.iter_mut().zip(s) {
            *x = *y;
        }
    } else {
        d.copy_from_slice(s);
    }
}

/// Makes `d` a copy of `s`, keeping its allocation.
#[inline(always)]
fn assign<T: Copy>(d: &mut Vec<T>, s: &[T]) {
    d.clear();
    if s.len() <= SHORT_COPY && d.capacity() >= s.len() {
        d.extend(s.iter().copied());
    } else {
        d.extend_from_slice(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_ops() {
        let mut a = Buffer::I64(vec![1, 5, -3]);
        let b = Buffer::I64(vec![2, 2, 2]);
        assert!(a.reduce_from(0, &b, 0, 3, ReduceOp::Sum));
        assert_eq!(a, Buffer::I64(vec![3, 7, -1]));
        assert!(a.reduce_from(1, &b, 0, 2, ReduceOp::Max));
        assert_eq!(a, Buffer::I64(vec![3, 7, 2]));
        assert!(
            !a.reduce_from(2, &b, 0, 2, ReduceOp::Min),
            "out of range is refused"
        );
        assert!(!a.reduce_from(0, &Buffer::F32(vec![1.0]), 0, 1, ReduceOp::Sum));
    }

    #[test]
    fn reducing_an_input_in_equals_reducing_the_built_input() {
        for dtype in [Dtype::F32, Dtype::F64, Dtype::I64] {
            for reduce in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min] {
                for (len, n) in [(0, 0), (1, 1), (7, 7), (33, 33), (33, 20)] {
                    let acc = Buffer::input(dtype, reduce, len, 9, 0, 2, 1);
                    let mut built = acc.clone();
                    let mut fused = acc.clone();
                    for rank in 1..5 {
                        let b = Buffer::input(dtype, reduce, n, 9, rank, 2, 1);
                        assert!(built.reduce_from(0, &b, 0, n, reduce));
                        assert!(fused.reduce_input(reduce, n, 9, rank, 2, 1));
                    }
                    assert!(
                        fused.same_bits(&built),
                        "{dtype:?} {reduce:?} {len}/{n}: {fused:?} against {built:?}"
                    );
                    assert!(
                        !fused.reduce_input(reduce, len + 1, 9, 1, 2, 1),
                        "an input longer than the buffer is refused"
                    );
                    assert!(fused.same_bits(&built), "and changes nothing");
                }
            }
        }
    }

    #[test]
    fn inputs_are_deterministic_and_differ_by_rank() {
        let a = Buffer::input(Dtype::F32, ReduceOp::Sum, 8, 1, 0, 0, 0);
        assert_eq!(a, Buffer::input(Dtype::F32, ReduceOp::Sum, 8, 1, 0, 0, 0));
        assert_ne!(a, Buffer::input(Dtype::F32, ReduceOp::Sum, 8, 1, 1, 0, 0));
        assert_ne!(
            a.hash(),
            Buffer::input(Dtype::F32, ReduceOp::Sum, 8, 1, 1, 0, 0).hash()
        );
    }
}
