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
    /// Opens the time-travel debugger on the run's trace (kept only with --trace).
    #[arg(long)]
    pub tui: bool,
}

/// A trace file in the temporary directory, removed on drop.
struct TempTrace(PathBuf);

impl TempTrace {
    fn new(name: &str) -> TempTrace {
        let safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        TempTrace(
            std::env::temp_dir().join(format!("ringside-{}-{safe}.jsonl", std::process::id())),
        )
    }
}

impl Drop for TempTrace {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn main(a: RunArgs) -> Result<(), Failure> {
    let scenario = load_scenario(&a.scenario)?;
    let flag = interrupt_flag();
    // the viewer reads the trace back: without --trace it goes to a temporary file
    let temp = (a.tui && a.trace.is_none()).then(|| TempTrace::new(&scenario.name));
    let trace = a.trace.as_deref().or(temp.as_ref().map(|t| t.0.as_path()));
    let out = run(
        &scenario,
        &RunOptions {
            seed: a.seed,
            trace,
            interrupt: Some(&flag),
        },
    )?;
    if a.tui {
        return super::tui::open(trace.expect("a trace path is set with --tui"));
    }
    if flag.load(Ordering::SeqCst) {
        eprintln!(
            "interrupted at {}; the trace so far is kept",
            ringside_sim::units::fmt_ms(out.result.end_ns)
        );
    }
    let r = &out.report;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(r).map_err(|e| Failure::Input(e.to_string()))?
        );
    } else {
        print!("{}", r.human());
        if let Some(t) = &a.trace {
            println!("trace written to {}", t.display());
        }
    }
    if r.expect.ok {
        Ok(())
    } else {
        Err(Failure::Check(String::new()))
    }
}
