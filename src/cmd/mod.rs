//! One module per subcommand.

pub mod check;
pub mod check_torch;
pub mod explain;
pub mod export;
pub mod import;
pub mod launch;
pub mod replay;
pub mod run;
pub mod sweep;
pub mod torchrun;
pub mod tui;
pub mod worker;

use crate::Failure;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use ringside_sim::proto::mutation::Mutation;
use ringside_sim::scenario::{self, Scenario};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

/// Loads a scenario, mapping any problem to exit code 2.
pub fn load_scenario(path: &Path) -> Result<Scenario, Failure> {
    scenario::load_with(path, &ringside_sim::engine::SUPPORT)
        .map_err(|e| Failure::Input(e.to_string()))
}

/// The values of `--mutation`: the name of any planted bug, all of them listed in `--help`.
pub fn mutation_names() -> impl TypedValueParser<Value = Mutation> {
    PossibleValuesParser::new(Mutation::names()).try_map(|name| name.parse::<Mutation>())
}

/// A flag set by Ctrl-C (installed once).
pub fn interrupt_flag() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        // if a handler cannot be installed the run simply cannot be interrupted gracefully
        let _ = ctrlc::set_handler(move || f.store(true, std::sync::atomic::Ordering::SeqCst));
        flag
    })
    .clone()
}

/// The memory a scenario's runs may need, as a flag: `run`, `replay`, `check` and `sweep`
/// refuse a scenario estimated past it before any run.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct MemoryLimit {
    /// Refuse to start a run estimated to need more memory than this (ranks x elements x
    /// dtype size, messages in flight, per-rank state), e.g. "8GB"; a run whose queue of
    /// events grows past what the limit leaves ends as timed_out (budget: memory)
    #[arg(long, value_name = "SIZE", default_value = "2GiB", value_parser = parse_size)]
    pub max_memory: u64,
}

impl MemoryLimit {
    /// Refuses `s` (exit 2) when it would need more memory than `--max-memory`; `at` says
    /// where it was read (a file, a trace's header line).
    pub fn admit(&self, s: &Scenario, at: &dyn std::fmt::Display) -> Result<(), Failure> {
        self.refuse_past(&ringside_sim::budget::estimate(s), at)
    }

    /// [`MemoryLimit::admit`] of the scenario read from `file`: a refusal names the line and
    /// key that drive the estimate, e.g. `world.size`.
    pub fn admit_file(&self, s: &Scenario, file: &std::path::Path) -> Result<(), Failure> {
        let estimate = ringside_sim::budget::estimate(s);
        if estimate.total <= self.max_memory {
            return Ok(());
        }
        let line = ringside_sim::scenario::key_line_in(file, estimate.key);
        self.refuse_past(
            &estimate,
            &format_args!("{}:{line}: {}", file.display(), estimate.key),
        )
    }

    fn refuse_past(
        &self,
        estimate: &ringside_sim::budget::MemoryEstimate,
        at: &dyn std::fmt::Display,
    ) -> Result<(), Failure> {
        if estimate.total > self.max_memory {
            return Err(Failure::Input(format!(
                "{at}: {}",
                estimate.refusal(self.max_memory)
            )));
        }
        Ok(())
    }
}

/// The budgets of a run, as flags: memory is checked before it starts, events and wall-clock
/// time end it as `timed_out`, diagnosed where it stood.
#[derive(clap::Args, Clone, Debug)]
pub struct BudgetArgs {
    #[command(flatten)]
    pub memory: MemoryLimit,
    /// End a run as timed_out after this many engine events [default: twice the events a
    /// healthy run of the scenario takes, and at least 20000000]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_events: Option<u64>,
    /// End a run as timed_out after this much wall-clock time, e.g. "30s" [default: none]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub max_wall: Option<std::time::Duration>,
}

pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    ringside_sim::units::Size::parse(s)
        .map(|s| s.0)
        .map_err(|e| e.to_string())
}

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    match ringside_sim::units::Duration::parse(s) {
        Ok(d) if d.0 > 0 => Ok(std::time::Duration::from_nanos(d.0)),
        Ok(_) => Err("must be more than 0s".into()),
        Err(e) => Err(e.to_string()),
    }
}

impl BudgetArgs {
    /// The wall-clock flag, raised by a timer thread once `--max-wall` has passed.
    pub fn wall_clock_flag(&self) -> Option<Arc<AtomicBool>> {
        let d = self.max_wall?;
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        std::thread::spawn(move || {
            std::thread::sleep(d);
            f.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        Some(flag)
    }

    pub fn limits<'a>(&self, wall: Option<&'a AtomicBool>) -> ringside_sim::budget::Limits<'a> {
        ringside_sim::budget::Limits {
            events: self.max_events,
            wall_clock: wall,
            memory: Some(self.memory.max_memory),
        }
    }
}

/// `--exit-code`: the exit status says whether the job finished.
#[derive(clap::Args, Clone, Copy)]
pub struct ExitArgs {
    /// Exits 1 when the job did not finish (stalled, or a budget or time limit ended it), 0
    /// when it completed or was rebuilt and completed: for scripts, as `git diff --exit-code`.
    #[arg(long)]
    pub exit_code: bool,
}

impl ExitArgs {
    /// Exit 1 for a job that did not finish, when asked to.
    pub fn check(self, outcome: Option<ringside_sim::scenario::Outcome>) -> Result<(), Failure> {
        use ringside_sim::scenario::Outcome;
        match outcome {
            Some(Outcome::Stalled | Outcome::TimedOut) if self.exit_code => {
                Err(Failure::Check(String::new()))
            }
            _ => Ok(()),
        }
    }
}
