//! One trace from a real run: every worker's event lines and `launch`'s own events (faults,
//! deaths, pauses), in time order, then the diagnosis and the footer, as a simulated run's.

use super::config::LaunchConfig;
use crate::diagnose::{diagnose, Diagnosis, Fold};
use crate::report::{self, RunReport};
use crate::scenario::Outcome;
use crate::trace::{parse_event_line, Event, Recorder, TraceWriter};
use crate::units::Nanos;
use std::fs::File;
use std::io::{self, BufRead};
use std::path::{Path, PathBuf};

/// A finished real run.
pub struct Merged {
    pub report: RunReport,
    pub diagnosis: Diagnosis,
    pub outcome: Outcome,
    pub end_ns: Nanos,
}

/// Reads one worker's trace. A torn last line (a process killed while writing) is dropped;
/// a malformed line elsewhere is skipped with a warning.
fn read_worker(path: &Path, into: &mut Vec<(Nanos, Event)>) -> io::Result<()> {
    let f = match File::open(path) {
        Ok(f) => f,
        // a worker killed before it started writes nothing
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut r = io::BufReader::new(f);
    let mut line = String::new();
    let mut no = 0;
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 || !line.ends_with('\n') {
            return Ok(());
        }
        no += 1;
        match parse_event_line(line.trim_end()) {
            Ok(e) => into.push(e),
            Err(e) => eprintln!("launch: {}:{no}: skipped: {e}", path.display()),
        }
    }
}

/// Merges the workers' `files` with `launch`'s `events` into the trace at `out`, diagnoses it
/// and builds the report.
pub fn merge(
    cfg: &LaunchConfig,
    files: &[PathBuf],
    events: Vec<(Nanos, Event)>,
    outcome: Outcome,
    end_ns: Nanos,
    out: &Path,
) -> io::Result<Merged> {
    let mut all = events;
    for f in files {
        read_worker(f, &mut all)?;
    }
    // what workers did between the end and being told to stop is not part of the run
    all.retain(|(t, _)| *t <= end_ns);
    all.sort_by_key(|(t, _)| *t);
    let mut header = serde_json::Map::new();
    header.insert("real".into(), true.into());
    header.insert("driver".into(), "tcp".into());
    header.insert("time_scale".into(), cfg.scale.0.into());
    let file = File::create(out)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot create {}: {e}", out.display())))?;
    let mut writer = TraceWriter::with_header(
        file,
        &cfg.scenario,
        cfg.seed,
        crate::trace::Level::Full,
        header,
    )?;
    let mut fold = Fold::new(&cfg.scenario);
    for (t, ev) in &all {
        writer.record(*t, ev);
        fold.apply(*t, ev);
    }
    fold.t = end_ns;
    fold.outcome = Some(outcome);
    let diagnosis = diagnose(&fold);
    let ev = Event::Diagnosis {
        blocked: diagnosis.blocked_ranks(),
        root_causes: diagnosis.root_causes(),
        stragglers: diagnosis.straggler_names(),
    };
    writer.record(end_ns, &ev);
    fold.apply(end_ns, &ev);
    let digest = writer.finish(outcome)?.hex();
    let report = report::build(
        &cfg.scenario.name,
        cfg.seed,
        outcome,
        end_ns,
        &fold,
        &diagnosis,
        digest,
        cfg.scenario.expect.as_ref(),
    );
    Ok(Merged {
        report,
        diagnosis,
        outcome,
        end_ns,
    })
}
