//! Bounded buffers per peer: collective chunks for calls far ahead of this rank.
//!
//! The protocol keeps every chunk of a later call until the rank gets there (a peer may run
//! ahead). Over real sockets that is memory any peer can fill: chunks for a sequence number a
//! million calls ahead would be kept for ever. So a worker hands its process only chunks for
//! calls at most [`WINDOW`] ahead of the latest call it issued in their group (and never of a
//! later generation); the others wait in the worker, counted per sender, and go in when the
//! rank's calls catch up. A sender whose waiting chunks would pass [`MAX_HELD_BYTES`] has its
//! connection closed, with a logged error, and the chunk is dropped: an honest peer is never
//! that far ahead (it waits for this rank in any call that needs it).

use crate::proto::{Fingerprint, Generation, GroupId, Msg, SeqNo};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// How many calls ahead of this rank's latest call a chunk goes straight to the process.
pub const WINDOW: u64 = 4;

/// The most bytes of frames one sender may have waiting for this rank's calls to catch up.
pub const MAX_HELD_BYTES: usize = 16 << 20;

/// This rank's latest call per group, and the bytes held back per sender. Cloned into every
/// reader task.
#[derive(Clone, Debug)]
pub struct Ahead(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    latest: Mutex<BTreeMap<GroupId, (Generation, SeqNo)>>,
    held: Vec<AtomicUsize>,
    calls: AtomicU64,
}

impl Ahead {
    /// For a world of `nodes` senders.
    pub fn new(nodes: u32) -> Ahead {
        Ahead(Arc::new(Inner {
            latest: Mutex::new(BTreeMap::new()),
            held: (0..nodes).map(|_| AtomicUsize::new(0)).collect(),
            calls: AtomicU64::new(0),
        }))
    }

    /// This rank issued the call `fp`.
    pub fn called(&self, fp: &Fingerprint) {
        self.0.calls.fetch_add(1, Ordering::AcqRel);
        let mut latest = self.0.latest.lock().unwrap_or_else(|e| e.into_inner());
        let slot = latest.entry(fp.group).or_insert((fp.generation, SeqNo(0)));
        if (fp.generation, fp.seq) > *slot {
            *slot = (fp.generation, fp.seq);
        }
    }

    /// How many calls this rank has issued: what is ahead changes only when this does.
    pub fn calls(&self) -> u64 {
        self.0.calls.load(Ordering::Acquire)
    }

    /// Whether `msg` is a chunk for a call too far ahead to hand to the process now.
    pub fn is_ahead(&self, msg: &Msg) -> bool {
        let Msg::Coll(c) = msg else {
            return false;
        };
        let latest = self.0.latest.lock().unwrap_or_else(|e| e.into_inner());
        let (generation, seq) = latest
            .get(&c.fp.group)
            .copied()
            .unwrap_or((Generation(0), SeqNo(0)));
        c.fp.generation > generation
            || (c.fp.generation == generation && c.fp.seq.0 > seq.0.saturating_add(WINDOW))
    }

    /// Counts `bytes` more held back for `from`; refused (with the bytes already held) when
    /// that would pass [`MAX_HELD_BYTES`].
    pub fn hold(&self, from: u32, bytes: usize) -> Result<(), usize> {
        let Some(held) = self.0.held.get(from as usize) else {
            return Err(0);
        };
        held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| {
            h.checked_add(bytes).filter(|&n| n <= MAX_HELD_BYTES)
        })
        .map(|_| ())
    }

    /// `bytes` held for `from` went to the process (or away).
    pub fn release(&self, from: u32, bytes: usize) {
        if let Some(held) = self.0.held.get(from as usize) {
            let _ = held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| {
                Some(h.saturating_sub(bytes))
            });
        }
    }

    /// Bytes held back for `from` now.
    #[cfg(test)]
    fn held(&self, from: u32) -> usize {
        self.0
            .held
            .get(from as usize)
            .map_or(0, |h| h.load(Ordering::Acquire))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::vocab::{Algorithm, Dtype, OpKind, ReduceOp};
    use crate::proto::{Buffer, CollMsg};

    fn fp(group: u32, generation: u32, seq: u64) -> Fingerprint {
        Fingerprint {
            group: GroupId(group),
            generation: Generation(generation),
            seq: SeqNo(seq),
            op: OpKind::Allreduce,
            algorithm: Algorithm::Ring,
            bytes: 8,
            dtype: Dtype::F32,
            root: 0,
            reduce: ReduceOp::Sum,
            elements: 2,
        }
    }

    fn chunk(group: u32, generation: u32, seq: u64) -> Msg {
        Msg::Coll(Box::new(CollMsg {
            fp: fp(group, generation, seq),
            step: 0,
            data: Buffer::F32(vec![1.0, 2.0]),
        }))
    }

    #[test]
    fn only_chunks_past_the_window_or_of_a_later_generation_wait() {
        let a = Ahead::new(4);
        assert!(!a.is_ahead(&chunk(0, 0, WINDOW)));
        assert!(a.is_ahead(&chunk(0, 0, WINDOW + 1)));
        assert!(a.is_ahead(&chunk(0, 1, 1)));
        a.called(&fp(0, 0, 10));
        assert!(!a.is_ahead(&chunk(0, 0, 10 + WINDOW)));
        assert!(a.is_ahead(&chunk(0, 0, 11 + WINDOW)));
        // another group counts its own calls
        assert!(a.is_ahead(&chunk(1, 0, 10)));
        a.called(&fp(0, 1, 1));
        assert!(!a.is_ahead(&chunk(0, 1, 2)));
        assert!(!a.is_ahead(&chunk(0, 0, u64::MAX)));
    }

    #[test]
    fn held_bytes_are_capped_per_sender() {
        let a = Ahead::new(3);
        assert_eq!(a.hold(1, MAX_HELD_BYTES - 10), Ok(()));
        assert_eq!(a.hold(1, 11), Err(MAX_HELD_BYTES - 10));
        assert_eq!(a.hold(2, 11), Ok(()));
        a.release(1, 100);
        assert_eq!(a.held(1), MAX_HELD_BYTES - 110);
        assert_eq!(a.hold(1, 110), Ok(()));
        assert_eq!(a.hold(3, 1), Err(0));
        assert_eq!(a.hold(0, usize::MAX), Err(0));
    }
}
