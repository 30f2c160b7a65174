//! `ringside sweep SCENARIO [--bytes A..B] [--json]`

use super::load_scenario;
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
}

pub fn main(a: SweepArgs) -> anyhow::Result<()> {
    let scenario = load_scenario(&a.scenario)?;
    let sizes = Sizes::parse(&a.bytes).context("--bytes")?;
    let rows = sweep(&scenario, sizes)?;
    if a.json {
        let text = serde_json::to_string_pretty(&rows)?;
        println!("{text}");
    } else {
        print!("{}", table(&rows));
    }
    Ok(())
}
