//! The event queue: ordered by (time, key), where key is the insertion sequence number or, when
//! the scenario asks for a shuffled tie-break, a seeded random key.

use crate::units::Nanos;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    t: Nanos,
    key: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.t == other.t && self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse for earliest first
        (other.t, other.key).cmp(&(self.t, self.key))
    }
}

pub struct Queue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
}

impl<E> Default for Queue<E> {
    fn default() -> Self {
        Queue {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }
}

impl<E> Queue<E> {
    /// Inserts `ev` at `t`; `shuffle_key` replaces the insertion order among equal times.
    pub fn push(&mut self, t: Nanos, ev: E, shuffle_key: Option<u64>) {
        self.seq += 1;
        // the insertion seq stays in the low bits so shuffled keys never collide
        let key = match shuffle_key {
            Some(k) => (k << 24) | (self.seq & 0xFF_FFFF),
            None => self.seq,
        };
        self.heap.push(Entry { t, key, ev });
    }

    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        self.heap.pop().map(|e| (e.t, e.ev))
    }

    pub fn peek_time(&self) -> Option<Nanos> {
        self.heap.peek().map(|e| e.t)
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
        assert_eq!(q.pop(), Some((5, "c")));
        assert_eq!(q.pop(), None);
    }
}
