//! How long diagnosing a stall takes on a large world: fold a 4096-rank trace's events into
//! the state of every rank, then build the wait-for graph and find the root causes.
//!
//! The traces are made once, by the engine, before measuring:
//! - `ring4096`: a ring allreduce of one element over 4096 ranks; rank 0 is preempted before
//!   it starts. The chain of waits grows one step per latency from rank 1 on; the watchdog
//!   (1ms) fires while it is about 200 ranks long, the rest of the ring still in progress.
//! - `barrier4096`: a dissemination barrier over 4096 ranks with rank 0 preempted: every
//!   other rank ends up blocked, directly or transitively.
//!
//! Run with `cargo bench -p ringside-sim --bench diagnose`.

#[path = "common/alloc.rs"]
mod alloc;

use criterion::{criterion_group, criterion_main, Criterion};
use ringside_sim::diagnose::{diagnose, Fold};
use ringside_sim::run::{run_events, RunOptions};
use ringside_sim::scenario::{self, Scenario};
use ringside_sim::trace::{Event, VecRecorder};
use ringside_sim::units::Nanos;
use std::hint::black_box;
use std::time::Duration;

fn scenario(op: &str, bytes: &str, timeout: &str) -> Scenario {
    let text = format!(
        r#"
name = "big-{op}"
[world]
size = 4096
[network]
latency = "5us"
bandwidth = "25GB/s"
[group]
timeout = "{timeout}"
[workload]
iterations = 1
elements = 1
[[workload.ops]]
op = "{op}"
bytes = "{bytes}"
[[faults]]
kind = "preempt"
rank = 0
at = "0s"
"#
    );
    scenario::parse(&text, "bench.toml").expect("a valid scenario")
}

/// The events of a whole run of `s`, and its diagnosis summary.
fn trace(s: &Scenario) -> Vec<(Nanos, Event)> {
    let mut rec = VecRecorder::default();
    let (result, _, d) = run_events(s, &RunOptions::default(), &mut rec);
    eprintln!(
        "{}: {} events, outcome {}, {} blocked, {} in progress, root causes {:?}",
        s.name,
        rec.events.len(),
        result.outcome,
        d.blocked.len(),
        d.in_progress.len(),
        d.root_causes()
    );
    rec.events
}

fn fold(s: &Scenario, events: &[(Nanos, Event)]) -> Fold {
    let mut f = Fold::new(s);
    for (t, e) in events {
        f.apply(*t, e);
    }
    f
}

fn bench(c: &mut Criterion) {
    for (name, s) in [
        ("ring4096", scenario("allreduce", "4B", "1ms")),
        ("barrier4096", scenario("barrier", "0B", "1ms")),
    ] {
        let events = trace(&s);
        let folded = fold(&s, &events);
        let mut g = c.benchmark_group(name);
        g.sample_size(10)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(5));
        g.bench_function("fold+diagnose", |b| {
            b.iter(|| {
                let f = fold(&s, black_box(&events));
                black_box(diagnose(&f))
            })
        });
        g.bench_function("diagnose", |b| {
            b.iter(|| black_box(diagnose(black_box(&folded))))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
