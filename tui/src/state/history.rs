//! Time travel over a loaded trace: the state of every rank after any prefix of the events.
//!
//! Folding from the start on every seek is O(position), and a full clone of the [`Fold`] at
//! every checkpoint is O(collectives so far) in time and memory, because its map of
//! collectives only grows. So the history keeps:
//! - every `interval` events, a checkpoint: the fold *without* its map of collectives
//!   (per-rank state, faults, counters), cloned;
//! - for each collective, its value at each checkpoint where it had changed since the
//!   previous one.
//!
//! An entry of the map only changes on events that name its (group, generation, seq) — call,
//! step, complete, abort — which is how the changes are found; the tests
//! `state_at_any_position_equals_a_fresh_fold` and `seeking_around_equals_fresh_folds` hold
//! this to account.
//!
//! [`History::fold_at`] builds the fold at any position from scratch: the checkpoint at or
//! before it, every collective's value there, then at most `interval - 1` events.
//! [`History::seek`] does the same from the fold at another position, reusing its map of
//! collectives and resetting only the entries that the events in between touched, so moving
//! around a trace with tens of thousands of collectives stays cheap.

use ringside_sim::diagnose::{Fold, OpView};

use ringside_sim::trace::{Event, Header};
use ringside_sim::units::Nanos;
use std::collections::{BTreeMap, BTreeSet};

/// The identity of a collective in [`Fold::ops`].
pub type OpKey = ringside_sim::diagnose::Slot;

/// The smallest distance between checkpoints.
pub const MIN_INTERVAL: usize = 1024;

/// Events between checkpoints for a world of `ranks`: restoring a checkpoint costs O(ranks),
/// replaying costs O(events), so the interval grows with the world to keep both in balance
/// (and the checkpoints' memory at about one rank-state per 32 events).
pub fn interval_for(ranks: usize) -> usize {
    MIN_INTERVAL.max(32 * ranks)
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
        } => Some(OpKey::collective(*group, *generation, *seq)),
        _ => None,
    }
}

/// Every key in `ops` with the (group, generation, seq) of `k`: a send's or recv's events
/// after its call name no peer, so they stand for every message of that order in the group.
fn keys_like<'a, V>(ops: &'a BTreeMap<OpKey, V>, k: &OpKey) -> impl Iterator<Item = OpKey> + 'a {
    let last = OpKey {
        pair: Some((u32::MAX, u32::MAX)),
        ..*k
    };
    ops.range(OpKey { pair: None, ..*k }..=last)
        .map(|(k, _)| *k)
}

/// Checkpoints over one trace's events.
pub struct History {
    interval: usize,
    /// The fold after `j * interval` events, its `ops` left empty.
    checkpoints: Vec<Fold>,
    /// Per collective: (checkpoint j, its value after `j * interval` events), for each
    /// checkpoint where it differs from the previous one; ascending in j.
    ops: BTreeMap<OpKey, Vec<(usize, OpView)>>,
}

/// Builds checkpoints while folding; see [`History::build`].
pub struct Builder {
    history: History,
    fold: Fold,
    /// Collectives changed since the last checkpoint.
    dirty: BTreeSet<OpKey>,
    applied: usize,
}

impl Builder {
    /// A builder for the trace with this header.
    pub fn new(header: &Header, interval: usize) -> Builder {
        let fold = Fold::of_header(header);
        let dirty = fold.ops.keys().copied().collect();
        Builder {
            history: History {
                interval: interval.max(1),
                checkpoints: Vec::new(),
                ops: BTreeMap::new(),
            },
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
        if self.applied.is_multiple_of(self.history.interval) {
            self.checkpoint();
        }
        self.fold.apply(t, ev);
        if let Some(k) = op_key(ev) {
            self.dirty.extend(keys_like(&self.fold.ops, &k));
        }
        self.applied += 1;
    }

    fn checkpoint(&mut self) {
        let j = self.history.checkpoints.len();
        let ops = std::mem::take(&mut self.fold.ops);
        self.history.checkpoints.push(self.fold.clone());
        self.fold.ops = ops;
        for k in std::mem::take(&mut self.dirty) {
            if let Some(v) = self.fold.ops.get(&k) {
                self.history.ops.entry(k).or_default().push((j, v.clone()));
            }
        }
    }

    /// The history, and the fold after every event.
    pub fn finish(mut self) -> (History, Fold) {
        if self.history.checkpoints.is_empty() {
            self.checkpoint();
        }
        (self.history, self.fold)
    }
}

impl History {
    /// Folds `events` once, keeping a checkpoint every `interval` events.
    pub fn build(header: &Header, events: &[(Nanos, Event)], interval: usize) -> History {
        let mut b = Builder::new(header, interval);
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

    /// The checkpoint at or before `pos`.
    fn checkpoint_of(&self, pos: usize) -> usize {
        (pos / self.interval).min(self.checkpoints.len() - 1)
    }

    /// A collective's value at checkpoint `j` (None: not called yet).
    fn op_at(&self, k: &OpKey, j: usize) -> Option<&OpView> {
        version_at(self.ops.get(k)?, j)
    }

    /// The fold after the first `pos` events (`pos` is clamped to the trace).
    pub fn fold_at(&self, events: &[(Nanos, Event)], pos: usize) -> Fold {
        let pos = pos.min(events.len());
        let j = self.checkpoint_of(pos);
        let mut fold = self.checkpoints[j].clone();
        // keys come in order, so the map is built in one pass
        fold.ops = self
            .ops
            .iter()
            .filter_map(|(k, versions)| version_at(versions, j).map(|v| (*k, v.clone())))
            .collect();
        replay(&mut fold, &events[j * self.interval..pos]);
        fold
    }

    /// The fold after the first `to` events, from `fold`, the fold after the first `from`.
    pub fn seek(&self, events: &[(Nanos, Event)], mut fold: Fold, from: usize, to: usize) -> Fold {
        let to = to.min(events.len());
        if to >= from && to - from < self.interval {
            replay(&mut fold, &events[from..to]);
            return fold;
        }
        let j = self.checkpoint_of(to);
        let at = j * self.interval;
        let (a, b) = (from.min(at), from.max(at));
        let touched: BTreeSet<OpKey> = events[a..b]
            .iter()
            .filter_map(|(_, e)| op_key(e))
            .flat_map(|k| {
                let now: Vec<OpKey> = keys_like(&fold.ops, &k).collect();
                now.into_iter().chain(keys_like(&self.ops, &k))
            })
            .collect();
        if touched.len() > fold.ops.len() / 2 {
            return self.fold_at(events, to);
        }
        // the map after `from` events differs from the one at the checkpoint only in what
        // the events between them touched
        let mut ops = std::mem::take(&mut fold.ops);
        for k in touched {
            match self.op_at(&k, j) {
                Some(v) => {
                    ops.insert(k, v.clone());
                }
                None => {
                    ops.remove(&k);
                }
            }
        }
        let mut fold = self.checkpoints[j].clone();
        fold.ops = ops;
        replay(&mut fold, &events[at..to]);
        fold
    }
}

/// The value at checkpoint `j` among a collective's versions.
fn version_at(versions: &[(usize, OpView)], j: usize) -> Option<&OpView> {
    let i = versions.partition_point(|(c, _)| *c <= j);
    versions[..i].last().map(|(_, v)| v)
}

fn replay(fold: &mut Fold, events: &[(Nanos, Event)]) {
    for (t, ev) in events {
        fold.apply(*t, ev);
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
        let mut f = Fold::of_header(&trace.header);
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
        let h = History::build(&t.header, &t.events, 7);
        assert!(h.checkpoints() > 10);
        assert!(
            h.ops.values().any(|v| v.len() > 1),
            "collectives change across checkpoints"
        );
        assert!(fresh(t, t.events.len()).ops.len() > 4);
    }

    proptest! {
        #[test]
        fn state_at_any_position_equals_a_fresh_fold(
            interval in 1usize..64,
            picks in proptest::collection::vec(any::<proptest::sample::Index>(), 1..8),
        ) {
            let t = trace();
            let h = History::build(&t.header, &t.events, interval);
            for p in picks {
                let pos = p.index(t.events.len() + 1);
                let got = h.fold_at(&t.events, pos);
                prop_assert!(same(&got, &fresh(t, pos)), "position {pos}, interval {interval}");
            }
        }

        #[test]
        fn seeking_around_equals_fresh_folds(
            interval in 1usize..64,
            picks in proptest::collection::vec(any::<proptest::sample::Index>(), 1..12),
        ) {
            let t = trace();
            let h = History::build(&t.header, &t.events, interval);
            let (mut fold, mut pos) = (h.fold_at(&t.events, 0), 0);
            for p in picks {
                let to = p.index(t.events.len() + 1);
                fold = h.seek(&t.events, fold, pos, to);
                pos = to;
                prop_assert!(same(&fold, &fresh(t, pos)), "position {pos}, interval {interval}");
            }
        }
    }
}
