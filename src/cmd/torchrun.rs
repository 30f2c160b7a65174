//! `ringside torchrun SCENARIO [--nproc N] [--seed S] [--json] [--trace FILE] [--fr DIR] -- PROGRAM ARGS...`

use super::{interrupt_flag, load_scenario};
use crate::Failure;
use clap::Args;
use ringside_sim::driver::torch::{torchrun, Exit, TorchOptions};
use std::path::PathBuf;

#[derive(Args)]
pub struct TorchrunArgs {
    /// The scenario: the simulated cluster and its faults (its `[workload]` may be omitted:
    /// the program is the workload).
    pub scenario: PathBuf,
    /// The number of processes (default: the scenario's `[world] size`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub nproc: Option<u32>,
    /// Overrides the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Writes the trace (JSON Lines; zstd-compressed when the name ends in `.zst`).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Writes one PyTorch Flight Recorder dump per rank into this directory (pickle, named
    /// `comm_lib_trace_rank_<R>` as torch names them, each record's stack frame the program's
    /// call site): what the program's ranks would have dumped, for torch's own `fr_trace` or
    /// `ringside import`.
    #[arg(long, value_name = "DIR")]
    pub fr: Option<PathBuf>,
    /// Prints one JSON object instead of sentences (the program's standard output then goes
    /// to standard error).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub budget: super::BudgetArgs,
    /// The program and its arguments, e.g. `python train.py --steps 20`.
    #[arg(last = true, required = true, num_args = 1..)]
    pub program: Vec<String>,
}

pub fn main(a: TorchrunArgs) -> anyhow::Result<()> {
    let mut scenario = load_scenario(&a.scenario)?;
    if let Some(n) = a.nproc {
        scenario.world.size = n;
    }
    if scenario.torch.is_none() {
        scenario.torch = Some(Default::default());
    }
    // the dumps are written from the trace: a scratch one when none is asked for
    let scratch = match (&a.fr, &a.trace) {
        (Some(_), None) => Some(Scratch(
            std::env::temp_dir().join(format!("ringside-torchrun-{}.jsonl", std::process::id())),
        )),
        _ => None,
    };
    let trace = match &scratch {
        Some(s) => Some(s.0.clone()),
        None => a.trace.clone(),
    };
    let flag = interrupt_flag();
    let wall = a.budget.wall_clock_flag();
    let out = torchrun(
        &scenario,
        &a.program,
        &TorchOptions {
            seed: a.seed,
            trace: trace.as_deref(),
            interrupt: Some(&flag),
            limits: a.budget.limits(wall.as_deref()),
            stdout_to_stderr: a.json,
            ..TorchOptions::default()
        },
    )?;
    let r = &out.run.report;
    let exits: Vec<serde_json::Value> = out
        .exits
        .iter()
        .enumerate()
        .map(|(rank, e)| {
            let (code, signal) = match e {
                Some(Exit::Code(c)) => (Some(*c), None),
                Some(Exit::Signal(s)) => (None, Some(*s)),
                None => (None, None),
            };
            serde_json::json!({"rank": rank, "code": code, "signal": signal})
        })
        .collect();
    if a.json {
        let mut v = serde_json::to_value(r)?;
        if let Some(blocked) = v.get_mut("blocked").and_then(|b| b.as_array_mut()) {
            for b in blocked {
                let rank = b.get("rank").and_then(|r| r.as_u64());
                let site = out
                    .blocked_sites
                    .iter()
                    .find(|(r, _)| Some(u64::from(*r)) == rank);
                if let (Some(o), Some((_, site))) = (b.as_object_mut(), site) {
                    o.insert("call_site".into(), site.clone().into());
                }
            }
        }
        if let Some(o) = v.as_object_mut() {
            o.insert("ranks_exit".into(), exits.into());
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", ringside_sim::text::safe_lines(&r.human()));
        for (rank, site) in &out.blocked_sites {
            println!("  rank {rank} was blocked in the call at {site}");
        }
        println!("{}", exit_line(&out.exits));
        if let Some(t) = &a.trace {
            println!("trace written to {}", t.display());
        }
    }
    if let (Some(dir), Some(trace)) = (&a.fr, &trace) {
        // pickle, as torch writes them (the only form with stack frames, and the one torch's
        // fr_trace reads), each record's frame the program's call site
        let sites = out.sites.iter().cloned().collect();
        let dumps = ringside_sim::fr::export::export_with_sites(trace, dir, true, sites)
            .map_err(|e| anyhow::anyhow!("--fr {}: {e}", dir.display()))?;
        let silent = match dumps.silent.is_empty() {
            true => String::new(),
            false => format!(
                " (none from {}: dead or frozen at the end, as in a real job)",
                ringside_sim::diagnose::ranks_phrase(&dumps.silent)
            ),
        };
        eprintln!(
            "{}: {} Flight Recorder dumps{silent}",
            dir.display(),
            dumps.files.len()
        );
    }
    for (rank, what) in &out.errors {
        eprintln!("rank {rank} broke the protocol and was stopped: {what}");
    }
    if r.expect.ok {
        Ok(())
    } else {
        Err(Failure::Check(String::new()).into())
    }
}

/// A scratch file, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `ranks exited: 0-2 with 0, 3 killed by signal 9`.
fn exit_line(exits: &[Option<Exit>]) -> String {
    let mut by: Vec<(String, Vec<usize>)> = Vec::new();
    for (rank, e) in exits.iter().enumerate() {
        let how = match e {
            Some(Exit::Code(c)) => format!("with {c}"),
            Some(Exit::Signal(s)) => format!("killed by signal {s}"),
            None => "unknown".into(),
        };
        match by.iter_mut().find(|(h, _)| *h == how) {
            Some((_, ranks)) => ranks.push(rank),
            None => by.push((how, vec![rank])),
        }
    }
    let parts: Vec<String> = by
        .iter()
        .map(|(how, ranks)| {
            let list: Vec<String> = ranks.iter().map(|r| r.to_string()).collect();
            format!("{} {how}", list.join(","))
        })
        .collect();
    format!("ranks exited: {}", parts.join("; "))
}
