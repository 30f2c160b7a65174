//! Opening and seeking in million-event traces.
//!
//! `cargo bench -p ringside-tui --bench seek` builds two traces of about a million events —
//! `long`: 3 ranks, 13,000 iterations of allreduce + barrier (many collectives); `wide`: 1,024
//! ranks, 40 barriers, one rank preempted (many ranks) — writes them to files, then measures:
//! - `open`: read the file, fold it once with checkpoints and markers (what `ringside tui`
//!   does before the first frame); `open_zst`: the same from the zstd-compressed trace;
//! - `fold_at_worst`: build the state just before a checkpoint (the most events to replay)
//!   from scratch, and diagnose it;
//! - `step_back_worst`: one event back from there, as the left arrow does;
//! - `seek_random`: jump between positions spread over the trace, each from the last, and
//!   diagnose (what the viewer does on every key that moves the cursor).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use ringside_sim::diagnose::diagnose;
use ringside_sim::run::{run, RunOptions};
use ringside_sim::scenario::{self, Scenario};
use ringside_tui::state::Loaded;
use std::hint::black_box;
use std::path::PathBuf;

const LONG: &str = r#"
name = "bench-long"
seed = 1
[world]
size = 3
[network]
latency = "5us"
bandwidth = "25GB/s"
[workload]
iterations = 13000
compute = "10ms"
elements = 64
[[workload.ops]]
op = "allreduce"
bytes = "64MiB"
[[workload.ops]]
op = "barrier"
"#;

const WIDE: &str = r#"
name = "bench-wide"
seed = 1
[world]
size = 1024
[network]
latency = "5us"
bandwidth = "25GB/s"
[group]
timeout = "2s"
[workload]
iterations = 40
compute = "1ms"
elements = 4
[[workload.ops]]
op = "barrier"
[[faults]]
kind = "preempt"
rank = 700
at = "30ms"
"#;

/// Writes the trace of `s` to a file whose name ends in `ext` (`.zst`: compressed).
fn write_trace(s: &Scenario, ext: &str) -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("ringside-{}-{}{ext}", s.name, std::process::id()));
    let opts = RunOptions {
        trace: Some(&path),
        ..RunOptions::default()
    };
    run(s, &opts).expect("write the bench trace");
    path
}

fn bench(c: &mut Criterion) {
    for toml in [LONG, WIDE] {
        let s = scenario::parse(toml, "bench").expect("valid bench scenario");
        let path = write_trace(&s, ".jsonl");
        let zst = write_trace(&s, ".jsonl.zst");
        let mut g = c.benchmark_group(s.name.clone());
        g.sample_size(10);
        g.bench_function("open", |b| {
            b.iter(|| Loaded::open(&path).expect("readable"))
        });
        g.bench_function("open_zst", |b| {
            b.iter(|| Loaded::open(&zst).expect("readable"))
        });
        let _ = std::fs::remove_file(&zst);
        let loaded = Loaded::open(&path).expect("readable");
        let n = loaded.len();
        let k = loaded.history.interval();
        eprintln!(
            "{}: {n} events, {} ranks, a checkpoint every {k} events ({} checkpoints), first stall {:?}",
            s.name,
            s.world.size,
            loaded.history.checkpoints(),
            loaded.markers.first_stall
        );
        g.sample_size(50);
        // the most events to replay: just before a checkpoint, built from scratch
        let worst: Vec<usize> = (1..=8).map(|i| (n * i / 9 / k) * k + k - 1).collect();
        g.bench_function("fold_at_worst", |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % worst.len();
                let f = loaded.fold_at(worst[i]);
                black_box(diagnose(&f))
            })
        });
        // one event back from just before a checkpoint, as the left arrow does
        g.bench_function("step_back_worst", |b| {
            let mut i = 0;
            b.iter_batched(
                || {
                    i = (i + 1) % worst.len();
                    (loaded.fold_at(worst[i]), worst[i])
                },
                |(f, p)| {
                    let f = loaded.history.seek(loaded.events(), f, p, p - 1);
                    black_box(diagnose(&f))
                },
                BatchSize::LargeInput,
            )
        });
        // jumps between positions spread over the trace, each from the previous one
        let spread: Vec<usize> = (0..64).map(|i| (i * 7919 * 131) % (n + 1)).collect();
        g.bench_function("seek_random", |b| {
            let mut i = 0;
            let mut cur = Some((loaded.fold_at(0), 0));
            b.iter(|| {
                i = (i + 1) % spread.len();
                let (f, p) = cur.take().expect("a current fold");
                let f = loaded.history.seek(loaded.events(), f, p, spread[i]);
                black_box(diagnose(&f));
                cur = Some((f, spread[i]));
            })
        });
        g.finish();
        let _ = std::fs::remove_file(&path);
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
