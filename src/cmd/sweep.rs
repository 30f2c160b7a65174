//! `ringside sweep SCENARIO [--bytes A..B] [--json]`

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
    pub memory: super::MemoryLimit,
}

pub fn main(a: SweepArgs) -> anyhow::Result<()> {
    let scenario = load_scenario(&a.scenario)?;
    a.memory.admit_file(&scenario, &a.scenario)?;
    let sizes = Sizes::parse(&a.bytes).context("--bytes")?;
    let progress = Progress::new(a.quiet);
    let rows = sweep(&scenario, sizes, &mut |done, runs| {
        progress.items(done as u64, runs as u64, "runs")
    });
    progress.finish();
    let rows = rows?;
    if a.json {
        let text = serde_json::to_string_pretty(&rows)?;
        println!("{text}");
    } else {
        print!("{}", table(&rows));
    }
    Ok(())
}
