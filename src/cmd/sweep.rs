//! `ringside sweep SCENARIO [--bytes A..B] [--json] [--max-events N] [--max-wall DURATION]`

use super::load_scenario;
use crate::progress::Progress;
use anyhow::Context;
use clap::Args;
use ringside_sim::sweep::{sweep, table, Sizes};
use std::path::PathBuf;

#[derive(Args)]
pub struct SweepArgs {
    /// The scenario whose ops, world, network and mesh are swept (faults are left out).
    pub scenario: PathBuf,
    /// Sizes A, 2A, 4A, ... up to B, e.g. 1KiB..1GiB.
    #[arg(long, default_value = "1KiB..64MiB")]
    pub bytes: String,
    /// Prints the rows as a JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Shows no progress on stderr (it shows only on a terminal, after a second).
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub budget: super::BudgetArgs,
}

pub fn main(a: SweepArgs) -> anyhow::Result<()> {
    let scenario = load_scenario(&a.scenario)?;
    a.budget.memory.admit_file(&scenario, &a.scenario)?;
    let sizes = Sizes::parse(&a.bytes).context("--bytes")?;
    // each run within --max-events; --max-wall for the whole sweep
    let wall = a.budget.wall_clock_flag();
    let limits = a.budget.limits(wall.as_deref());
    let progress = Progress::new(a.quiet);
    let swept = sweep(&scenario, sizes, &limits, &mut |done, runs| {
        progress.items(done as u64, runs as u64, "runs")
    });
    progress.finish();
    let swept = swept?;
    // the rows measured are printed even when a run stopped the sweep
    if a.json {
        let text = serde_json::to_string_pretty(&swept.rows)?;
        println!("{text}");
    } else if !swept.rows.is_empty() {
        // group names come from the scenario
        print!("{}", ringside_sim::text::safe_lines(&table(&swept.rows)));
    }
    match swept.incomplete {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}
