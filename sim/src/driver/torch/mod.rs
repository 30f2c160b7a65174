//! `ringside torchrun`: a real PyTorch program's processes, whose `ringside` backend hands every
//! collective and point-to-point call to the engine, which runs it with the protocol code on the
//! simulated network in virtual time (docs/torchrun.md).
//!
//! - `procs`: the processes, their environment, the key and the socket;
//! - `wire`: the frames on the socket;
//! - `check`: property testing of the program under drawn fault schedules;
//! - `forkserver`: the Python process that imported torch once and forks the program's;
//! - `lockstep`: the [`Application`](crate::engine::Application) that hands the programs' calls
//!   to the engine only while no program runs.

pub mod check;
pub mod forkserver;
mod lockstep;
mod procs;
pub mod wire;

pub use procs::Exit;

use crate::budget::Limits;
use crate::proto::event::AbortReason;
use crate::proto::mutation::Mutations;
use crate::replay::{self, ReplayOutcome};
use crate::run::{self, RunOptions, RunOutput};
use crate::scenario::{Outcome, Scenario};
use crate::trace::{TraceError, TraceReader};
use std::cell::RefCell;
use std::io;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Options of one `torchrun`.
#[derive(Clone, Copy, Default)]
pub struct TorchOptions<'a> {
    pub seed: Option<u64>,
    pub trace: Option<&'a Path>,
    pub interrupt: Option<&'a AtomicBool>,
    pub limits: Limits<'a>,
    /// The children's standard output goes to our standard error (when ours carries JSON).
    pub stdout_to_stderr: bool,
    /// The children's standard output and error go nowhere.
    pub silent: bool,
    /// How long the processes have to end by themselves once the run is over (default
    /// [`EXIT_GRACE`]).
    pub exit_grace: Option<Duration>,
    /// Forks the processes from this fork server instead of starting them.
    pub fork_server: Option<&'a forkserver::ForkServer>,
    /// The directory the processes run in (default: ours).
    pub cwd: Option<&'a Path>,
}

/// How long the processes have to end by themselves once the run is over (they have left the
/// job already; a process still there after this is killed).
pub const EXIT_GRACE: Duration = Duration::from_secs(60);

/// A finished `torchrun`.
pub struct TorchOutput {
    pub run: RunOutput,
    /// How each rank's process ended (None: unknown).
    pub exits: Vec<Option<Exit>>,
    /// Ranks that broke the protocol, and how.
    pub errors: Vec<(u32, String)>,
    /// The call site of each rank's calls: (rank, call number) -> `file:line (function)`.
    pub sites: Vec<((u32, u32), String)>,
    /// Where each blocked rank was blocked: its first call that failed, else the call it
    /// waited for at the end.
    pub blocked_sites: Vec<(u32, String)>,
    /// Each rank's completed calls in the order it waited for them: (call, hash of the
    /// result's bits, 0 for none).
    pub results: Vec<Vec<(u32, u64)>>,
}

/// Runs `program` as `scenario.world.size` processes on the simulated cluster of `scenario`
/// (which must have `[torch]`).
pub fn torchrun(
    scenario: &Scenario,
    program: &[String],
    opts: &TorchOptions,
) -> io::Result<TorchOutput> {
    let mut jobs = start(scenario, program, opts)?;
    let lockstep = RefCell::new(lockstep_of(scenario, &mut jobs, opts));
    // the trace says what ran, and where: `replay` runs it again
    let cwd = match opts.cwd {
        Some(d) => Some(d.to_path_buf()),
        None => std::env::current_dir().ok(),
    };
    let mut header = serde_json::Map::new();
    header.insert("program".into(), program.into());
    if let Some(cwd) = cwd {
        header.insert("cwd".into(), cwd.to_string_lossy().into_owned().into());
    }
    let out = run::run(
        scenario,
        &RunOptions {
            seed: opts.seed,
            trace: opts.trace,
            interrupt: opts.interrupt,
            limits: opts.limits,
            app: Some(&lockstep),
            header: Some(&header),
            ..RunOptions::default()
        },
    );
    let mut lockstep = lockstep.into_inner();
    let errors = lockstep.errors.clone();
    let sites = lockstep.sites();
    let blocked_sites = lockstep.blocked_sites();
    let results = std::mem::take(&mut lockstep.results);
    let killed = std::mem::take(&mut lockstep.killed);
    drop(lockstep);
    // a run that ran out of a budget leaves its processes waiting for replies that will not
    // come: they are killed at once
    let grace = match out.as_ref().map(|o| o.result.outcome) {
        Ok(Outcome::TimedOut) => Duration::ZERO,
        _ => opts.exit_grace.unwrap_or(EXIT_GRACE),
    };
    let exits = jobs.finish(grace);
    let mut run = out?;
    tell_exits(&mut run, &exits, &killed, &errors);
    tell_sites(&mut run, &blocked_sites);
    Ok(TorchOutput {
        run,
        exits,
        errors,
        sites,
        blocked_sites,
        results,
    })
}

/// Starts the processes of `program` for `scenario`.
fn start<'s>(
    scenario: &Scenario,
    program: &[String],
    opts: &TorchOptions<'s>,
) -> io::Result<procs::Jobs<'s>> {
    procs::Jobs::start(
        &procs::Spawn {
            program,
            nproc: scenario.world.size,
            stdout_to_stderr: opts.stdout_to_stderr,
            silent: opts.silent,
            cwd: opts.cwd,
        },
        opts.fork_server,
    )
}

/// The lockstep of `jobs` on `scenario`.
fn lockstep_of<'a, 's>(
    scenario: &Scenario,
    jobs: &'a mut procs::Jobs<'s>,
    opts: &TorchOptions<'a>,
) -> lockstep::Lockstep<'a, 's> {
    lockstep::Lockstep::new(
        jobs,
        scenario.torch.clone().unwrap_or_default().compute,
        scenario.group.timeout.0,
        scenario.group.algorithm,
        opts.interrupt,
        opts.limits.wall_clock,
        opts.exit_grace.unwrap_or(EXIT_GRACE),
    )
}

/// Replays the trace of a `ringside torchrun` (`reader`, whose header has its `program`): runs
/// the program again, in the directory it ran in, with the trace's scenario and seed, and
/// compares the run with the trace event by event (the program's own output goes to standard
/// error).
pub fn replay<R: std::io::BufRead>(
    reader: TraceReader<R>,
    mutations: Mutations,
    interrupt: Option<&AtomicBool>,
) -> Result<ReplayOutcome, TraceError> {
    let Some(program) = reader.header.program.clone() else {
        return replay::replay_reader(reader, mutations);
    };
    let cwd = program.cwd.as_deref().map(Path::new);
    let opts = TorchOptions {
        interrupt,
        stdout_to_stderr: true,
        cwd,
        ..TorchOptions::default()
    };
    let file = reader.file().to_string();
    let mut jobs =
        start(&reader.header.scenario, &program.argv, &opts).map_err(|e| TraceError {
            file,
            line: 1,
            message: format!("cannot run the header's `program`: {e}"),
        })?;
    let stop = AtomicBool::new(false);
    let lockstep = RefCell::new(lockstep_of(&reader.header.scenario, &mut jobs, &opts));
    let out = replay::replay_app(reader, mutations, Some(&lockstep), &stop);
    drop(lockstep);
    // a replay stopped at a divergence leaves its processes waiting: they are killed at once
    let grace = match out {
        Ok(ReplayOutcome::Identical { .. }) => EXIT_GRACE,
        _ => Duration::ZERO,
    };
    jobs.finish(grace);
    out
}

/// A run that stalled because its program failed, not in a call, says so: its verdict names the
/// ranks whose process ended with an error, and how.
fn tell_exits(
    run: &mut RunOutput,
    exits: &[Option<Exit>],
    killed: &[bool],
    errors: &[(u32, String)],
) {
    let r = &mut run.report;
    if r.outcome != Outcome::Stalled || !r.culprit.is_empty() {
        return;
    }
    let mut by: Vec<(String, Vec<u32>)> = Vec::new();
    for (rank, e) in exits.iter().enumerate() {
        let broke = errors.iter().find(|(r, _)| *r as usize == rank);
        let how = match (e, broke) {
            (_, Some((_, what))) => format!("broke the backend's protocol ({what})"),
            _ if !lockstep::exit_failed(*e, killed.get(rank).copied().unwrap_or(false)) => continue,
            (Some(Exit::Code(c)), _) => format!("exited with status {c}"),
            (Some(Exit::Signal(s)), _) => format!("was killed by signal {s}"),
            (None, _) => continue,
        };
        match by.iter_mut().find(|(h, _)| *h == how) {
            Some((_, ranks)) => ranks.push(rank as u32),
            None => by.push((how, vec![rank as u32])),
        }
    }
    if by.is_empty() {
        return;
    }
    let parts: Vec<String> = by
        .iter()
        .map(|(how, ranks)| format!("{} {how}", crate::diagnose::ranks_phrase(ranks)))
        .collect();
    let story = format!("the program failed: {}", parts.join("; "));
    r.explanation.push(format!(
        "{story}, outside the calls: every call the program made ended, none is blocked"
    ));
    r.culprit = story;
}

/// The verdict of a stalled run names where in the program each culprit rank was blocked:
/// `...; rank 2 at train.py:32 (forward)`.
fn tell_sites(run: &mut RunOutput, blocked_sites: &[(u32, String)]) {
    let r = &mut run.report;
    if r.culprit.is_empty() {
        return;
    }
    let mut culprits: Vec<u32> = r
        .root_causes
        .iter()
        .filter_map(|c| c.rank())
        .map(|rank| rank.0)
        .collect();
    culprits.sort_unstable();
    culprits.dedup();
    let at: Vec<String> = culprits
        .iter()
        .filter_map(|c| blocked_sites.iter().find(|(r, _)| r == c))
        .map(|(rank, site)| format!("rank {rank} at {site}"))
        .collect();
    if !at.is_empty() {
        r.culprit = format!("{}; {}", r.culprit, at.join(", "));
    }
}

/// What a call that failed raises in the program: the text of torch's own watchdog error, so
/// that a program that looks for it finds it.
pub(crate) fn watchdog_message(reason: &AbortReason, site: Option<&String>) -> String {
    let at = site
        .map(|s| format!(" (called at {s})"))
        .unwrap_or_default();
    match reason {
        AbortReason::Watchdog {
            op, seq, waited, ..
        } => format!(
            "Watchdog caught collective operation timeout: WorkRingside(SeqNum={}, OpType={}) \
             ran for {} milliseconds before timing out.{at} [ringside: {reason}]",
            seq.0,
            op.name().to_uppercase(),
            waited / 1_000_000
        ),
        other => format!("ringside: the call failed: {other}{at}"),
    }
}
