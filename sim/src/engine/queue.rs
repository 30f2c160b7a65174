//! The event queue: ordered by (time, key), where key is the insertion sequence number or, when
//! the scenario asks for a shuffled tie-break, a seeded random key.
//!
//! With insertion-order ties, keys only grow (time never goes back and the sequence number
//! increases), so a radix heap orders them in amortized O(1); it holds the events themselves,
//! so that popping a round of events due together reads memory in order. A shuffled tie-break
//! can insert below the last key popped, so it uses a binary heap of small `(time, key, slot)`
//! entries over a slab of events.

use crate::proto::data::mix;
use crate::units::Nanos;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

/// The tie-break key of the planted bug `Mutation::NondeterministicTies`: it depends on how
/// many keys this process has drawn before, hidden global state of exactly the kind that makes
/// a simulator nondeterministic.
pub(super) fn unstable_key() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    mix(NEXT.fetch_add(1, Ordering::Relaxed))
}

/// An event in the radix heap, with its time.
type Entry<E> = (u64, E);

/// A monotone priority queue over times (Ahuja, Mehlhorn, Orlin & Tarjan's radix heap):
/// bucket i >= 1 holds times whose highest bit differing from the last popped time is bit i-1;
/// `now` holds events at exactly the last popped time, first in first out.
/// Equal times keep their insertion order through every move, which is the engine's tie-break.
struct RadixHeap<E> {
    last: u64,
    now: VecDeque<Entry<E>>,
    buckets: Vec<Vec<Entry<E>>>,
    /// Bit i - 1 set when bucket i (1..=64) is non-empty (one machine word: a shift of a
    /// 128-bit mask at every push cost several instructions).
    nonempty: u64,
    len: usize,
}

impl<E> RadixHeap<E> {
    fn new() -> RadixHeap<E> {
        RadixHeap {
            last: 0,
            now: VecDeque::new(),
            buckets: (0..65).map(|_| Vec::new()).collect(),
            nonempty: 0,
            len: 0,
        }
    }

    #[inline]
    fn bucket(&self, t: u64) -> usize {
        (64 - (t ^ self.last).leading_zeros()) as usize
    }

    /// Inserts the event `ev` builds at `t`, building it only once its place is known, so that
    /// it is written there directly instead of being built aside and copied (an event is
    /// written for every message, and reading a copy back while its stores are in flight
    /// stalls the processor).
    #[inline(always)]
    fn push_with(&mut self, t: u64, ev: impl FnOnce() -> E) {
        debug_assert!(
            t >= self.last,
            "radix heap times must not go below the last popped"
        );
        let b = self.bucket(t);
        self.len += 1;
        if b == 0 {
            self.now.push_back((t, ev()));
        } else {
            self.nonempty |= 1 << (b - 1);
            let bucket = &mut self.buckets[b];
            bucket.reserve(1);
            let len = bucket.len();
            bucket.spare_capacity_mut()[0].write((t, ev()));
            // SAFETY: the element at `len`, within capacity, was just written
            unsafe { bucket.set_len(len + 1) };
        }
    }

    /// Moves the earliest non-empty bucket into `now` once `now` is used up.
    #[inline]
    fn refill(&mut self) {
        if !self.now.is_empty() || self.nonempty == 0 {
            return;
        }
        self.refill_from_bucket();
    }

    fn refill_from_bucket(&mut self) {
        let i = self.nonempty.trailing_zeros() as usize + 1;
        let mut items = std::mem::take(&mut self.buckets[i]);
        self.nonempty &= !(1 << (i - 1));
        let first = items.first().map_or(self.last, |e| e.0);
        let (mut min, mut same) = (first, true);
        for e in &items {
            min = min.min(e.0);
            same &= e.0 == first;
        }
        self.last = min;
        if same {
            // every entry is due at once (a round of a collective, say): the bucket becomes
            // `now` as it is, and `now`'s emptied buffer serves the bucket next (both
            // conversions keep the allocation and move nothing)
            let spent = std::mem::replace(&mut self.now, VecDeque::from(items));
            self.buckets[i] = Vec::from(spent);
            return;
        }
        for (t, ev) in items.drain(..) {
            let b = self.bucket(t);
            if b == 0 {
                self.now.push_back((t, ev));
            } else {
                self.buckets[b].push((t, ev));
                self.nonempty |= 1 << (b - 1);
            }
        }
        // keep the emptied vector's capacity for reuse
        if self.buckets[i].is_empty() {
            self.buckets[i] = items;
        }
    }

    #[inline(always)]
    fn peek(&mut self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        self.refill();
        Some(self.last)
    }

    /// The `k`-th event from the front of `now` (0: the next one).
    #[inline(always)]
    fn ahead(&self, k: usize) -> Option<&E> {
        self.now.get(k).map(|(_, e)| e)
    }

    /// Pops the event [`RadixHeap::peek`] just found (the heap is refilled and not empty).
    #[inline(always)]
    fn pop_peeked(&mut self) -> Option<(u64, E)> {
        let entry = self.now.pop_front()?;
        self.len -= 1;
        Some(entry)
    }
}

pub struct Queue<E> {
    radix: RadixHeap<E>,
    heap: BinaryHeap<Reverse<(Nanos, u64, u32)>>,
    /// Events of the binary heap.
    slab: Vec<Option<E>>,
    free: Vec<u32>,
    seq: u64,
}

impl<E> Default for Queue<E> {
    fn default() -> Self {
        Queue {
            radix: RadixHeap::new(),
            heap: BinaryHeap::new(),
            slab: Vec::new(),
            free: Vec::new(),
            seq: 0,
        }
    }
}

impl<E> Queue<E> {
    /// Inserts `ev` at `t`; `shuffle_key` replaces the insertion order among equal times.
    #[cfg(test)]
    pub fn push(&mut self, t: Nanos, ev: E, shuffle_key: Option<u64>) {
        self.push_with(t, shuffle_key, || ev);
    }

    /// Inserts the event `ev` builds at `t`, built where it is stored when it can be;
    /// `shuffle_key` replaces the insertion order among equal times.
    #[inline(always)]
    pub fn push_with(&mut self, t: Nanos, shuffle_key: Option<u64>, ev: impl FnOnce() -> E) {
        self.seq += 1;
        let Some(k) = shuffle_key else {
            self.radix.push_with(t, ev);
            return;
        };
        let ev = ev();
        // the insertion seq stays in the low bits so shuffled keys never collide
        let key = (k << 24) | (self.seq & 0xFF_FFFF);
        let slot = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(ev);
                i
            }
            None => {
                self.slab.push(Some(ev));
                (self.slab.len() - 1) as u32
            }
        };
        self.heap.push(Reverse((t, key, slot)));
    }

    /// The earliest event.
    #[cfg(test)]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        self.peek_time()?;
        self.pop_peeked()
    }

    /// Whether an event due at `t`, the time of the last one popped, is still queued: told
    /// without moving the queue on, so that events may still be pushed at `t` afterwards (a
    /// peek may move the radix heap past `t`, below which nothing can be pushed).
    pub fn due_at(&self, t: Nanos) -> bool {
        let heap = self.heap.peek().is_some_and(|Reverse((h, _, _))| *h == t);
        heap || (self.radix.last == t && !self.radix.now.is_empty())
    }

    /// The earliest time of an event that `ignore` does not pass over, by a scan of the whole
    /// queue (for rare decisions only).
    pub fn earliest_but(&self, ignore: impl Fn(&E) -> bool) -> Option<Nanos> {
        let radix = self
            .radix
            .now
            .iter()
            .chain(self.radix.buckets.iter().flatten())
            .filter(|(_, e)| !ignore(e))
            .map(|(t, _)| *t);
        let heap = self.heap.iter().filter_map(|Reverse((t, _, slot))| {
            let e = self.slab[*slot as usize].as_ref()?;
            (!ignore(e)).then_some(*t)
        });
        radix.chain(heap).min()
    }

    /// Events in the queue.
    pub fn len(&self) -> usize {
        self.radix.len + self.heap.len()
    }

    /// Pops the earliest event right after [`Queue::peek_time`] found one, without looking
    /// again for where it lies.
    #[inline(always)]
    pub fn pop_peeked(&mut self) -> Option<(Nanos, E)> {
        if self.heap.is_empty() {
            return self.radix.pop_peeked();
        }
        self.pop_heap()
    }

    /// The event that pops `k + 1` pops from now (0: the next one), when it is due at the same
    /// time as the next one and so known without a search: what memory the coming events
    /// will touch. None otherwise, and always with a shuffled tie-break.
    #[inline(always)]
    pub fn ahead(&self, k: usize) -> Option<&E> {
        if !self.heap.is_empty() {
            return None;
        }
        self.radix.ahead(k)
    }

    /// Pops the earliest event of the binary heap (shuffled ties).
    fn pop_heap(&mut self) -> Option<(Nanos, E)> {
        let Reverse((t, _, slot)) = self.heap.pop()?;
        self.free.push(slot);
        self.slab[slot as usize].take().map(|e| (t, e))
    }

    #[inline(always)]
    pub fn peek_time(&mut self) -> Option<Nanos> {
        match self.heap.peek() {
            Some(Reverse((t, _, _))) => Some(*t),
            None => self.radix.peek(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_then_insertion_order() {
        let mut q = Queue::default();
        q.push(5, "b", None);
        q.push(3, "a", None);
        q.push(5, "c", None);
        assert_eq!(q.pop(), Some((3, "a")));
        assert_eq!(q.pop(), Some((5, "b")));
        q.push(5, "d", None);
        assert_eq!(q.pop(), Some((5, "c")));
        assert_eq!(q.pop(), Some((5, "d")));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn due_at_tells_without_moving_on_so_the_same_time_can_still_be_pushed() {
        let mut q = Queue::default();
        for (i, t) in [4u64, 4, 9].into_iter().enumerate() {
            q.push(t, i, None);
        }
        assert_eq!(q.pop(), Some((4, 0)));
        assert!(q.due_at(4));
        assert_eq!(q.pop(), Some((4, 1)));
        assert!(!q.due_at(4));
        // nothing moved past 4: an event pushed at 4 still comes before the one at 9
        q.push(4, 3, None);
        assert_eq!(q.pop(), Some((4, 3)));
        assert_eq!(q.pop(), Some((9, 2)));
    }

    #[test]
    fn what_lies_ahead_is_what_pops_next_at_the_same_time() {
        let mut q = Queue::default();
        for (i, t) in [4u64, 4, 4, 4, 9, 4].into_iter().enumerate() {
            q.push(t, i, None);
        }
        q.peek_time();
        assert_eq!(q.pop_peeked(), Some((4, 0)));
        // due at 4 from the next one on: 1, 2, 3, 5; the event at 9 is not looked for
        assert_eq!(
            (0..4).map(|k| q.ahead(k).copied()).collect::<Vec<_>>(),
            [Some(1), Some(2), Some(3), Some(5)]
        );
        assert_eq!(q.ahead(4), None);
        // with a shuffled tie-break nothing is told (the binary heap has no cheap order)
        let mut q = Queue::default();
        for i in 0..4u64 {
            q.push(4, i, Some(i));
        }
        assert_eq!(q.ahead(0), None);
    }

    #[test]
    fn popping_what_was_peeked_keeps_the_order() {
        for shuffled in [false, true] {
            let mut q = Queue::default();
            let key = |k: u64| shuffled.then_some(k);
            for (i, t) in [9u64, 3, 3, 70_000, 5, 1 << 40, 3].into_iter().enumerate() {
                q.push(t, (t, i), key(i as u64));
            }
            let mut popped = Vec::new();
            while let Some(t) = q.peek_time() {
                let (at, e) = q.pop_peeked().expect("peeked");
                assert_eq!((at, e.0), (t, t));
                popped.push(e);
                if e.1 == 2 {
                    q.push(t, (t, 7), key(7));
                }
            }
            let mut sorted = popped.clone();
            sorted.sort();
            assert_eq!(popped.len(), 8);
            if !shuffled {
                assert_eq!(popped, sorted, "time order, then insertion order");
            }
            assert!(popped.windows(2).all(|w| w[0].0 <= w[1].0));
        }
    }

    #[test]
    fn radix_order_matches_a_sort() {
        let mut q = Queue::default();
        let mut rng = super::super::Rng::new(3);
        let mut now = 0;
        let mut popped = Vec::new();
        let mut pushed = 0u64;
        for round in 0..2000u64 {
            for _ in 0..(round % 3) {
                let t = now + rng.up_to(1000);
                q.push(t, (t, pushed), None);
                pushed += 1;
            }
            if let Some((t, e)) = q.pop() {
                assert_eq!(t, e.0);
                assert!(t >= now);
                now = t;
                popped.push(e);
            }
        }
        while let Some((_, e)) = q.pop() {
            popped.push(e);
        }
        assert_eq!(popped.len() as u64, pushed);
        let mut sorted = popped.clone();
        sorted.sort();
        assert_eq!(popped, sorted, "time order, then insertion order");
    }
}
