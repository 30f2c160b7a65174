//! What the viewer knows: the loaded trace with its checkpoints and markers, and where the
//! user stands in it. Nothing here draws or reads the terminal.

pub mod filter;
pub mod history;
pub mod markers;

pub use filter::EventFilter;
pub use history::History;
pub use markers::{Marker, MarkerKind, Markers};

use history::Builder;
use markers::MarkerScan;
use ringside_sim::diagnose::{diagnose, Fold};
use ringside_sim::run::run_events;
use ringside_sim::scenario::Scenario;
use ringside_sim::trace::{Event, Trace, TraceError, TraceReader, TraceWriter};
use ringside_sim::units::Nanos;

/// Runs `scenario` with `seed` and keeps its trace in memory, exactly as a trace file would
/// read back (header, events, footer, digest).
pub fn record(scenario: &Scenario, seed: u64) -> Result<Trace, TraceError> {
    let name = format!("<{} in memory>", scenario.name);
    let io = |e: std::io::Error| TraceError {
        file: name.clone(),
        line: 0,
        message: e.to_string(),
    };
    let mut bytes = Vec::new();
    let mut writer = TraceWriter::new(&mut bytes, scenario, seed).map_err(io)?;
    let (result, _, _) = run_events(scenario, seed, &mut writer, None);
    writer.finish(result.outcome).map_err(io)?;
    let mut reader = TraceReader::new(&bytes[..], &name)?;
    let mut events = Vec::new();
    while let Some(e) = reader.next_event()? {
        events.push(e);
    }
    Ok(Trace {
        header: reader.header.clone(),
        events,
        footer: reader.footer().cloned(),
        digest: reader.digest().hex(),
    })
}

/// A trace read into memory, folded once, with checkpoints for seeking and its markers.
pub struct Loaded {
    pub trace: Trace,
    pub history: History,
    pub markers: Markers,
}

impl Loaded {
    pub fn new(trace: Trace) -> Loaded {
        let interval = history::interval_for(trace.header.scenario.world.size as usize);
        Loaded::with_interval(trace, interval)
    }

    /// Loads with checkpoints every `interval` events.
    pub fn with_interval(trace: Trace, interval: usize) -> Loaded {
        let scenario = &trace.header.scenario;
        let events = &trace.events;
        let mut builder = Builder::new(scenario, interval);
        let mut scan =
            MarkerScan::new(&scenario.faults, scenario.world.size as usize, events.len());
        for (i, (t, ev)) in events.iter().enumerate() {
            builder.push(*t, ev);
            scan.scan(i, ev, builder.fold());
        }
        let (history, final_fold) = builder.finish();
        let markers = scan.finish(events.len(), &final_fold, |lo, hi| {
            first_stall_between(&history, events, lo, hi)
        });
        Loaded {
            trace,
            history,
            markers,
        }
    }

    pub fn events(&self) -> &[(Nanos, Event)] {
        &self.trace.events
    }

    pub fn len(&self) -> usize {
        self.trace.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.trace.events.is_empty()
    }

    /// The fold after the first `pos` events.
    pub fn fold_at(&self, pos: usize) -> Fold {
        self.history.fold_at(&self.trace.events, pos)
    }

    /// Virtual time at the end of the trace.
    pub fn end_ns(&self) -> Nanos {
        self.trace.events.last().map_or(0, |e| e.0)
    }

    /// The first position after `pos` whose event involves `rank`.
    pub fn next_of_rank(&self, pos: usize, rank: u32) -> Option<usize> {
        self.trace
            .events
            .iter()
            .enumerate()
            .skip(pos)
            .find(|(_, (_, ev))| ev.involves(rank))
            .map(|(i, _)| i + 1)
    }

    /// The last position before `pos` whose event involves `rank`.
    pub fn prev_of_rank(&self, pos: usize, rank: u32) -> Option<usize> {
        let end = pos.saturating_sub(1).min(self.len());
        self.trace.events[..end]
            .iter()
            .rposition(|(_, ev)| ev.involves(rank))
            .map(|i| i + 1)
    }
}

/// The first position in `(lo, hi]` whose diagnosis names a root cause.
fn first_stall_between(
    history: &History,
    events: &[(Nanos, Event)],
    lo: usize,
    hi: usize,
) -> Option<usize> {
    let mut fold = history.fold_at(events, lo);
    for (i, (t, ev)) in events.iter().enumerate().take(hi).skip(lo) {
        fold.apply(*t, ev);
        if !diagnose(&fold).causes.is_empty() {
            return Some(i + 1);
        }
    }
    None
}
