//! Points of interest on the timeline, found in one pass over the events.
//!
//! Positions are counts of applied events: a marker at `p` shows the state right after the
//! event `p - 1` that it names.

use ringside_sim::diagnose::{diagnose, Fold};
use ringside_sim::scenario::Fault;
use ringside_sim::trace::{Event, FaultPhase};

/// What a marker stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MarkerKind {
    /// A scenario fault begins (or, for application bugs, the rank enters the faulty iteration).
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
    /// (rank, iteration) where an application-bug fault of the scenario strikes.
    app_bugs: Vec<(u32, u32)>,
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
        let app_bugs = faults
            .iter()
            .filter_map(|f| match f {
                Fault::Mismatch {
                    rank, iteration, ..
                }
                | Fault::Skip {
                    rank, iteration, ..
                }
                | Fault::Hang { rank, iteration } => Some((*rank, *iteration)),
                _ => None,
            })
            .collect();
        // A diagnosis costs O(ranks). Root causes come from faults, and a stall may span only
        // a few events (nothing happens while everyone waits), so while a fault is active
        // every event is looked at in small worlds; otherwise (and after the first stall) a
        // sample every 2 x ranks events is enough: what is left to find are stalls that stay,
        // like application bugs. The first stall is then pinned down between samples.
        let dense = (ranks / 32).max(1);
        let sparse = (2 * ranks).max(64);
        MarkerScan {
            markers: Vec::new(),
            app_bugs,
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
            Event::Iteration { rank, iteration }
                if self.app_bugs.contains(&(*rank, *iteration)) =>
            {
                self.push(pos, MarkerKind::Fault)
            }
            Event::Call { generation, .. } if generation.0 > self.max_generation => {
                self.max_generation = generation.0;
                self.push(pos, MarkerKind::Generation);
            }
            _ => {}
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
        if self.stalled.is_none() && self.last_sample < end {
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
        }
        self.markers.sort();
        Markers {
            markers: self.markers,
            first_stall,
            stall_ranges: self.stall_ranges,
        }
    }
}

/// The markers of one trace, sorted by position.
#[derive(Clone, Debug, Default)]
pub struct Markers {
    pub markers: Vec<Marker>,
    pub first_stall: Option<usize>,
    /// Stretches of positions where sampled diagnoses named a root cause.
    pub stall_ranges: Vec<(usize, usize)>,
}

impl Markers {
    /// The first marker of `kind` strictly after `pos`.
    pub fn next(&self, kind: MarkerKind, pos: usize) -> Option<usize> {
        self.markers
            .iter()
            .find(|m| m.kind == kind && m.pos > pos)
            .map(|m| m.pos)
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

    #[test]
    fn a_new_generation_is_marked_once_where_its_first_call_is() {
        let events = [
            call(0, 0, 1),
            call(1, 0, 1),
            call(0, 1, 1),
            call(1, 1, 1),
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
        assert_eq!(g, [3, 5]);
        assert_eq!(m.next(MarkerKind::Generation, 3), Some(5));
        assert_eq!(m.first_stall, None);
    }
}
