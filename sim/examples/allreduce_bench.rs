//! One-shot wall time and message rate of every allreduce algorithm at scale, trace off:
//! `cargo run --release -p ringside-sim --example allreduce_bench -- [ranks] [bytes] [algorithm]
//! [elements]` (defaults: 4096 ranks, 1MiB, `all` algorithms, 64 real elements per rank). Ranks sit 8 to a host, with an intra-host
//! link, so that `hierarchical` has hosts to work with.

#[path = "../benches/common/alloc.rs"]
mod alloc;

use ringside_sim::engine::Engine;
use ringside_sim::proto::mutation::Mutations;
use ringside_sim::scenario::{self, Algorithm, OpKind, Outcome};
use ringside_sim::trace::NullRecorder;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let p: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(4096);
    let bytes = args.get(2).map_or("1MiB", String::as_str);
    let only = args.get(3).filter(|a| *a != "all");
    let elements: u32 = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(64);
    println!(
        "{:<20} {:>12} {:>10} {:>12} {:>14}",
        "algorithm", "messages", "wall", "M msg/s", "virtual time"
    );
    for a in OpKind::Allreduce.algorithms() {
        if only.is_some_and(|o| o != a.name()) {
            continue;
        }
        let s = scenario::parse(&bench_scenario(p, bytes, *a, elements), "bench").expect("valid");
        #[allow(clippy::disallowed_methods)]
        let start = std::time::Instant::now();
        let mut rec = NullRecorder;
        let r = Engine::new(&s, 1, Mutations::NONE, &mut rec).run();
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(r.outcome, Outcome::Completed, "{a}");
        let m = r.stats.messages_delivered;
        println!(
            "{:<20} {:>12} {:>9.3}s {:>12.2} {:>14}",
            a.name(),
            m,
            secs,
            m as f64 / secs / 1e6,
            ringside_sim::units::fmt_time(r.end_ns)
        );
    }
}

/// p ranks, 8 per host, one allreduce of `bytes` with `algorithm`, `elements` real elements.
pub fn bench_scenario(p: u32, bytes: &str, algorithm: Algorithm, elements: u32) -> String {
    format!(
        "name = \"allreduce-bench\"\n[world]\nsize = {p}\nranks_per_host = 8\n\
         [network]\nlatency = \"5us\"\nbandwidth = \"25GB/s\"\n\
         [network.intra_host]\nlatency = \"1us\"\nbandwidth = \"300GB/s\"\n\
         [workload]\nelements = {elements}\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"{bytes}\"\nalgorithm = \"{algorithm}\"\n"
    )
}
