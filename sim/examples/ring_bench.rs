//! A one-shot throughput run for profiling: `cargo run --release -p ringside-sim --example
//! ring_bench -- [ranks] [trace-file]`; `RINGSIDE_ELEMENTS` sets the per-rank buffer size
//! (default: one element per chunk).

use ringside_sim::engine::Engine;
use ringside_sim::scenario;
use ringside_sim::trace::{NullRecorder, TraceWriter};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let p: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1024);
    // one element per chunk by default; RINGSIDE_ELEMENTS overrides the per-rank buffer size
    let elements: u32 = std::env::var("RINGSIDE_ELEMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(p);
    let s = scenario::parse(
        &format!(
            "name = \"ring\"\n[world]\nsize = {p}\n[workload]\nelements = {elements}\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"{p}KiB\"\n"
        ),
        "bench",
    )
    .expect("valid");
    #[allow(clippy::disallowed_methods)]
    let start = std::time::Instant::now();
    let (stats, events) = match args.get(2) {
        Some(path) => {
            let f = std::fs::File::create(path).expect("create trace");
            let mut w = TraceWriter::new(f, &s, 1).expect("header");
            let mut e = Engine::new(&s, 1, &mut w);
            let r = e.run();
            let n = w.digest().lines();
            w.finish(r.outcome).expect("written");
            (r.stats, n)
        }
        None => {
            let mut rec = NullRecorder;
            let mut e = Engine::new(&s, 1, &mut rec);
            (e.run().stats, 0)
        }
    };
    let secs = start.elapsed().as_secs_f64();
    println!(
        "p={p}: {} messages delivered in {:.3}s = {:.2} M msg/s; {} trace events = {:.2} M events/s",
        stats.messages_delivered,
        secs,
        stats.messages_delivered as f64 / secs / 1e6,
        events,
        events as f64 / secs / 1e6
    );
}
