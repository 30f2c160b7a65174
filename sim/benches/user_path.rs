//! The user's path next to the engine: ring allreduce (1 MiB, one element per chunk, no trace)
//! at 1,024 and 4,096 ranks, timed as
//! - `engine`: the engine alone, no recorder;
//! - `run`: `ringside_sim::run::run`, what `ringside run` does once the scenario is read: the
//!   engine, the run's digest, the diagnosis and the report;
//! - `process`: `ringside run --json` as a whole process (when `target/release/ringside` or
//!   `RINGSIDE_BIN` exists: `cargo build --release` first);
//! - `bare_loop`: a bare event loop moving the same messages.
//!
//! `cargo bench -p ringside-sim --bench user_path`; `RINGSIDE_BENCH_RANKS=1024` runs one size.

#[path = "common/alloc.rs"]
mod alloc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ringside_sim::budget::Limits;
use ringside_sim::engine::Engine;
use ringside_sim::proto::collective::block_bytes;
use ringside_sim::proto::mutation::Mutations;
use ringside_sim::run::{run, RunOptions};
use ringside_sim::scenario::{self, Scenario};
use ringside_sim::trace::NullRecorder;
use std::path::PathBuf;

#[path = "common/bare.rs"]
mod bare;

fn scenario(p: u32) -> Scenario {
    scenario::parse(
        &format!(
            "name = \"ring-{p}\"\n[world]\nsize = {p}\n[workload]\nelements = {p}\n\
             [[workload.ops]]\nop = \"allreduce\"\nbytes = \"{p}KiB\"\n"
        ),
        "bench",
    )
    .expect("valid bench scenario")
}

fn binary() -> Option<PathBuf> {
    let bin = std::env::var_os("RINGSIDE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/ringside")
        });
    bin.exists().then_some(bin)
}

fn bench(c: &mut Criterion) {
    let sizes: Vec<u32> = match std::env::var("RINGSIDE_BENCH_RANKS") {
        Ok(v) => v.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        Err(_) => vec![1024, 4096],
    };
    let bin = binary();
    if bin.is_none() {
        eprintln!("no ringside binary at target/release/ringside: `process` is not timed");
    }
    for p in sizes {
        let s = scenario(p);
        let messages = 2 * u64::from(p - 1) * u64::from(p);
        let mut g = c.benchmark_group(format!("ring_allreduce_{p}"));
        g.sample_size(10);
        g.throughput(Throughput::Elements(messages));
        g.bench_function("engine", |b| {
            b.iter(|| {
                let mut rec = NullRecorder;
                let r = Engine::new(&s, 1, Mutations::NONE, &mut rec).run();
                assert_eq!(r.stats.messages_delivered, messages);
            })
        });
        g.bench_function("run", |b| {
            b.iter(|| {
                // the whole ring, past the default event budget at 4,096 ranks
                let opts = RunOptions {
                    limits: Limits::NONE,
                    ..RunOptions::seeded(1)
                };
                let out = run(&s, &opts).expect("runs");
                assert_eq!(out.result.stats.messages_delivered, messages);
            })
        });
        if let Some(bin) = &bin {
            let file = std::env::temp_dir().join(format!("ringside-user-path-{p}.toml"));
            std::fs::write(&file, toml::to_string(&s).expect("serializes")).expect("write");
            g.bench_function("process", |b| {
                b.iter(|| {
                    let o = std::process::Command::new(bin)
                        .args(["run", "--json", "--quiet", "--max-events"])
                        .arg((4 * messages + 1_000_000).to_string())
                        .arg(&file)
                        .output()
                        .expect("ringside runs");
                    assert!(o.status.success());
                    assert!(
                        String::from_utf8_lossy(&o.stdout).contains(r#""outcome": "completed""#),
                        "the whole ring runs"
                    );
                })
            });
        }
        let chunk = block_bytes(0, 1, p, s.workload.ops[0].bytes.0);
        let (latency, ser) = (s.network.latency.0, s.network.bandwidth.transfer_ns(chunk));
        g.bench_function("bare_loop", |b| {
            b.iter(|| assert_eq!(bare::bare_loop(p, latency, ser), messages))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
