//! A one-shot run of an elastic rebuild, for profiling: `cargo run --release -p ringside-sim
//! --example rebuild_bench -- [ranks] [trace-file]`. One rank of the world is preempted in the
//! middle of the job; the others detect it, agree on the next generation and finish.

#[path = "../benches/common/alloc.rs"]
mod alloc;
#[path = "../benches/common/rebuild.rs"]
mod rebuild;

use ringside_sim::engine::Engine;
use ringside_sim::proto::mutation::Mutations;
use ringside_sim::trace::{NullRecorder, TraceWriter};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let p: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1024);
    let s = rebuild::scenario(p);
    #[allow(clippy::disallowed_methods)]
    let start = std::time::Instant::now();
    let (r, generations) = match args.get(2) {
        Some(path) => {
            let f = std::fs::File::create(path).expect("create trace");
            let mut w = TraceWriter::new(f, &s, 1).expect("header");
            let mut e = Engine::new(&s, 1, Mutations::NONE, &mut w);
            let r = e.run();
            let g = e.generations().count();
            drop(e);
            w.finish(r.outcome).expect("trace written");
            (r, g)
        }
        None => {
            let mut rec = NullRecorder;
            let mut e = Engine::new(&s, 1, Mutations::NONE, &mut rec);
            let r = e.run();
            let g = e.generations().count();
            (r, g)
        }
    };
    let wall = start.elapsed();
    println!(
        "{p} ranks: {} after {} generation(s) at {:.3}ms virtual; {} messages, {} events; {:.3}s wall",
        r.outcome,
        generations + 1,
        r.end_ns as f64 / 1e6,
        r.stats.messages_sent,
        r.stats.events,
        wall.as_secs_f64()
    );
}
