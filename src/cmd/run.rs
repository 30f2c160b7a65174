//! `ringside run SCENARIO [--seed N] [--trace FILE] [--trace-level full|calls] [--json] [--quiet]`

use super::{interrupt_flag, load_scenario};
use crate::progress::Progress;
use crate::Failure;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use ringside_sim::run::{run, RunOptions};
use ringside_sim::text::safe_lines;
use ringside_sim::trace::Level;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use strum::VariantNames;

#[derive(Args)]
pub struct RunArgs {
    /// The scenario file (TOML, see scenarios/README.md).
    pub scenario: PathBuf,
    /// Overrides the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Writes the trace (JSON Lines) to this file; zstd-compressed when its name ends in
    /// `.zst` (e.g. run.jsonl.zst). Every command that reads traces opens both.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// What the trace holds: `full` (every event) or `calls` (calls, steps, waits, faults,
    /// processes and membership: no line per message, for runs whose message lines would be
    /// gigabytes; `replay` still checks the digest of every event).
    #[arg(long, default_value = "full", requires = "trace", value_parser = PossibleValuesParser::new(Level::VARIANTS).try_map(|s| s.parse::<Level>()))]
    pub trace_level: Level,
    /// Shows no progress on stderr (it shows only on a terminal, after a second).
    #[arg(long, short)]
    pub quiet: bool,
    /// Prints one JSON object instead of sentences.
    #[arg(long, conflicts_with = "tui")]
    pub json: bool,
    /// Opens the time-travel debugger on the run's trace, and prints the report when it is
    /// closed (the trace is kept in memory unless --trace names a file).
    #[arg(long)]
    pub tui: bool,
    /// With --tui: leaves the mouse to the terminal (`m` in the viewer turns it on and off).
    #[arg(long, requires = "tui")]
    pub no_mouse: bool,
    /// With --tui: colours for a light background (`t` in the viewer switches).
    #[arg(long, requires = "tui")]
    pub light: bool,
    #[command(flatten)]
    pub budget: super::BudgetArgs,
    #[command(flatten)]
    pub exit: super::ExitArgs,
}

pub fn main(a: RunArgs) -> anyhow::Result<()> {
    let scenario = load_scenario(&a.scenario)?;
    if scenario.torch.is_some() {
        return Err(crate::Failure::Input(format!(
            "{}: the scenario has [torch]: its workload is a program, run it with `ringside \
             torchrun {} -- PROGRAM`",
            a.scenario.display(),
            a.scenario.display()
        ))
        .into());
    }
    a.budget.memory.admit_file(&scenario, &a.scenario)?;
    let flag = interrupt_flag();
    let wall = a.budget.wall_clock_flag();
    let progress = Progress::new(a.quiet);
    let tick = |t, events| progress.run(t, events);
    let viewer = super::tui::ViewerArgs {
        no_mouse: a.no_mouse,
        light: a.light,
    }
    .options();
    if a.tui {
        super::tui::needs_terminal()?;
    }
    if a.tui && a.trace.is_none() {
        // nothing to keep: the trace stays in memory, under the same budgets as any run
        let recorded = ringside_tui::state::record_with(
            &scenario,
            &RunOptions {
                seed: a.seed,
                interrupt: Some(&flag),
                progress: Some(&tick),
                limits: a.budget.limits(wall.as_deref()),
                ..RunOptions::default()
            },
        );
        progress.finish();
        let (trace, report) = recorded?;
        super::tui::view(ringside_tui::Loaded::new(trace), viewer)?;
        return summary(&report, &flag, false, None);
    }
    let out = run(
        &scenario,
        &RunOptions {
            seed: a.seed,
            trace: a.trace.as_deref(),
            trace_level: a.trace_level,
            interrupt: Some(&flag),
            progress: Some(&tick),
            limits: a.budget.limits(wall.as_deref()),
            ..RunOptions::default()
        },
    );
    progress.finish();
    let out = out?;
    if let (true, Some(trace)) = (a.tui, &a.trace) {
        super::tui::open(trace, viewer)?;
    }
    summary(&out.report, &flag, a.json, a.trace.as_deref())?;
    Ok(a.exit.check(Some(out.report.outcome))?)
}

/// Prints the run's report (after the viewer, when it was opened); exit 1 when an
/// expectation failed.
fn summary(
    r: &ringside_sim::report::RunReport,
    flag: &std::sync::atomic::AtomicBool,
    json: bool,
    trace: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    if flag.load(Ordering::SeqCst) {
        let kept = if trace.is_some() {
            "; the trace so far is kept"
        } else {
            ""
        };
        eprintln!(
            "interrupted at {}{kept}",
            ringside_sim::units::fmt_ms(r.virtual_time_ns)
        );
    }
    if json {
        println!("{}", serde_json::to_string_pretty(r)?);
    } else {
        print!("{}", safe_lines(&r.human()));
        if let Some(t) = trace {
            println!("trace written to {}", t.display());
        }
    }
    if r.expect.ok {
        Ok(())
    } else {
        Err(Failure::Check(String::new()).into())
    }
}
