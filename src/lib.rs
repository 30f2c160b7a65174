//! `ringside`'s command line, as a library: a program that registers collective algorithms of
//! its own (`ringside_sim::proto::collective::custom`) and then calls [`main`] is a `ringside`
//! whose `run`, `check`, `replay`, `explain`, `tui` and every other command know them by name
//! (docs/custom-algorithms.md).
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     // register the program's algorithms here, then:
//!     ringside::main()
//! }
//! ```

mod cmd;
mod progress;

use clap::{Parser, Subcommand};
use ringside_sim::text::{safe, safe_lines};
use std::fmt;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ringside",
    version,
    about = "A deterministic simulator and debugger for collective communication protocols",
    long_about = "ringside runs the real protocol code of a process group (collectives, \
                  membership, elastic rebuilds) on a discrete-event network with exact virtual \
                  time, under injected faults; explains which ranks are blocked and why; and \
                  writes traces that replay bit-for-bit.\n\n\
                  Exit codes: 0 ok, 1 an expectation or check failed, 2 bad input."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario and report its outcome, blocked ranks and root causes.
    Run(cmd::run::RunArgs),
    /// Re-run a trace's scenario and seed; prove the event stream identical or name the first
    /// diverging event.
    Replay(cmd::replay::ReplayArgs),
    /// Diagnose a recorded trace: who is blocked, on what, waiting for whom, and why.
    Explain(cmd::explain::ExplainArgs),
    /// Every applicable algorithm of the scenario's ops over a range of sizes: simulated time,
    /// algorithm bandwidth and bus bandwidth (as nccl-tests).
    Sweep(cmd::sweep::SweepArgs),
    /// Property-test the protocol code: random scenarios or fault schedules against every
    /// property; a failure is shrunk and written with its trace.
    Check(cmd::check::CheckArgs),
    /// The time-travel debugger: step through a trace, see every rank's state and the
    /// diagnosis at any moment.
    Tui(cmd::tui::TuiArgs),
    /// Convert a trace for other tools: Chrome/Perfetto trace events.
    Export(cmd::export::ExportArgs),
    /// Diagnose a real job from its PyTorch Flight Recorder dumps; write it as a scenario or a
    /// trace.
    Import(cmd::import::ImportArgs),
    /// Run the scenario's workload as real OS processes over loopback TCP, with the same
    /// protocol code; apply its process faults with signals; merge the traces.
    Launch(cmd::launch::LaunchArgs),
    /// One process of a real run (started by `launch`).
    Worker(cmd::worker::WorkerArgs),
    /// Run a real PyTorch program (backend "ringside") on the scenario's simulated cluster,
    /// in virtual time, under its faults; report as `run` does.
    Torchrun(cmd::torchrun::TorchrunArgs),
}

/// A failure with its exit code. Commands return `anyhow::Result`: an error that is not a
/// `Failure::Check` is bad input or an I/O error, and exits 2.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Exit 1: the run worked but an expectation, a check or a replay failed; the message, if
    /// any, is printed as it is.
    Check(String),
    /// Exit 2: bad input (scenario, trace, arguments) or an I/O error.
    Input(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Check(msg) | Failure::Input(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for Failure {}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Input(e.to_string())
    }
}

/// A reader that stops early (`ringside explain T | head`) ends the command quietly, as it
/// ends any other Unix tool, instead of making it fail on its next write. Not for `launch`
/// and `worker`, whose sockets report a closed peer as an error to handle.
fn quiet_broken_pipe() {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: called first thing in `main`, before any other thread exists; restores the
    // default action that the Rust runtime replaced with "ignore".
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
}

/// Runs the command line of the process (`std::env::args`) and says how it ended: exit code 0
/// ok, 1 an expectation or check failed, 2 bad input. Algorithms registered before the call
/// are known to every command, as are the workers that `launch` starts from the same program.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Launch(_) | Command::Worker(_)) {
        quiet_broken_pipe();
    }
    let r = match cli.command {
        Command::Run(a) => cmd::run::main(a),
        Command::Replay(a) => cmd::replay::main(a),
        Command::Explain(a) => cmd::explain::main(a),
        Command::Sweep(a) => cmd::sweep::main(a),
        Command::Check(a) => cmd::check::main(a).map_err(anyhow::Error::from),
        Command::Tui(a) => cmd::tui::main(a),
        Command::Export(a) => cmd::export::main(a),
        Command::Import(a) => cmd::import::main(a).map_err(anyhow::Error::from),
        Command::Launch(a) => cmd::launch::main(a),
        Command::Worker(a) => cmd::worker::main(a),
        Command::Torchrun(a) => cmd::torchrun::main(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<Failure>() {
            Some(Failure::Check(msg)) => {
                if !msg.is_empty() {
                    eprintln!("{}", safe_lines(msg));
                }
                ExitCode::from(1)
            }
            _ => {
                // one line, whatever the input it quotes holds
                eprintln!("error: {}", safe(&format!("{e:#}")));
                ExitCode::from(2)
            }
        },
    }
}
