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
use crate::run::{self, RunOptions, RunOutput};
use crate::scenario::{Outcome, Scenario};
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
    let torch = scenario.torch.clone().unwrap_or_default();
    let mut jobs = procs::Jobs::start(
        &procs::Spawn {
            program,
            nproc: scenario.world.size,
            stdout_to_stderr: opts.stdout_to_stderr,
            silent: opts.silent,
        },
        opts.fork_server,
    )?;
    let lockstep = RefCell::new(lockstep::Lockstep::new(
        &mut jobs,
        torch.compute,
        scenario.group.timeout.0,
        scenario.group.algorithm,
        opts.interrupt,
        opts.limits.wall_clock,
    ));
    let out = run::run(
        scenario,
        &RunOptions {
            seed: opts.seed,
            trace: opts.trace,
            interrupt: opts.interrupt,
            limits: opts.limits,
            app: Some(&lockstep),
            ..RunOptions::default()
        },
    );
    let mut lockstep = lockstep.into_inner();
    let errors = lockstep.errors.clone();
    let sites = lockstep.sites();
    let blocked_sites = lockstep.blocked_sites();
    let results = std::mem::take(&mut lockstep.results);
    drop(lockstep);
    // a run that ran out of a budget leaves its processes waiting for replies that will not
    // come: they are killed at once
    let grace = match out.as_ref().map(|o| o.result.outcome) {
        Ok(Outcome::TimedOut) => Duration::ZERO,
        _ => opts.exit_grace.unwrap_or(EXIT_GRACE),
    };
    let exits = jobs.finish(grace);
    Ok(TorchOutput {
        run: out?,
        exits,
        errors,
        sites,
        blocked_sites,
        results,
    })
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
