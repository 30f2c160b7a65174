//! `ringside run SCENARIO [--seed N] [--trace FILE] [--json]`

use super::{interrupt_flag, load_scenario};
use crate::Failure;
use clap::Args;
use ringside_sim::run::{run, RunOptions};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

#[derive(Args)]
pub struct RunArgs {
    /// The scenario file (TOML, see scenarios/README.md).
    pub scenario: PathBuf,
    /// Overrides the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Writes the trace (JSON Lines) to this file.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Prints one JSON object instead of sentences.
    #[arg(long, conflicts_with = "tui")]
    pub json: bool,
    /// Opens the time-travel debugger on the run's trace instead of printing the report
    /// (the trace is kept in memory unless --trace names a file).
    #[arg(long)]
    pub tui: bool,
}

pub fn main(a: RunArgs) -> anyhow::Result<()> {
    let scenario = load_scenario(&a.scenario)?;
    let flag = interrupt_flag();
    if a.tui && a.trace.is_none() {
        // nothing to keep: the trace stays in memory
        let seed = a.seed.unwrap_or(scenario.seed);
        let trace = ringside_tui::state::record(&scenario, seed)?;
        return super::tui::view(ringside_tui::Loaded::new(trace));
    }
    let out = run(
        &scenario,
        &RunOptions {
            seed: a.seed,
            trace: a.trace.as_deref(),
            interrupt: Some(&flag),
            ..RunOptions::default()
        },
    )?;
    if let (true, Some(trace)) = (a.tui, &a.trace) {
        return super::tui::open(trace);
    }
    if flag.load(Ordering::SeqCst) {
        eprintln!(
            "interrupted at {}; the trace so far is kept",
            ringside_sim::units::fmt_ms(out.result.end_ns)
        );
    }
    let r = &out.report;
    if a.json {
        println!("{}", serde_json::to_string_pretty(r)?);
    } else {
        print!("{}", r.human());
        if let Some(t) = &a.trace {
            println!("trace written to {}", t.display());
        }
    }
    if r.expect.ok {
        Ok(())
    } else {
        Err(Failure::Check(String::new()).into())
    }
}
