//! Every allreduce algorithm through the engine, trace off: messages per second.
//!
//! `cargo bench -p ringside-sim --bench allreduce` runs each algorithm on RINGSIDE_BENCH_RANKS
//! ranks (default 1024; 8 ranks per host, with an intra-host link) allreducing 1 MiB with 64
//! real elements per rank. For one-shot wall times at 4096 ranks, where criterion's ten samples
//! per algorithm would take minutes, use the `allreduce_bench` example instead.

#[path = "common/alloc.rs"]
mod alloc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ringside_sim::engine::Engine;
use ringside_sim::proto::mutation::Mutations;
use ringside_sim::scenario::{self, OpKind, Outcome, Scenario};
use ringside_sim::trace::NullRecorder;

fn scenario(p: u32, algorithm: &str) -> Scenario {
    scenario::parse(
        &format!(
            "name = \"bench-allreduce\"\n[world]\nsize = {p}\nranks_per_host = 8\n\
             [network]\nlatency = \"5us\"\nbandwidth = \"25GB/s\"\n\
             [network.intra_host]\nlatency = \"1us\"\nbandwidth = \"300GB/s\"\n\
             [workload]\nelements = 64\n\
             [[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\nalgorithm = \"{algorithm}\"\n"
        ),
        "bench",
    )
    .expect("valid bench scenario")
}

fn bench(c: &mut Criterion) {
    let p: u32 = std::env::var("RINGSIDE_BENCH_RANKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let mut g = c.benchmark_group(format!("allreduce_{p}_1MiB"));
    g.sample_size(10);
    for a in OpKind::Allreduce.algorithms() {
        let s = scenario(p, a.name());
        // count the messages once, to report messages per second
        let messages = {
            let mut rec = NullRecorder;
            let r = Engine::new(&s, 1, Mutations::NONE, &mut rec).run();
            assert_eq!(r.outcome, Outcome::Completed, "{a}");
            r.stats.messages_delivered
        };
        g.throughput(Throughput::Elements(messages));
        g.bench_function(a.name(), |b| {
            b.iter(|| {
                let mut rec = NullRecorder;
                Engine::new(&s, 1, Mutations::NONE, &mut rec).run()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
