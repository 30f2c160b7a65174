//! A one-shot throughput run for profiling: `cargo run --release -p ringside-sim --example
//! ring_bench -- [ranks] [trace-file]`; `RINGSIDE_ELEMENTS` sets the per-rank buffer size
//! (default: one element per chunk), `RINGSIDE_RUNS` how many times to run (default 1).
//!
//! With several runs it prints the best and the median, and times, run for run, a bare event
//! loop that moves the same messages (a binary heap of (time, seq), one buffer and one step
//! counter per rank, the same alpha-beta timing, no protocol): wall-clock rates on a shared
//! machine drift by a factor of two from minute to minute, and the ratio to that loop does not.

use ringside_sim::engine::Engine;
use ringside_sim::proto::collective::block_bytes;
use ringside_sim::proto::mutation::Mutations;
use ringside_sim::scenario;
use ringside_sim::trace::{NullRecorder, TraceWriter};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[allow(clippy::disallowed_methods)]
fn seconds<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = std::time::Instant::now();
    let r = f();
    (r, start.elapsed().as_secs_f64())
}

struct Chunk {
    to: u32,
    step: u32,
    value: f32,
}

/// A binary heap of (time, insertion seq) over a slab of chunks.
#[derive(Default)]
struct BareQueue {
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
    slab: Vec<Option<Chunk>>,
    free: Vec<usize>,
    seq: u64,
}

impl BareQueue {
    fn push(&mut self, t: u64, c: Chunk) {
        self.seq += 1;
        let i = match self.free.pop() {
            Some(i) => {
                self.slab[i] = Some(c);
                i
            }
            None => {
                self.slab.push(Some(c));
                self.slab.len() - 1
            }
        };
        self.heap.push(Reverse((t, self.seq, i)));
    }

    fn pop(&mut self) -> Option<(u64, Chunk)> {
        let Reverse((t, _, i)) = self.heap.pop()?;
        self.free.push(i);
        self.slab[i].take().map(|c| (t, c))
    }
}

/// Ring allreduce of one f32 per chunk on `p` ranks as a bare event loop: the messages it
/// delivers.
fn bare_loop(p: u32, latency: u64, ser: u64) -> u64 {
    let steps = 2 * (p - 1);
    let mut buf: Vec<Vec<f32>> = (0..p).map(|r| vec![r as f32; p as usize]).collect();
    let mut step = vec![0u32; p as usize];
    let mut send_free = vec![0u64; p as usize];
    let mut queue = BareQueue::default();
    for r in 0..p {
        send_free[r as usize] = ser;
        let value = buf[r as usize][r as usize];
        let c = Chunk {
            to: (r + 1) % p,
            step: 0,
            value,
        };
        queue.push(latency + ser, c);
    }
    let mut delivered = 0;
    while let Some((t, c)) = queue.pop() {
        delivered += 1;
        let r = c.to as usize;
        let s = step[r];
        assert_eq!(s, c.step);
        let block = ((c.to + 2 * p - s - 1) % p) as usize;
        if s < p - 1 {
            buf[r][block] += c.value;
        } else {
            buf[r][block] = c.value;
        }
        step[r] = s + 1;
        if s + 1 < steps {
            let start = t.max(send_free[r]);
            send_free[r] = start + ser;
            let value = buf[r][block];
            let c = Chunk {
                to: (c.to + 1) % p,
                step: s + 1,
                value,
            };
            queue.push(start + latency + ser, c);
        }
    }
    delivered
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let p: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1024);
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u32>().ok());
    // one element per chunk by default; RINGSIDE_ELEMENTS overrides the per-rank buffer size
    let elements = env("RINGSIDE_ELEMENTS").unwrap_or(p);
    let runs = env("RINGSIDE_RUNS").unwrap_or(1).max(1);
    let s = scenario::parse(
        &format!(
            "name = \"ring\"\n[world]\nsize = {p}\n[workload]\nelements = {elements}\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"{p}KiB\"\n"
        ),
        "bench",
    )
    .expect("valid");
    let mut rates = Vec::new();
    let mut ratios = Vec::new();
    for _ in 0..runs {
        let ((stats, events), secs) = seconds(|| match args.get(2) {
            Some(path) => {
                let f = std::fs::File::create(path).expect("create trace");
                let mut w = TraceWriter::new(f, &s, 1).expect("header");
                let mut e = Engine::new(&s, 1, Mutations::NONE, &mut w);
                let r = e.run();
                let n = w.digest().lines();
                w.finish(r.outcome).expect("written");
                (r.stats, n)
            }
            None => {
                let mut rec = NullRecorder;
                let mut e = Engine::new(&s, 1, Mutations::NONE, &mut rec);
                (e.run().stats, 0)
            }
        });
        let rate = stats.messages_delivered as f64 / secs / 1e6;
        print!(
            "p={p}: {} messages delivered in {secs:.3}s = {rate:.2} M msg/s; {events} trace events = {:.2} M events/s",
            stats.messages_delivered,
            events as f64 / secs / 1e6
        );
        if runs > 1 {
            // the scenario's link: its latency, and its serialization time of one chunk
            let chunk = block_bytes(0, 1, p, s.workload.ops[0].bytes.0);
            let (latency, ser) = (s.network.latency.0, s.network.bandwidth.transfer_ns(chunk));
            let (n, bare) = seconds(|| bare_loop(p, latency, ser));
            let bare = n as f64 / bare / 1e6;
            print!("; bare loop {bare:.2} M msg/s");
            ratios.push(rate / bare);
        }
        println!();
        rates.push(rate);
    }
    if runs > 1 {
        let mid = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            (v[v.len() - 1], v[v.len() / 2])
        };
        let (best, median) = mid(&mut rates);
        let (best_ratio, median_ratio) = mid(&mut ratios);
        println!(
            "{runs} runs: best {best:.2}, median {median:.2} M msg/s; \
             of the bare loop: best {best_ratio:.2}, median {median_ratio:.2}"
        );
    }
}
