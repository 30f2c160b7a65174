//! Engine throughput: ring allreduce on 1024 ranks with one element per chunk.
//!
//! `cargo bench -p ringside-sim --bench engine` reports delivered messages per second without a
//! trace, and trace events per second with a full JSON Lines trace written to a file.

#[path = "common/alloc.rs"]
mod alloc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ringside_sim::engine::Engine;
use ringside_sim::proto::mutation::Mutations;
use ringside_sim::scenario::{self, Scenario};
use ringside_sim::trace::{NullRecorder, TraceWriter};

fn scenario(p: u32, elements: u32) -> Scenario {
    scenario::parse(
        &format!(
            r#"
name = "bench-ring"
[world]
size = {p}
[workload]
elements = {elements}
[[workload.ops]]
op = "allreduce"
bytes = "{p}KiB"
"#
        ),
        "bench",
    )
    .expect("valid bench scenario")
}

fn bench(c: &mut Criterion) {
    let p = 1024;
    let s = scenario(p, p);
    let messages = 2 * u64::from(p - 1) * u64::from(p);
    let mut g = c.benchmark_group("ring_allreduce_1024");
    g.sample_size(10);
    g.throughput(Throughput::Elements(messages));
    g.bench_function("no_trace", |b| {
        b.iter(|| {
            let mut rec = NullRecorder;
            let mut e = Engine::new(&s, 1, Mutations::NONE, &mut rec);
            let r = e.run();
            assert_eq!(r.stats.messages_delivered, messages);
        })
    });
    // one trace line per event: count them once
    let dir = std::env::temp_dir().join("ringside-bench-trace.jsonl");
    let events = {
        let f = std::fs::File::create(&dir).expect("temp file");
        let mut w = TraceWriter::new(f, &s, 1).expect("header");
        let mut e = Engine::new(&s, 1, Mutations::NONE, &mut w);
        e.run();
        w.digest().events()
    };
    g.throughput(Throughput::Elements(events));
    g.bench_function("trace_to_file", |b| {
        b.iter(|| {
            let f = std::fs::File::create(&dir).expect("temp file");
            let mut w = TraceWriter::new(f, &s, 1).expect("header");
            let mut e = Engine::new(&s, 1, Mutations::NONE, &mut w);
            let r = e.run();
            w.finish(r.outcome).expect("trace written");
        })
    });
    g.finish();
    let _ = std::fs::remove_file(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
