//! The per-call overhead of `ringside torchrun`: the `ringside` backend, the socket and the
//! lockstep, for 10,000 all_reduce of 1 KiB at 8 ranks (`examples/torch/bench_allreduce.py`
//! on `scenarios/torch/eight-ranks.toml`), on a real torch.
//!
//! `cargo bench -p ringside-sim --bench torch` with the venv of the torch tests
//! (`$RINGSIDE_TORCH_VENV`, by default `~/.cache/ringside/torch-2.15.0`, with the `ringside`
//! package installed in it: `.ci/run` makes it); without it the bench says so and ends.
//! `RINGSIDE_BENCH_CALLS` and `RINGSIDE_BENCH_RANKS` change the count and the size.
//!
//! Prints, per call: the wall-clock time (every rank's wait for the others in it), the CPU time
//! of the lockstep and the engine (this process), and the CPU time rank 0's process spent (the
//! backend, torch's dispatch and the socket); and the wall-clock time per rank-call, the call's
//! time divided by the ranks that made it.

use ringside_sim::driver::torch::{torchrun, TorchOptions};
use ringside_sim::scenario::{self, Outcome};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn venv() -> Option<PathBuf> {
    let dir = match std::env::var_os("RINGSIDE_TORCH_VENV") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/ringside/torch-2.15.0"),
    };
    dir.join("bin/python").exists().then(|| dir.join("bin"))
}

/// This process's CPU time (user and system) so far.
fn cpu() -> std::time::Duration {
    let r = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .expect("getrusage");
    let us = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64;
    std::time::Duration::from_micros(us(r.user_time()) + us(r.system_time()))
}

#[allow(clippy::disallowed_methods)] // a benchmark reads the wall clock, by design
fn main() {
    let Some(bin) = venv() else {
        eprintln!(
            "no torch venv (RINGSIDE_TORCH_VENV, or ~/.cache/ringside/torch-2.15.0): skipped"
        );
        return;
    };
    let env = |k: &str, d: u32| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let calls = env("RINGSIDE_BENCH_CALLS", 10_000);
    let ranks = env("RINGSIDE_BENCH_RANKS", 8);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = root.join("scenarios/torch/eight-ranks.toml");
    let text = std::fs::read_to_string(&path).expect("the shipped scenario");
    let mut s = scenario::parse(&text, &path.display().to_string()).expect("valid scenario");
    s.world.size = ranks;
    let program: Vec<String> = [
        bin.join("python").display().to_string(),
        root.join("examples/torch/bench_allreduce.py")
            .display()
            .to_string(),
        calls.to_string(),
    ]
    .into();
    // the backend from this checkout, whatever the venv holds
    std::env::set_var("PYTHONPATH", root.join("python"));
    std::env::set_var("PYTHONWARNINGS", "ignore");
    let (cpu0, t0) = (cpu(), Instant::now());
    let out = torchrun(&s, &program, &TorchOptions::default()).expect("torchrun runs");
    let (cpu, wall) = (cpu() - cpu0, t0.elapsed());
    assert_eq!(
        out.run.result.outcome,
        Outcome::Completed,
        "{}",
        out.run.report.human()
    );
    let per = |d: std::time::Duration| d.as_secs_f64() * 1e6 / f64::from(calls);
    println!(
        "torchrun, {calls} all_reduce of 1 KiB on {ranks} ranks: {:.1} s in all (with the \
         processes' start and import torch); lockstep and engine {:.1} us CPU per call, \
         {:.1} us per rank-call",
        wall.as_secs_f64(),
        per(cpu),
        per(cpu) / f64::from(ranks),
    );
}
