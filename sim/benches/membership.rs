//! Rebuilding an elastic group: 1024 ranks, one preempted in the middle of the job.
//!
//! `cargo bench -p ringside-sim --bench membership` times the whole run without a trace: the
//! job starts, rank 512 dies, its ring neighbours stop hearing its heartbeats, the survivors
//! agree on generation 1 (1023 members) by quorum and finish the workload in it. The target is
//! under 2 s; `cargo run --release -p ringside-sim --example rebuild_bench` is the same run
//! once, for profiling.

#[path = "common/alloc.rs"]
mod alloc;
#[path = "common/rebuild.rs"]
mod rebuild;

use criterion::{criterion_group, criterion_main, Criterion};
use rebuild::scenario;
use ringside_sim::engine::Engine;
use ringside_sim::proto::mutation::Mutations;
use ringside_sim::scenario::Outcome;
use ringside_sim::trace::NullRecorder;

fn bench(c: &mut Criterion) {
    let p = 1024;
    let s = scenario(p);
    let mut g = c.benchmark_group("elastic_rebuild_1024");
    g.sample_size(10);
    g.bench_function("one_preemption", |b| {
        b.iter(|| {
            let mut rec = NullRecorder;
            let mut e = Engine::new(&s, 1, Mutations::NONE, &mut rec);
            let r = e.run();
            assert_eq!(r.outcome, Outcome::Rebuilt);
            let g: Vec<_> = e.generations().collect();
            assert_eq!(g.len(), 1);
            assert_eq!(g[0].1.len(), p as usize - 1);
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
