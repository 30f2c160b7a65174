//! What the viewer knows: the loaded trace with its checkpoints and markers, and where the
//! user stands in it. Nothing here draws or reads the terminal.

pub mod chain;
pub mod describe;
pub mod filter;
pub mod history;
pub mod markers;
pub mod paths;
pub mod ranges;
pub mod ranks;
pub mod verdict;

pub use chain::CauseChain;
pub use filter::EventFilter;
pub use history::History;
pub use markers::{Marker, MarkerKind, Markers};
pub use ranks::{Culprit, Order, Shown};
pub use verdict::Verdict;

use history::Builder;
use markers::MarkerScan;
use ranges::fit_ranks;
use ringside_sim::diagnose::{diagnose, Diagnosis, Fold};
use ringside_sim::proto::mesh::MeshLayout;
use ringside_sim::proto::{GroupId, Rank};
use ringside_sim::report::RunReport;
#[cfg(test)]
use ringside_sim::run::run_events;
use ringside_sim::run::{run_to, RunOptions};
use ringside_sim::scenario::{groups, Scenario};
use ringside_sim::trace::{Digest, Event, Header, Trace, TraceError, TraceReader, UnparsedEvent};
use ringside_sim::units::Nanos;
use std::path::Path;
use std::sync::mpsc;

/// Runs `scenario` with `seed` and keeps its trace in memory, exactly as a trace file would
/// read back (header, events, footer, digest).
pub fn record(scenario: &Scenario, seed: u64) -> Result<Trace, TraceError> {
    record_with(scenario, &RunOptions::seeded(seed)).map(|(trace, _)| trace)
}

/// [`record`] with the options of a run: its seed, budgets, interrupt flag and progress; with
/// the run's report. A run that a budget or the interrupt ends keeps what it recorded, with
/// the outcome it ended on.
pub fn record_with(
    scenario: &Scenario,
    opts: &RunOptions,
) -> Result<(Trace, RunReport), TraceError> {
    let name = format!("<{} in memory>", scenario.name);
    let io = |e: std::io::Error| TraceError {
        file: name.clone(),
        line: 0,
        message: e.to_string(),
    };
    let mut bytes = Vec::new();
    let out = run_to(scenario, opts, &mut bytes).map_err(io)?;
    let mut reader = TraceReader::new(&bytes[..], &name)?;
    let mut events = Vec::new();
    while let Some(e) = reader.next_event()? {
        events.push(e);
    }
    let trace = Trace {
        header: reader.header.clone(),
        events,
        footer: reader.footer().cloned(),
        digest: reader.digest().hex(),
        incomplete: reader.incomplete(),
    };
    Ok((trace, out.report))
}

/// A trace read into memory, folded once, with checkpoints for seeking and its markers.
pub struct Loaded {
    pub trace: Trace,
    pub history: History,
    pub markers: Markers,
    /// How the trace ends.
    pub verdict: Verdict,
    /// Where the viewer opens: the first moment that reads as the trace ends (see
    /// [`answer`]); None when it ends with nothing blocked and no root cause.
    pub answer: Option<usize>,
}

impl Loaded {
    pub fn new(trace: Trace) -> Loaded {
        let interval = history::interval_for(trace.header.scenario.world.size as usize);
        Loaded::with_interval(trace, interval)
    }

    /// Loads with checkpoints every `interval` events.
    pub fn with_interval(mut trace: Trace, interval: usize) -> Loaded {
        let events = std::mem::take(&mut trace.events);
        let mut loading = Loading::new(&trace.header, interval);
        loading.events.reserve(events.len());
        for (t, ev) in events {
            loading.push(t, ev);
        }
        loading.finish(trace)
    }

    /// Reads a trace file and folds it at the same time. One thread reads lines in order
    /// (digest, footer), two parse them, batch by batch, and this one folds, checkpoints and
    /// scans for markers as the parsed batches come back in order.
    pub fn open(path: &Path) -> Result<Loaded, TraceError> {
        const BATCH: usize = 2048;
        const PARSERS: usize = 2;
        type Parsed = Result<Vec<(Nanos, Event)>, TraceError>;
        let mut reader = TraceReader::open(path)?;
        // the digest of a version 2 trace is taken here, from the parsed events in order
        reader.defer_digest();
        let deferred = reader.digest_deferred();
        let mut digest = Digest::new();
        let header = reader.header.clone();
        let file = reader.file().to_string();
        let interval = history::interval_for(header.scenario.world.size as usize);
        std::thread::scope(|s| {
            let mut to_parse = Vec::new();
            let mut parsed = Vec::new();
            for _ in 0..PARSERS {
                let (tx, rx) = mpsc::sync_channel::<Vec<UnparsedEvent>>(4);
                let (ptx, prx) = mpsc::sync_channel::<Parsed>(4);
                to_parse.push(tx);
                parsed.push(prx);
                let file = file.as_str();
                s.spawn(move || {
                    for batch in rx {
                        let out: Parsed = batch.into_iter().map(|u| u.parse(file)).collect();
                        if ptx.send(out).is_err() {
                            break;
                        }
                    }
                });
            }
            let lines = s.spawn(move || {
                let mut k = 0;
                loop {
                    let mut batch = Vec::with_capacity(BATCH);
                    while batch.len() < BATCH {
                        match reader.next_unparsed()? {
                            Some(u) => batch.push(u),
                            None => break,
                        }
                    }
                    let last = batch.len() < BATCH;
                    // a parser only goes away when the folding side stopped early
                    if to_parse[k % PARSERS].send(batch).is_err() || last {
                        break;
                    }
                    k += 1;
                }
                Ok::<_, TraceError>((
                    reader.footer().cloned(),
                    reader.digest().hex(),
                    reader.incomplete(),
                ))
            });
            let mut loading = Loading::new(&header, interval);
            // event lines are about a hundred bytes: reserve once instead of growing
            let ratio = if header.compressed { 10 } else { 1 };
            let guess = std::fs::metadata(path).map_or(0, |m| m.len() * ratio / 96) as usize;
            loading.events.reserve(guess.min(1 << 26));
            // batches come back from the parsers in the order they were handed out
            'fold: for k in 0.. {
                match parsed[k % PARSERS].recv() {
                    Ok(batch) => {
                        for (t, ev) in batch? {
                            if deferred {
                                digest.update(t, &ev);
                            }
                            loading.push(t, ev);
                        }
                    }
                    Err(_) => break 'fold,
                }
            }
            let (footer, read_digest, incomplete) = match lines.join() {
                Ok(r) => r?,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            let digest = match (deferred, &footer) {
                (false, _) => read_digest,
                (true, Some(f)) => {
                    f.check_digest(&file, &digest)?;
                    digest.hex()
                }
                (true, None) => digest.hex(),
            };
            Ok(loading.finish(Trace {
                header,
                events: Vec::new(),
                footer,
                digest,
                incomplete,
            }))
        })
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

    /// The fold after the first `pos` events; at the end, it knows how the run ended, as
    /// `explain` does.
    pub fn fold_at(&self, pos: usize) -> Fold {
        let mut f = self.history.fold_at(&self.trace.events, pos);
        self.at_end(&mut f, pos);
        f
    }

    /// Tells the fold at `pos` how the run ended, when `pos` is the end.
    pub fn at_end(&self, fold: &mut Fold, pos: usize) {
        if pos == self.len() {
            fold.outcome = self.trace.footer.as_ref().map(|f| f.outcome);
        }
    }

    /// The diagnosis the viewer shows after the first `pos` events.
    pub fn diagnosis_at(&self, pos: usize) -> Diagnosis {
        self.diagnose(&self.fold_at(pos), pos)
    }

    /// The diagnosis of `fold`, the fold at `pos`, as the viewer shows it (an import's, judged
    /// by its verdict).
    pub fn diagnose(&self, fold: &Fold, pos: usize) -> Diagnosis {
        self.verdict.judge(diagnose(fold), pos == self.len())
    }

    /// Virtual time at the end of the trace.
    pub fn end_ns(&self) -> Nanos {
        self.trace.events.last().map_or(0, |e| e.0)
    }

    /// The position that shows the state at virtual time `t`: every event up to and
    /// including those at `t` applied.
    pub fn pos_at_time(&self, t: Nanos) -> usize {
        self.trace.events.partition_point(|(et, _)| *et <= t)
    }

    /// Virtual time after the first `pos` events.
    pub fn time_at(&self, pos: usize) -> Nanos {
        pos.checked_sub(1)
            .and_then(|i| self.trace.events.get(i))
            .map_or(0, |e| e.0)
    }

    /// What a reader should know about the trace before believing what it shows: that it was
    /// cut short, that a budget ended the run, that it comes from a real job, what it leaves
    /// out.
    pub fn notes(&self) -> Vec<String> {
        let t = &self.trace;
        let h = &t.header;
        let mut notes = Vec::new();
        if let Some(n) = &t.incomplete {
            notes.push(format!(
                "{n}; shown up to its last whole line, not how the run ended"
            ));
        }
        if let Some(b) = t.footer.as_ref().and_then(|f| f.budget) {
            notes.push(format!("the run was ended early: {}", b.describe()));
        }
        match (h.real, h.driver.as_deref()) {
            (true, Some("flight-recorder")) => {
                let mut n = "the Flight Recorder dumps of a real job: wall-clock times".to_string();
                match h.missing.as_slice() {
                    [] => {}
                    [r] => n.push_str(&format!("; rank {r} left no dump")),
                    m => n.push_str(&format!(
                        "; ranks {} left no dump",
                        ringside_sim::diagnose::fmt_ranks(m)
                    )),
                }
                notes.push(n);
            }
            (true, driver) => notes.push(format!(
                "a real run{}: wall-clock times, not replayable",
                driver.map_or(String::new(), |d| format!(" ({d})"))
            )),
            _ => {}
        }
        if h.level == ringside_sim::trace::Level::Calls {
            notes.push("no line per message (trace level `calls`)".into());
        }
        notes
    }

    /// Whether ranks work in groups other than the world (a device mesh).
    pub fn has_groups(&self) -> bool {
        let s = &self.trace.header.scenario;
        s.group.mesh.is_some() || !s.groups.is_empty()
    }

    /// Whether some rank sends or receives messages (a pipeline, or a send or recv op).
    pub fn has_point_to_point(&self) -> bool {
        let w = &self.trace.header.scenario.workload;
        w.pipeline.is_some()
            || w.ops
                .iter()
                .chain(w.programs.iter().flat_map(|p| &p.ops))
                .any(|o| o.op.point_to_point())
    }

    /// Whether the group rebuilds itself in new generations.
    pub fn is_elastic(&self) -> bool {
        self.trace.header.scenario.group.elastic.is_some()
    }

    /// A group as people name it: `world`, or a mesh dimension with its members
    /// (`tp 4-7`, `dp 1,5`), at most about `width` characters.
    pub fn group_label(&self, id: GroupId, width: usize) -> String {
        if id.0 == 0 {
            return "world".into();
        }
        let s = &self.trace.header.scenario;
        let named = s.group.mesh.as_ref().and_then(|mesh| {
            let layout = MeshLayout::new(mesh, s.world.size)?;
            let members = layout.members(id)?;
            let first = *members.first()?;
            let d = (0..layout.dims()).find(|&d| layout.group_of(d, first).0 == id)?;
            let ranks: Vec<u32> = members.iter().map(|r: &Rank| r.0).collect();
            let dim = &mesh.dims[d];
            let room = width.saturating_sub(dim.chars().count() + 1).max(4);
            Some(format!("{dim} {}", fit_ranks(&ranks, room)))
        });
        let named = named.or_else(|| {
            let (_, e, ranks) = groups::named_subgroups(s)
                .into_iter()
                .find(|(g, _, _)| *g == id)?;
            let name = &s.groups[e].name;
            let room = width.saturating_sub(name.chars().count() + 1).max(4);
            Some(format!("{name} {}", fit_ranks(&ranks, room)))
        });
        named.unwrap_or_else(|| format!("group {}", id.0))
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

/// Whether the diagnosis of `fold` names a root cause.
fn stalled(fold: &Fold) -> bool {
    !diagnose(fold).causes.is_empty()
}

/// Folds events as they come, keeping them, their checkpoints and their markers.
struct Loading {
    builder: Builder,
    scan: MarkerScan,
    events: Vec<(Nanos, Event)>,
}

impl Loading {
    fn new(header: &Header, interval: usize) -> Loading {
        let scenario = &header.scenario;
        Loading {
            builder: Builder::new(header, interval),
            scan: MarkerScan::new(&scenario.faults, scenario.world.size as usize),
            events: Vec::new(),
        }
    }

    fn push(&mut self, t: Nanos, ev: Event) {
        self.builder.push(t, &ev);
        self.scan.scan(self.events.len(), &ev, self.builder.fold());
        self.events.push((t, ev));
    }

    /// The loaded trace; `trace` brings the header, footer and digest.
    fn finish(self, mut trace: Trace) -> Loaded {
        let (history, final_fold) = self.builder.finish();
        let events = self.events;
        let markers = self.scan.finish(events.len(), &final_fold, |lo, hi| {
            first_stall_between(&history, &events, lo, hi)
        });
        trace.events = events;
        let mut loaded = Loaded {
            verdict: Verdict::of(&trace),
            trace,
            history,
            markers,
            answer: None,
        };
        loaded.answer = answer(&loaded);
        loaded
    }
}

/// The first position from which the diagnosis reads as the trace ends (its root causes and
/// its blocked ranks), moved past the other events of its instant (a preemption and a pause at
/// the same time are both shown): the moment that shows the answer. The search assumes that
/// once a stall reads as it ends it keeps reading so (a stalled run only gathers waiters); the
/// end itself when no earlier moment is found to. None when the trace ends with nothing
/// blocked and no root cause.
fn answer(l: &Loaded) -> Option<usize> {
    let v = &l.verdict;
    if v.root_causes.is_empty() && v.blocked.is_empty() {
        return None;
    }
    let end = l.len();
    let reads = |p: usize| p == end || v.reads_as(&l.diagnosis_at(p));
    let (mut lo, mut hi) = (l.markers.first_stall.unwrap_or(0).min(end), end);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if reads(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let instant = l.pos_at_time(l.time_at(lo));
    Some(if lo > 0 && instant > lo && reads(instant) {
        instant
    } else {
        lo
    })
}

/// The first position in `(lo, hi]` whose diagnosis names a root cause, given none at `lo`
/// and one at `hi`: sixteen samples narrow the stretch down until it is short enough to look
/// at every position, so a large world needs a few dozen diagnoses, not thousands.
fn first_stall_between(
    history: &History,
    events: &[(Nanos, Event)],
    mut lo: usize,
    mut hi: usize,
) -> Option<usize> {
    const SAMPLES: usize = 16;
    loop {
        let step = if hi - lo <= SAMPLES {
            1
        } else {
            (hi - lo).div_ceil(SAMPLES)
        };
        let mut fold = history.fold_at(events, lo);
        let mut at = lo;
        let mut found = None;
        while at + step < hi || (step == 1 && at < hi) {
            for (t, ev) in &events[at..at + step] {
                fold.apply(*t, ev);
            }
            at += step;
            if stalled(&fold) {
                found = Some(at);
                break;
            }
        }
        if step == 1 {
            return found.or(Some(hi));
        }
        match found {
            Some(p) => (lo, hi) = (p - step, p),
            None => lo = at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringside_sim::scenario;
    use ringside_sim::trace::read_trace;
    use ringside_sim::trace::TraceWriter;

    fn scenario(toml: &str) -> Scenario {
        scenario::parse(toml, "test").expect("valid scenario")
    }

    /// Long enough for several parse batches; a pause, then a preemption that stalls it.
    const STALLS: &str = r#"
name = "stalls"
[world]
size = 4
[network]
latency = "5us"
bandwidth = "25GB/s"
[group]
timeout = "20ms"
[workload]
iterations = 120
compute = "1ms"
elements = 4
[[workload.ops]]
op = "allreduce"
bytes = "64KiB"
[[faults]]
kind = "pause"
rank = 1
at = "20ms"
duration = "3ms"
[[faults]]
kind = "preempt"
rank = 2
at = "100ms"
"#;

    fn write(trace_of: &Scenario, dir: &Path) -> std::path::PathBuf {
        let path = dir.join("t.jsonl");
        let f = std::fs::File::create(&path).expect("create");
        let mut w = TraceWriter::new(f, trace_of, trace_of.seed).expect("header");
        let (r, _, _) = run_events(trace_of, &RunOptions::default(), &mut w);
        w.finish(r.outcome).expect("footer");
        path
    }

    #[test]
    fn parallel_open_reads_what_the_plain_reader_reads() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = write(&scenario(STALLS), dir.path());
        let plain = read_trace(&path).expect("readable");
        assert!(
            plain.events.len() > 3 * 2048,
            "{} events",
            plain.events.len()
        );
        let l = Loaded::open(&path).expect("opens");
        assert_eq!(l.trace.events, plain.events);
        assert_eq!(l.trace.footer, plain.footer);
        assert_eq!(l.trace.digest, plain.digest);
        let m = Loaded::new(plain);
        assert_eq!(l.markers.markers, m.markers.markers);
    }

    #[test]
    fn a_compressed_trace_opens_as_the_plain_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let s = scenario(STALLS);
        let plain = write(&s, dir.path());
        let zst = dir.path().join("t.jsonl.zst");
        let opts = RunOptions {
            trace: Some(&zst),
            ..RunOptions::default()
        };
        ringside_sim::run::run(&s, &opts).expect("compressed trace written");
        assert!(std::fs::metadata(&zst).unwrap().len() < std::fs::metadata(&plain).unwrap().len());
        let (a, b) = (
            Loaded::open(&plain).expect("opens"),
            Loaded::open(&zst).expect("opens"),
        );
        assert_eq!(a.trace.events, b.trace.events);
        assert_eq!(a.trace.digest, b.trace.digest);
        assert_eq!(a.markers.markers, b.markers.markers);
    }

    #[test]
    fn open_names_the_line_of_a_malformed_event() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = write(&scenario(STALLS), dir.path());
        let text = std::fs::read_to_string(&path).expect("read");
        let mut lines: Vec<&str> = text.lines().collect();
        lines[5000] = r#"{"t":1,"kind":"bogus"}"#;
        std::fs::write(&path, lines.join("\n") + "\n").expect("write");
        let e = Loaded::open(&path).err().expect("refused");
        assert_eq!(e.line, 5001, "{e}");
    }

    #[test]
    fn the_first_stall_is_the_first_position_with_a_root_cause() {
        let l = Loaded::new(record(&scenario(STALLS), 0).expect("recorded"));
        let brute = (0..=l.len()).find(|&p| stalled(&l.fold_at(p)));
        assert!(brute.is_some());
        assert_eq!(l.markers.first_stall, brute);
        // the pause stalls the others briefly, long before the preemption
        let first = brute.unwrap();
        let death = l
            .events()
            .iter()
            .position(|(_, e)| matches!(e, Event::ProcessDeath { .. }))
            .unwrap();
        assert!(first < death, "the pause comes first: {first} vs {death}");
    }

    #[test]
    fn a_run_recorded_in_memory_keeps_to_its_event_budget() {
        let opts = RunOptions {
            limits: ringside_sim::budget::Limits {
                events: Some(1_000),
                ..ringside_sim::budget::Limits::default()
            },
            ..RunOptions::seeded(0)
        };
        let (trace, _) = record_with(&scenario(STALLS), &opts).expect("recorded");
        let footer = trace.footer.expect("a footer");
        assert_eq!(footer.outcome, ringside_sim::scenario::Outcome::TimedOut);
        // the budget counts the engine's events, each of which may write a few trace events
        let all = record(&scenario(STALLS), 0).expect("recorded");
        let (some, every) = (trace.events.len(), all.events.len());
        assert!(some < 5_000 && every > 2 * some, "{some} of {every}");
    }

    #[test]
    fn markers_name_the_faults_and_the_watchdog() {
        let l = Loaded::new(record(&scenario(STALLS), 0).expect("recorded"));
        assert_eq!(l.markers.of(MarkerKind::Fault).count(), 2);
        assert!(l.markers.of(MarkerKind::Watchdog).count() >= 1);
        let first_fault = l.markers.next(MarkerKind::Fault, 0).unwrap();
        assert!(matches!(l.events()[first_fault - 1].1, Event::Fault { .. }));
    }
}
