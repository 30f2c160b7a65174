//! Points of interest on the timeline, found in one pass over the events.
//!
//! Positions are counts of applied events: a marker at `p` shows the state right after the
//! event `p - 1` that it names.

use ringside_sim::diagnose::{diagnose, Fold};
use ringside_sim::scenario::Fault;
use ringside_sim::trace::{Event, FaultPhase};
use std::collections::BTreeMap;

/// What a marker stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MarkerKind {
    /// A scenario fault begins; for an application bug, the offending call (see [`AppBug`]).
    Fault,
    /// A collective watchdog fires.
    Watchdog,
    /// The first collective of a new generation.
    Generation,
    /// The first position where the diagnosis names a root cause (or, when none ever does,
    /// where the first watchdog fires).
    Stall,
}

impl MarkerKind {
    /// The glyph drawn on the timeline.
    pub fn glyph(self) -> char {
        match self {
            MarkerKind::Fault => 'F',
            MarkerKind::Watchdog => 'W',
            MarkerKind::Generation => 'G',
            MarkerKind::Stall => 'S',
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            MarkerKind::Fault => "fault",
            MarkerKind::Watchdog => "watchdog",
            MarkerKind::Generation => "generation",
            MarkerKind::Stall => "first stall",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Marker {
    pub pos: usize,
    pub kind: MarkerKind,
}

/// Collects markers while the events are folded once.
pub struct MarkerScan {
    markers: Vec<Marker>,
    /// The scenario's application bugs, each looking for its offending call.
    bugs: Vec<AppBug>,
    notes: BTreeMap<usize, String>,
    max_generation: u32,
    /// Diagnose every `dense` events while a fault is active and no stall was found yet,
    /// every `sparse` events otherwise.
    dense: usize,
    sparse: usize,
    last_sample: usize,
    /// The last sampled position without a root cause, and the first with one.
    clean: usize,
    stalled: Option<usize>,
    /// Sampled stretches with a root cause, as position ranges (for the timeline).
    stall_ranges: Vec<(usize, usize)>,
}

impl MarkerScan {
    pub fn new(faults: &[Fault], ranks: usize) -> MarkerScan {
        let bugs = faults.iter().filter_map(AppBug::of).collect();
        // A diagnosis costs O(ranks). Root causes come from faults, and a stall may span only
        // a few events (nothing happens while everyone waits), so while a fault is active
        // every event is looked at in small worlds; otherwise (and after the first stall) a
        // sample every 2 x ranks events is enough: what is left to find are stalls that stay,
        // like application bugs. The first stall is then pinned down between samples.
        let dense = (ranks / 32).max(1);
        let sparse = (2 * ranks).max(64);
        MarkerScan {
            markers: Vec::new(),
            bugs,
            notes: BTreeMap::new(),
            max_generation: 0,
            dense,
            sparse,
            last_sample: 0,
            clean: 0,
            stalled: None,
            stall_ranges: Vec::new(),
        }
    }

    /// Looks at event `i`; `fold` is the state after it.
    pub fn scan(&mut self, i: usize, ev: &Event, fold: &Fold) {
        let pos = i + 1;
        match ev {
            Event::Fault {
                phase: FaultPhase::Begin,
                ..
            } => self.push(pos, MarkerKind::Fault),
            Event::Timer { timer, .. } if timer == "watchdog" => {
                self.push(pos, MarkerKind::Watchdog)
            }
            Event::GenerationFormed { generation, .. } if generation.0 > self.max_generation => {
                self.max_generation = generation.0;
                self.push(pos, MarkerKind::Generation);
            }
            _ => {}
        }
        for bug in &mut self.bugs {
            if let Some(note) = bug.scan(pos, ev) {
                self.markers.push(Marker {
                    pos,
                    kind: MarkerKind::Fault,
                });
                self.notes.insert(pos, note);
            }
        }
        let every = if self.stalled.is_none() && fold.active_faults().next().is_some() {
            self.dense
        } else {
            self.sparse
        };
        if pos - self.last_sample >= every {
            self.sample_at(pos, fold);
        }
    }

    fn sample_at(&mut self, pos: usize, fold: &Fold) {
        let stalled = !diagnose(fold).causes.is_empty();
        if stalled {
            if self.stalled.is_none() {
                self.stalled = Some(pos);
            }
            match self.stall_ranges.last_mut() {
                Some(r) if r.1 == self.last_sample => r.1 = pos,
                _ => self.stall_ranges.push((pos, pos)),
            }
        } else if self.stalled.is_none() {
            self.clean = pos;
        }
        self.last_sample = pos;
    }

    fn push(&mut self, pos: usize, kind: MarkerKind) {
        self.markers.push(Marker { pos, kind });
    }

    /// Finishes with the state after the last event; `refine(lo, hi)` returns the first
    /// position in `(lo, hi]` whose diagnosis names a root cause, knowing that the one at
    /// `lo` names none and the one at `hi` does.
    pub fn finish(
        mut self,
        end: usize,
        final_fold: &Fold,
        refine: impl FnOnce(usize, usize) -> Option<usize>,
    ) -> Markers {
        if self.last_sample < end {
            self.sample_at(end, final_fold);
        }
        // a stall no diagnosis explains still shows when the first watchdog fires
        let first_watchdog = self
            .markers
            .iter()
            .find(|m| m.kind == MarkerKind::Watchdog)
            .map(|m| m.pos);
        let first_stall = self
            .stalled
            .and_then(|hi| refine(self.clean, hi).or(Some(hi)))
            .or(first_watchdog);
        if let Some(p) = first_stall {
            self.push(p, MarkerKind::Stall);
            // the first stalled stretch starts where the stall does, not at its first sample
            if let Some(r) = self.stall_ranges.iter_mut().find(|r| r.0 >= p) {
                r.0 = r.0.min(p);
            }
        }
        for (pos, note) in self
            .bugs
            .iter()
            .filter_map(AppBug::finish)
            .collect::<Vec<_>>()
        {
            self.push(pos, MarkerKind::Fault);
            self.notes.insert(pos, note);
        }
        self.markers.sort();
        Markers {
            markers: self.markers,
            first_stall,
            stall_ranges: self.stall_ranges,
            notes: self.notes,
        }
    }
}

/// An application bug of the scenario, and where the trace shows it. The engine records the
/// calls as issued, so the offending one is found from the fault and the call events:
/// - mismatch: the rank's call at (iteration, op index);
/// - skip: the call the rank issued in place of the skipped one (or its end of workload);
/// - hang: the rank's last call before the iteration where it stops issuing calls.
struct AppBug {
    rank: u32,
    site: (u32, u32),
    kind: BugKind,
    found: bool,
    /// A hang: the position of the rank's last call or completion before the hang, and
    /// whether it issued a call from the hang's iteration on after all.
    last: Option<usize>,
    passed: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BugKind {
    Mismatch,
    Skip,
    Hang,
}

impl AppBug {
    fn of(f: &Fault) -> Option<AppBug> {
        let (rank, site, kind) = match f {
            Fault::Mismatch {
                rank,
                iteration,
                op_index,
                ..
            } => (
                *rank,
                (*iteration, op_index.unwrap_or(0)),
                BugKind::Mismatch,
            ),
            Fault::Skip {
                rank,
                iteration,
                op_index,
            } => (*rank, (*iteration, op_index.unwrap_or(0)), BugKind::Skip),
            Fault::Hang { rank, iteration } => (*rank, (*iteration, 0), BugKind::Hang),
            _ => return None,
        };
        Some(AppBug {
            rank,
            site,
            kind,
            found: false,
            last: None,
            passed: false,
        })
    }

    /// Looks at the event at `pos`; returns the note when it is the offending call.
    fn scan(&mut self, pos: usize, ev: &Event) -> Option<String> {
        if self.found {
            return None;
        }
        let (r, (it, op)) = (self.rank, self.site);
        match (self.kind, ev) {
            (
                BugKind::Mismatch,
                Event::Call {
                    rank,
                    iteration,
                    index,
                    ..
                },
            ) if *rank == r && (*iteration, *index) == self.site => {
                self.found = true;
                Some(format!(
                    "mismatch: rank {r} issues iteration {it}'s op {op} with other parameters than its peers"
                ))
            }
            (
                BugKind::Skip,
                Event::Call {
                    rank,
                    iteration,
                    index,
                    ..
                },
            ) if *rank == r && (*iteration, *index) > self.site => {
                self.found = true;
                Some(format!(
                    "skip: rank {r} never issues iteration {it}'s op {op}; this call comes in its place"
                ))
            }
            (BugKind::Skip, Event::WorkloadDone { rank }) if *rank == r => {
                self.found = true;
                Some(format!(
                    "skip: rank {r} finishes without issuing iteration {it}'s op {op}"
                ))
            }
            (
                BugKind::Hang,
                Event::Call {
                    rank, iteration, ..
                }
                | Event::Complete {
                    rank, iteration, ..
                },
            ) if *rank == r => {
                if *iteration < it {
                    self.last = Some(pos);
                } else {
                    self.passed = true;
                }
                None
            }
            _ => None,
        }
    }

    /// A hang is known only at the end: the rank's last call or completion before it.
    fn finish(&self) -> Option<(usize, String)> {
        if self.kind != BugKind::Hang || self.passed {
            return None;
        }
        let r = self.rank;
        let it = self.site.0;
        self.last.map(|p| {
            (
                p,
                format!(
                    "hang: rank {r} issues no call after this one (stuck from iteration {it} on)"
                ),
            )
        })
    }
}

/// The markers of one trace, sorted by position.
#[derive(Clone, Debug, Default)]
pub struct Markers {
    pub markers: Vec<Marker>,
    pub first_stall: Option<usize>,
    /// Stretches of positions where sampled diagnoses named a root cause.
    pub stall_ranges: Vec<(usize, usize)>,
    /// What an application bug's offending call did, by its marker's position.
    pub notes: BTreeMap<usize, String>,
}

impl Markers {
    /// The first marker of `kind` strictly after `pos`.
    pub fn next(&self, kind: MarkerKind, pos: usize) -> Option<usize> {
        self.markers
            .iter()
            .find(|m| m.kind == kind && m.pos > pos)
            .map(|m| m.pos)
    }

    /// The last marker of `kind` strictly before `pos`.
    pub fn prev(&self, kind: MarkerKind, pos: usize) -> Option<usize> {
        self.markers
            .iter()
            .rev()
            .find(|m| m.kind == kind && m.pos < pos)
            .map(|m| m.pos)
    }

    /// Whether the event at index `i` (position `i + 1`) is where a fault strikes.
    pub fn is_fault(&self, i: usize) -> bool {
        let pos = i + 1;
        let k = self.markers.partition_point(|m| m.pos < pos);
        self.markers[k..]
            .iter()
            .take_while(|m| m.pos == pos)
            .any(|m| m.kind == MarkerKind::Fault)
    }

    pub fn of(&self, kind: MarkerKind) -> impl Iterator<Item = &Marker> {
        self.markers.iter().filter(move |m| m.kind == kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringside_sim::proto::{Generation, GroupId, SeqNo};
    use ringside_sim::scenario::{Algorithm, Dtype, OpKind, ReduceOp};

    fn call(rank: u32, generation: u32, seq: u64) -> Event {
        Event::Call {
            rank,
            iteration: 0,
            index: 0,
            group: GroupId(0),
            generation: Generation(generation),
            seq: SeqNo(seq),
            op: OpKind::Barrier,
            algorithm: Algorithm::Dissemination,
            bytes: 0,
            dtype: Dtype::F32,
            root: 0,
            reduce: ReduceOp::Sum,
            elements: 0,
            members: 2,
            peer: None,
        }
    }

    fn formed(rank: u32, generation: u32) -> Event {
        Event::GenerationFormed {
            rank,
            group: GroupId(0),
            generation: Generation(generation),
            members: vec![0, 1],
            group_rank: rank,
            resume_iteration: 0,
        }
    }

    #[test]
    fn a_new_generation_is_marked_once_where_it_is_formed() {
        let events = [
            call(0, 0, 1),
            call(1, 0, 1),
            formed(0, 1),
            formed(1, 1),
            call(0, 1, 1),
            call(1, 1, 1),
            formed(0, 2),
            call(0, 2, 1),
        ];
        let mut fold = Fold::with_size(2);
        let mut scan = MarkerScan::new(&[], 2);
        for (i, ev) in events.iter().enumerate() {
            fold.apply(i as u64, ev);
            scan.scan(i, ev, &fold);
        }
        let m = scan.finish(events.len(), &fold, |_, _| None);
        let g: Vec<usize> = m.of(MarkerKind::Generation).map(|m| m.pos).collect();
        assert_eq!(g, [3, 7], "where it is formed, not at its first call");
        assert_eq!(m.next(MarkerKind::Generation, 3), Some(7));
        assert_eq!(m.first_stall, None);
    }
}
