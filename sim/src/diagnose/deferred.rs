//! The fold of a run as the run goes: the steps and sends of each rank kept aside in a small
//! record of that rank's, and written into the [`Fold`] only before anything else is folded
//! or read.
//!
//! Folded one by one, every message of a run writes the step into its rank's call and marks
//! what its sender sent in the receiver's list: with thousands of ranks those are cold cache
//! lines at every message. Kept aside, the
//! steps and sends of one rank touch one record, and the fold gets their net effect once, at
//! the next other event or at the end of the run.
//!
//! The net effect is exactly what folding each event gives:
//! - a step overwrites what the step before it wrote (the time it stopped waiting, the step,
//!   whom it waits for), so the last one is all that is left of a run of steps;
//! - a mark only grows (the latest chunk of a sender and group, by (generation, seq, step)),
//!   and the receiver's list is a set, so marks can be applied late and merged;
//! - neither reads what the other writes, and what they do read — the rank's call: its seq,
//!   group, generation and peer, copied into the record on first use — changes only through
//!   other events, before which every record is written back.
//!
//! When the run has a fault in force (a straggler is charged for each wait as it ends, in
//! order), or a step waits for many ranks, the step is folded as it comes.

use super::fold::{marked_by, Fold, Marked};
use crate::proto::{Generation, GroupId, StepEvent};
use crate::trace::Sent;
use crate::units::Nanos;

/// A step's wait list that a record holds; a longer one is folded as it comes.
const WAITS_KEPT: usize = 2;

/// What a record knows of its rank's call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Call {
    /// Nothing yet: the record is not in use.
    #[default]
    Unknown,
    /// The rank has no call in the fold.
    None,
    /// The rank runs several calls at once: its steps and sends are folded as they come.
    Several,
    Known {
        seq: u64,
        group: GroupId,
        generation: Generation,
        peer: Option<u32>,
    },
}

/// The latest step of a call, not yet written into it.
#[derive(Clone, Copy, Debug, Default)]
struct Entered {
    step: u32,
    steps: u32,
    /// When it began waiting (the step's time).
    since: Nanos,
    waits: [u32; WAITS_KEPT],
    n: u8,
}

/// One rank's steps and sends since the fold last got them.
#[derive(Clone, Copy, Debug, Default)]
struct Record {
    call: Call,
    /// The time of the latest step (every step ends the wait of the one before).
    stepped: Option<Nanos>,
    /// The latest step of the call itself.
    entered: Option<Entered>,
    /// The latest message the rank sent to one receiver (one group), not yet marked.
    mark: Option<Marked>,
}

/// The records of every rank, and which are in use.
#[derive(Debug, Default)]
pub struct Deferred {
    records: Vec<Record>,
    /// Ranks whose record is in use, to write back.
    used: Vec<u32>,
}

impl Deferred {
    pub fn new(ranks: u32) -> Deferred {
        Deferred {
            records: vec![Record::default(); ranks as usize],
            used: Vec::new(),
        }
    }

    /// Brings `rank`'s record into the cache (a hint: nothing changes).
    #[inline(always)]
    pub fn prefetch(&self, rank: u32) {
        if let Some(r) = self.records.get(rank as usize) {
            crate::hint::prefetch(r);
        }
    }

    /// `rank`'s record, in use from now on, with its call copied from the fold.
    #[inline(always)]
    fn record(&mut self, fold: &Fold, rank: u32) -> Option<&mut Record> {
        let r = self.records.get_mut(rank as usize)?;
        if r.call == Call::Unknown {
            r.call = match fold.ranks.get(rank as usize).and_then(|v| v.call.as_ref()) {
                Some(_) if fold.has_beside(rank) => Call::Several,
                Some(c) => Call::Known {
                    seq: c.seq.0,
                    group: c.group,
                    generation: c.generation,
                    peer: c.peer,
                },
                None => Call::None,
            };
            self.used.push(rank);
        }
        Some(r)
    }

    /// Folds the `send` event of `s` (as [`Fold::sent`]).
    #[inline(always)]
    pub fn sent(&mut self, fold: &mut Fold, t: Nanos, s: &Sent) {
        fold.count_sent(t);
        let Some((seq, p2p, step)) = marked_by(s) else {
            return;
        };
        let Some(r) = self.record(fold, s.from) else {
            return;
        };
        if r.call == Call::Several {
            return fold.mark_sent_beside(s);
        }
        // a chunk belongs to the sender's running call (an acknowledgement, to the recv
        // that took the message), as `Fold::mark_sent` finds it
        let (group, generation) = match r.call {
            Call::Known {
                seq: call,
                group,
                generation,
                peer,
            } if call == seq && (p2p.is_none() || peer == Some(s.to)) => (group, generation),
            _ => (GroupId(0), Generation(0)),
        };
        let mark = Marked {
            to: s.to,
            group,
            p2p,
            generation,
            seq,
            step,
        };
        match &mut r.mark {
            Some(m) if m.to == mark.to && m.group == group && m.p2p == p2p => {
                if (generation, seq, step) > (m.generation, m.seq, m.step) {
                    (m.generation, m.seq, m.step) = (generation, seq, step);
                }
            }
            slot => {
                if let Some(old) = slot.replace(mark) {
                    apply_mark(fold, s.from, old);
                }
            }
        }
    }

    /// Folds the `step` event of `rank`'s step `s` (as [`Fold::stepped`]).
    #[inline(always)]
    pub fn stepped(&mut self, fold: &mut Fold, t: Nanos, rank: u32, s: &StepEvent) {
        if !fold.faults.is_empty() || s.waiting_for.len() > WAITS_KEPT {
            // a pending step of this rank goes in first
            if let Some(r) = self.records.get_mut(rank as usize) {
                write_step(fold, rank, r);
            }
            return fold.stepped(t, rank, s);
        }
        let several = self
            .record(fold, rank)
            .is_some_and(|r| r.call == Call::Several);
        if several {
            return fold.stepped(t, rank, s);
        }
        fold.count_step(t);
        let Some(r) = self.record(fold, rank) else {
            return;
        };
        let Call::Known { seq, .. } = r.call else {
            return; // no call to step in
        };
        r.stepped = Some(t);
        if s.seq.0 == seq {
            let mut e = Entered {
                step: s.step,
                steps: s.steps,
                since: t,
                waits: [0; WAITS_KEPT],
                n: s.waiting_for.len() as u8,
            };
            for (w, r) in e.waits.iter_mut().zip(&s.waiting_for) {
                *w = r.0;
            }
            r.entered = Some(e);
        }
    }

    /// Writes every record in use into the fold, which is then as if it had folded each event.
    pub fn write_back(&mut self, fold: &mut Fold) {
        let Deferred { records, used } = self;
        for rank in used.drain(..) {
            let r = &mut records[rank as usize];
            write_step(fold, rank, r);
            if let Some(m) = r.mark.take() {
                apply_mark(fold, rank, m);
            }
            *r = Record::default();
        }
    }
}

/// Writes the pending step of `rank`'s record into its call.
#[inline]
fn write_step(fold: &mut Fold, rank: u32, r: &mut Record) {
    let Some(t) = r.stepped.take() else {
        return;
    };
    let entered = r.entered.take();
    if let Some(c) = fold.call_mut(rank) {
        c.charged_ns = t;
        if let Some(e) = entered {
            c.step = e.step;
            c.steps = e.steps;
            c.since_ns = e.since;
            c.waiting_for.clear();
            c.waiting_for
                .extend_from_slice(&e.waits[..usize::from(e.n)]);
        }
    }
}

fn apply_mark(fold: &mut Fold, from: u32, m: Marked) {
    fold.mark(from, &m);
}
