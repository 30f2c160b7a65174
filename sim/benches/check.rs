//! Swarm throughput: random 8-rank cases per second of wall time, each generated from its
//! seed, run, and checked against every property of the registry (determinism runs the case
//! again and replays its trace, so a case costs three runs).
//!
//! `cargo bench -p ringside-sim --bench check` reports cases per second as `elem/s`:
//! `all_properties` is what `ringside check` does per case; `generate_and_run` leaves the
//! properties out, to show their share.

#[path = "common/alloc.rs"]
mod alloc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ringside_sim::check::swarm::{Quiet, Swarm};
use ringside_sim::check::{Gen, Property};

const CASES: u64 = 64;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("swarm_8_ranks");
    g.sample_size(10);
    g.throughput(Throughput::Elements(CASES));
    for (name, properties) in [
        ("all_properties", Property::all().collect()),
        ("generate_and_run", Vec::new()),
    ] {
        let swarm = Swarm {
            seed: 1,
            cases: CASES,
            gen: Gen::ranks(8),
            properties,
            ..Swarm::default()
        };
        g.bench_function(name, |b| {
            b.iter(|| {
                let s = swarm.run(&mut Quiet);
                assert!(s.found.is_none(), "{:?}", s.found.map(|f| f.failure));
                assert_eq!(s.cases, CASES);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
