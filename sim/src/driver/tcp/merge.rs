//! One trace from a real run: every worker's event lines and `launch`'s own events (faults,
//! deaths, pauses), in time order, then the diagnosis and the footer, as a simulated run's.

use super::config::LaunchConfig;
use crate::diagnose::{diagnose, Diagnosis, Fold};
use crate::report::{self, RunReport};
use crate::scenario::Outcome;
use crate::trace::{parse_event_line, Event, Recorder, TraceWriter};
use crate::units::Nanos;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead};
use std::path::{Path, PathBuf};

/// The trace one worker process writes: which incarnation of which rank wrote it.
pub struct WorkerTrace {
    pub rank: u32,
    pub incarnation: u32,
    pub path: PathBuf,
}

/// A finished real run.
pub struct Merged {
    pub report: RunReport,
    pub diagnosis: Diagnosis,
    pub outcome: Outcome,
    pub end_ns: Nanos,
}

/// Reads one worker's trace, and returns the time of its latest event. A torn last line (a
/// process killed while writing) is dropped; a malformed line elsewhere is skipped with a
/// warning.
fn read_worker(path: &Path, into: &mut Vec<(Nanos, Event)>) -> io::Result<Option<Nanos>> {
    let f = match File::open(path) {
        Ok(f) => f,
        // a worker killed before it started writes nothing
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut r = io::BufReader::new(f);
    let mut line = String::new();
    let mut no = 0;
    let mut latest = None;
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 || !line.ends_with('\n') {
            return Ok(latest);
        }
        no += 1;
        match parse_event_line(line.trim_end()) {
            Ok(e) => {
                latest = latest.max(Some(e.0));
                into.push(e);
            }
            Err(e) => eprintln!("launch: {}:{no}: skipped: {e}", path.display()),
        }
    }
}

/// Adds `launch`'s own events to the workers' and sorts them all by time. A dead process
/// writes nothing, so each line of its trace came before its death; but every process reads
/// the job's clock on its own (two agree as closely as each paired the wall clock with its
/// monotonic one), so a death may be stamped a little before its victim's last lines. Such a
/// death is moved to its victim's `latest` line, and on a tie `launch`'s events come after the
/// workers': otherwise the victim's last call would bring it back to life.
fn in_time_order(
    mut workers: Vec<(Nanos, Event)>,
    launch: Vec<(Nanos, Event)>,
    latest: &BTreeMap<(u32, u32), Nanos>,
) -> Vec<(Nanos, Event)> {
    workers.extend(launch.into_iter().map(|(t, ev)| match ev {
        Event::ProcessDeath { rank, incarnation } => {
            let t = latest.get(&(rank, incarnation)).map_or(t, |&l| t.max(l));
            (t, ev)
        }
        _ => (t, ev),
    }));
    workers.sort_by_key(|(t, _)| *t);
    workers
}

/// Merges the workers' `files` with `launch`'s `events` into the trace at `out`, diagnoses it
/// and builds the report.
pub fn merge(
    cfg: &LaunchConfig,
    files: &[WorkerTrace],
    events: Vec<(Nanos, Event)>,
    outcome: Outcome,
    end_ns: Nanos,
    out: &Path,
) -> io::Result<Merged> {
    let mut workers = Vec::new();
    let mut latest = BTreeMap::new();
    for f in files {
        if let Some(t) = read_worker(&f.path, &mut workers)? {
            latest.insert((f.rank, f.incarnation), t.min(end_ns));
        }
    }
    let mut all = in_time_order(workers, events, &latest);
    // what workers did between the end and being told to stop is not part of the run
    all.retain(|(t, _)| *t <= end_ns);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cause::RootCause;
    use crate::diagnose::tests::{call, step};
    use crate::proto::Rank;

    /// Ranks 0 and 2 wait in a call; rank 1 enters it at 100 by its clock and is killed, and
    /// `launch`, whose clock is a little behind, stamps the death 90.
    fn diagnosed(latest: &BTreeMap<(u32, u32), Nanos>) -> Vec<RootCause> {
        let workers = vec![
            (50, call(0, 1, 64)),
            (50, step(0, 1, 0, vec![1])),
            (60, call(2, 1, 64)),
            (60, step(2, 1, 0, vec![0])),
            (100, call(1, 1, 64)),
            (100, step(1, 1, 0, vec![2])),
        ];
        let launch = vec![(
            90,
            Event::ProcessDeath {
                rank: 1,
                incarnation: 0,
            },
        )];
        let mut fold = Fold::with_size(3);
        for (t, ev) in in_time_order(workers, launch, latest) {
            fold.apply(t, &ev);
        }
        fold.t = 1_000;
        fold.outcome = Some(Outcome::Stalled);
        diagnose(&fold).root_causes()
    }

    #[test]
    fn a_victims_last_lines_come_before_its_death() {
        let latest = BTreeMap::from([((0, 0), 50), ((1, 0), 100), ((2, 0), 60)]);
        assert_eq!(diagnosed(&latest), [RootCause::Preempted(Rank(1))]);
        // the death as stamped brings the victim back to life with its last call
        assert_ne!(diagnosed(&BTreeMap::new()), [RootCause::Preempted(Rank(1))]);
    }
}
