//! Time travel over a loaded trace: the state of every rank after any prefix of the events.
//!
//! Folding from the start on every seek is O(position); a full clone of the [`Fold`] at every
//! checkpoint is O(collectives so far) in time and memory, because its map of collectives only
//! grows. So a checkpoint keeps two parts:
//! - the fold *without* its map of collectives (per-rank state, faults, counters), cloned;
//! - the collectives whose entry changed since the previous checkpoint, with their value at the
//!   checkpoint. The map at checkpoint `j` is the union of these deltas over `0..=j`, newest
//!   value first.
//!
//! An entry of the map only changes on events that name its (group, generation, seq) — call,
//! step, complete, abort — which is how the deltas are found. The test
//! `state_at_any_position_equals_a_fresh_fold` holds this to account.
//!
//! Seeking to position `p` restores the checkpoint at or before `p` and applies at most
//! `interval - 1` events.

use ringside_sim::diagnose::{Fold, OpView};
use ringside_sim::proto::{Generation, GroupId, SeqNo};
use ringside_sim::scenario::Scenario;
use ringside_sim::trace::Event;
use ringside_sim::units::Nanos;
use std::collections::{BTreeMap, BTreeSet};

/// The identity of a collective in [`Fold::ops`].
pub type OpKey = (GroupId, Generation, SeqNo);

/// The smallest distance between checkpoints.
pub const MIN_INTERVAL: usize = 1024;

/// Events between checkpoints for a world of `ranks`: restoring a checkpoint costs O(ranks),
/// replaying costs O(events), so the interval grows with the world to keep both in balance
/// (and the checkpoints' memory at a few rank-states per 32 events).
pub fn interval_for(ranks: usize) -> usize {
    MIN_INTERVAL.max(32 * ranks)
}

struct Checkpoint {
    /// The fold after this many events, its `ops` left empty.
    fold: Fold,
    /// Collectives changed since the previous checkpoint, valued as of this one.
    ops: Vec<(OpKey, OpView)>,
}

/// Checkpoints over one trace's events.
pub struct History {
    interval: usize,
    checkpoints: Vec<Checkpoint>,
}

/// The collective an event updates in [`Fold::ops`], if any.
pub fn op_key(ev: &Event) -> Option<OpKey> {
    match ev {
        Event::Call {
            group,
            generation,
            seq,
            ..
        }
        | Event::Step {
            group,
            generation,
            seq,
            ..
        }
        | Event::Complete {
            group,
            generation,
            seq,
            ..
        }
        | Event::Abort {
            group,
            generation,
            seq,
            ..
        } => Some((*group, *generation, *seq)),
        _ => None,
    }
}

/// Builds checkpoints while folding; see [`History::build`].
pub struct Builder {
    interval: usize,
    checkpoints: Vec<Checkpoint>,
    fold: Fold,
    /// Collectives changed since the last checkpoint.
    dirty: BTreeSet<OpKey>,
    applied: usize,
}

impl Builder {
    pub fn new(scenario: &Scenario, interval: usize) -> Builder {
        let fold = Fold::new(scenario);
        let dirty = fold.ops.keys().copied().collect();
        Builder {
            interval: interval.max(1),
            checkpoints: Vec::new(),
            fold,
            dirty,
            applied: 0,
        }
    }

    /// The fold after the events pushed so far.
    pub fn fold(&self) -> &Fold {
        &self.fold
    }

    /// Applies the next event, taking a checkpoint first when one is due.
    pub fn push(&mut self, t: Nanos, ev: &Event) {
        if self.applied.is_multiple_of(self.interval) {
            self.checkpoint();
        }
        self.fold.apply(t, ev);
        if let Some(k) = op_key(ev) {
            self.dirty.insert(k);
        }
        self.applied += 1;
    }

    fn checkpoint(&mut self) {
        let ops = std::mem::take(&mut self.fold.ops);
        let fold = self.fold.clone();
        self.fold.ops = ops;
        let changed = std::mem::take(&mut self.dirty)
            .into_iter()
            .filter_map(|k| self.fold.ops.get(&k).map(|v| (k, v.clone())))
            .collect();
        self.checkpoints.push(Checkpoint { fold, ops: changed });
    }

    /// The history, and the fold after every event.
    pub fn finish(mut self) -> (History, Fold) {
        if self.checkpoints.is_empty() {
            self.checkpoint();
        }
        (
            History {
                interval: self.interval,
                checkpoints: self.checkpoints,
            },
            self.fold,
        )
    }
}

impl History {
    /// Folds `events` once, keeping a checkpoint every `interval` events.
    pub fn build(scenario: &Scenario, events: &[(Nanos, Event)], interval: usize) -> History {
        let mut b = Builder::new(scenario, interval);
        for (t, ev) in events {
            b.push(*t, ev);
        }
        b.finish().0
    }

    pub fn interval(&self) -> usize {
        self.interval
    }

    pub fn checkpoints(&self) -> usize {
        self.checkpoints.len()
    }

    /// The fold of the checkpoint at or before `pos` and the position it stands at.
    fn restore(&self, pos: usize) -> (Fold, usize) {
        let j = (pos / self.interval).min(self.checkpoints.len() - 1);
        let mut fold = self.checkpoints[j].fold.clone();
        let mut ops: BTreeMap<OpKey, OpView> = BTreeMap::new();
        for cp in self.checkpoints[..=j].iter().rev() {
            for (k, v) in &cp.ops {
                ops.entry(*k).or_insert_with(|| v.clone());
            }
        }
        fold.ops = ops;
        (fold, j * self.interval)
    }

    /// The fold after the first `pos` events (`pos` is clamped to the trace).
    pub fn fold_at(&self, events: &[(Nanos, Event)], pos: usize) -> Fold {
        let pos = pos.min(events.len());
        let (mut fold, at) = self.restore(pos);
        for (t, ev) in &events[at..pos] {
            fold.apply(*t, ev);
        }
        fold
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::record;
    use proptest::prelude::*;
    use ringside_sim::scenario;
    use ringside_sim::trace::Trace;
    use std::sync::OnceLock;

    /// Folds have no `PartialEq`; their debug form shows every field.
    fn same(a: &Fold, b: &Fold) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    fn fresh(trace: &Trace, pos: usize) -> Fold {
        let mut f = Fold::new(&trace.header.scenario);
        for (t, ev) in &trace.events[..pos] {
            f.apply(*t, ev);
        }
        f
    }

    /// A preempted rank, a partition that heals, a pause: many kinds of events and state.
    fn trace() -> &'static Trace {
        static T: OnceLock<Trace> = OnceLock::new();
        T.get_or_init(|| {
            let s = scenario::parse(
                r#"
name = "fold-mix"
seed = 3
[world]
size = 4
[network]
latency = "5us"
bandwidth = "25GB/s"
[group]
timeout = "50ms"
[workload]
iterations = 4
compute = "1ms"
elements = 8
[[workload.ops]]
op = "allreduce"
bytes = "4MiB"
[[workload.ops]]
op = "barrier"
[[faults]]
kind = "pause"
rank = 1
at = "1500us"
duration = "2ms"
[[faults]]
kind = "partition"
sides = [[0, 1], [2, 3]]
at = "4ms"
duration = "1ms"
[[faults]]
kind = "preempt"
rank = 3
at = "9ms"
"#,
                "fold-mix",
            )
            .expect("valid scenario");
            record(&s, s.seed).expect("the run records a trace")
        })
    }

    #[test]
    fn the_mixed_trace_has_checkpoints_and_collectives() {
        let t = trace();
        assert!(t.events.len() > 100, "{} events", t.events.len());
        let h = History::build(&t.header.scenario, &t.events, 7);
        assert!(h.checkpoints() > 10);
        assert!(fresh(t, t.events.len()).ops.len() > 4);
    }

    proptest! {
        #[test]
        fn state_at_any_position_equals_a_fresh_fold(
            interval in 1usize..64,
            picks in proptest::collection::vec(any::<proptest::sample::Index>(), 1..8),
        ) {
            let t = trace();
            let h = History::build(&t.header.scenario, &t.events, interval);
            for p in picks {
                let pos = p.index(t.events.len() + 1);
                let got = h.fold_at(&t.events, pos);
                prop_assert!(same(&got, &fresh(t, pos)), "position {pos}, interval {interval}");
            }
        }
    }
}
