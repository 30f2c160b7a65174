//! `ringside worker ...`: one process of a real run, started by `ringside launch`, which
//! writes the job's key (64 hexadecimal digits and a newline) to the worker's standard input.

use anyhow::{bail, Context};
use clap::Args;
use ringside_sim::driver::tcp::auth::JobKey;
use ringside_sim::driver::tcp::worker::{run, WorkerConfig};
use ringside_sim::driver::tcp::TimeScale;
use ringside_sim::scenario;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

#[derive(Args)]
pub struct WorkerArgs {
    /// The scenario, as JSON (launch writes it).
    #[arg(long)]
    pub scenario_json: PathBuf,
    #[arg(long)]
    pub seed: u64,
    /// This process's node: a rank, or the store (node `world.size`).
    #[arg(long)]
    pub rank: u32,
    #[arg(long, default_value_t = 0)]
    pub incarnation: u32,
    /// The rendezvous address of `launch`.
    #[arg(long)]
    pub rendezvous: SocketAddr,
    /// The job id every frame carries.
    #[arg(long)]
    pub job: u64,
    /// Writes this process's events here.
    #[arg(long)]
    pub trace: PathBuf,
    /// Address to accept peers on (each must prove the job's key).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
}

/// The job's key from standard input: one line, read with a bound.
fn read_key() -> anyhow::Result<JobKey> {
    use std::io::Read;
    let mut line = Vec::new();
    std::io::stdin()
        .lock()
        .take(256)
        .read_to_end(&mut line)
        .context("reading the job key from standard input")?;
    let text = String::from_utf8_lossy(&line);
    JobKey::from_hex(text.lines().next().unwrap_or(""))
        .map_err(|e| anyhow::anyhow!("standard input: {e} (ringside launch writes it there)"))
}

pub fn main(a: WorkerArgs) -> anyhow::Result<()> {
    let key = read_key()?;
    let file = a.scenario_json.display().to_string();
    let text = std::fs::read_to_string(&a.scenario_json).context(file.clone())?;
    let value: serde_json::Value = serde_json::from_str(&text).context(file.clone())?;
    let sc = scenario::parse_json(&value, &file)?;
    if a.rank >= ringside_sim::driver::tcp::nodes(&sc) {
        bail!(
            "--rank {}: the scenario has {} nodes",
            a.rank,
            ringside_sim::driver::tcp::nodes(&sc)
        );
    }
    run(WorkerConfig {
        scenario: sc,
        seed: a.seed,
        rank: a.rank,
        incarnation: a.incarnation,
        rendezvous: a.rendezvous,
        bind: a.bind,
        job: a.job,
        key,
        trace: a.trace,
        scale: TimeScale(a.time_scale),
    })
    .with_context(|| format!("worker {}", a.rank))
}
