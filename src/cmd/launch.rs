//! `ringside launch SCENARIO [--nprocs N]`: the scenario's workload as real OS processes over
//! loopback TCP, with the same protocol code (see `ringside_sim::driver::tcp`).

use super::load_scenario;
use crate::Failure;
use anyhow::{bail, Context};
use clap::Args;
use ringside_sim::driver::tcp::auth::{random_bytes, JobKey};
use ringside_sim::driver::tcp::launch::{check_limits, launch, unemulated, LaunchConfig};
use ringside_sim::driver::tcp::TimeScale;
use ringside_sim::scenario;
use ringside_sim::units::Duration;
use std::net::IpAddr;
use std::path::PathBuf;

#[derive(Args)]
pub struct LaunchArgs {
    /// The scenario file (TOML, see scenarios/README.md).
    pub scenario: PathBuf,
    /// Number of ranks (default: the scenario's `world.size`).
    #[arg(long)]
    pub nprocs: Option<u32>,
    /// Overrides the scenario's seed (it decides the ranks' input data).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Writes the merged trace (JSON Lines) to this file.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Prints one JSON object instead of sentences.
    #[arg(long)]
    pub json: bool,
    /// Address the rendezvous and the workers listen on. Every connection must prove the
    /// job's random key (see the threat model in README.md).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Wall-clock seconds per second of scenario time: 0.5 runs compute, timeouts and fault
    /// times twice as fast.
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Stop the run at this scenario time (default: `time_limit`, else a bound computed from
    /// the faults, the timeout and the workload).
    #[arg(long)]
    pub deadline: Option<String>,
    /// Keep each process's trace and log in this directory (default: a temporary directory,
    /// removed at the end).
    #[arg(long)]
    pub workdir: Option<PathBuf>,
    /// Run even though the scenario has network faults (partition, delay, loss), which are not
    /// emulated for real: they are left out of the run.
    #[arg(long)]
    pub ignore_unsupported: bool,
    /// Prints each worker's address to stderr.
    #[arg(long)]
    pub verbose: bool,
}

/// Names the job's key in launch's environment instead of a random one (64 hexadecimal
/// digits), for a tool of yours that joins the run as a peer; removed once read.
pub const KEY_VAR: &str = "RINGSIDE_JOB_KEY";

/// The job's key: [`KEY_VAR`] if set, else fresh random bytes from the operating system.
fn job_key() -> anyhow::Result<JobKey> {
    let Some(v) = std::env::var_os(KEY_VAR) else {
        return Ok(JobKey::random()?);
    };
    // the workers must not inherit it (they get the key on their standard input), and no
    // other process of the user may read it from this one's environment
    scrub_initial_environment(KEY_VAR);
    std::env::remove_var(KEY_VAR);
    JobKey::from_hex(&v.to_string_lossy()).map_err(|e| anyhow::anyhow!("{KEY_VAR}: {e}"))
}

/// Overwrites the value of `name` where this process's environment began: `/proc/PID/environ`
/// shows that block to every process of the user for as long as this one runs, whatever
/// `remove_var` does to the environment the program sees.
fn scrub_initial_environment(name: &str) {
    let Ok(name) = std::ffi::CString::new(name) else {
        return;
    };
    // SAFETY: getenv returns null or a pointer to the value's NUL-terminated bytes, in the
    // environment block this process owns and may write; launch has started no other thread
    // that could read or change the environment meanwhile.
    unsafe {
        let value = nix::libc::getenv(name.as_ptr());
        if !value.is_null() {
            std::ptr::write_bytes(value, 0, nix::libc::strlen(value));
        }
    }
}

pub fn main(a: LaunchArgs) -> anyhow::Result<()> {
    let mut sc = load_scenario(&a.scenario)?;
    let file = a.scenario.display();
    if let Some(n) = a.nprocs {
        sc.world.size = n;
        if let Err((key, msg)) = scenario::validate(&sc) {
            bail!("{file}: --nprocs {n}: {key}: {msg}");
        }
    }
    let kinds = unemulated(&sc);
    if !kinds.is_empty() {
        let msg = format!(
            "{file}: {} faults are not emulated by a real run (only preempt, pause, \
             restart_after, slow and the application bugs are)",
            kinds.join(", ")
        );
        if !a.ignore_unsupported {
            bail!("{msg}; pass --ignore-unsupported to run without them");
        }
        eprintln!("warning: {msg}: running without them");
    }
    let deadline = match &a.deadline {
        Some(s) => Some(Duration::parse(s).context("--deadline")?.0),
        None => None,
    };
    if let Err(msg) = check_limits(&sc, a.time_scale, deadline) {
        match a.nprocs {
            Some(n) if msg.contains("processes") => bail!("{file}: --nprocs {n}: {msg}"),
            _ => bail!("{file}: {msg}"),
        }
    }
    let key = job_key()?;
    let (workdir, temporary) = match &a.workdir {
        Some(d) => (d.clone(), false),
        None => {
            let tag: String = random_bytes::<8>()?
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            (
                std::env::temp_dir().join(format!("ringside-launch-{tag}")),
                true,
            )
        }
    };
    std::fs::create_dir_all(&workdir)
        .with_context(|| format!("cannot create {}", workdir.display()))?;
    let scenario_json = serde_json::to_vec(&sc)?;
    std::fs::write(workdir.join("scenario.json"), scenario_json)?;
    let cfg = LaunchConfig {
        seed: a.seed.unwrap_or(sc.seed),
        scenario: sc,
        exe: std::env::current_exe()?,
        bind: a.bind,
        scale: TimeScale(a.time_scale),
        workdir: workdir.clone(),
        deadline,
        verbose: a.verbose,
        key,
    };
    let trace = a
        .trace
        .clone()
        .unwrap_or_else(|| workdir.join("trace.jsonl"));
    let result = launch(&cfg, &trace);
    if temporary {
        let _ = std::fs::remove_dir_all(&workdir);
    }
    let out = result.context("launch")?;
    let r = &out.report;
    if a.json {
        println!("{}", serde_json::to_string_pretty(r)?);
    } else {
        println!(
            "real run: {} processes over TCP on {} (times are wall-clock{})",
            ringside_sim::driver::tcp::nodes(&cfg.scenario),
            a.bind,
            if a.time_scale == 1.0 {
                String::new()
            } else {
                format!(", divided by the time scale {}", a.time_scale)
            }
        );
        print!("{}", ringside_sim::text::safe_lines(&r.human()));
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
