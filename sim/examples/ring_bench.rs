//! A one-shot throughput run for profiling: `cargo run --release -p ringside-sim --example
//! ring_bench -- [ranks] [trace-file]`; `RINGSIDE_ELEMENTS` sets the per-rank buffer size
//! (default: one element per chunk), `RINGSIDE_RUNS` how many times to run (default 1).
//!
//! With several runs it prints the best and the median, and times, run for run, a bare event
//! loop that moves the same messages (a binary heap of (time, seq), one buffer and one step
//! counter per rank, the same alpha-beta timing, no protocol): wall-clock rates on a shared
//! machine drift by a factor of two from minute to minute, and the ratio to that loop does not.
//!
//! It also times, run for run, the user's path: `ringside run --json` on the same scenario as a
//! whole process (parsing, the run, its digest, the diagnosis, the report), when the binary is
//! there (`RINGSIDE_BIN`, else `target/release/ringside`: `cargo build --release` first), with
//! its peak memory, and the ratio of the processor time each used (steadier than wall-clock
//! time on a machine others share).

use nix::sys::resource::{getrusage, UsageWho};
use ringside_sim::engine::Engine;
use ringside_sim::proto::collective::block_bytes;
use ringside_sim::proto::mutation::Mutations;
use ringside_sim::scenario;
use ringside_sim::trace::{NullRecorder, TraceWriter};

#[path = "../benches/common/alloc.rs"]
mod alloc;
#[path = "../benches/common/bare.rs"]
mod bare;
use bare::bare_loop;

#[allow(clippy::disallowed_methods)]
fn seconds<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = std::time::Instant::now();
    let r = f();
    (r, start.elapsed().as_secs_f64())
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
    let mut process = Vec::new();
    let bin = std::env::var_os("RINGSIDE_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/ringside")
        });
    let file = std::env::temp_dir().join(format!("ring_bench-{p}-{}.toml", std::process::id()));
    let bin = bin.exists().then_some(bin);
    if bin.is_none() {
        println!("(no ringside binary at target/release/ringside: the user's path is not timed)");
    } else {
        let text = toml::to_string(&s).expect("a scenario serializes");
        std::fs::write(&file, text).expect("write the scenario");
    }
    // every message is one engine event, and the calls and computes around them few
    let max_events = 4 * 2 * u64::from(p) * u64::from(p.max(1) - 1) + 1_000_000;
    for _ in 0..runs {
        let cpu_before = cpu_seconds(UsageWho::RUSAGE_SELF);
        let ((stats, events), secs) = seconds(|| match args.get(2) {
            Some(path) => {
                let f = std::fs::File::create(path).expect("create trace");
                let mut w = TraceWriter::new(f, &s, 1).expect("header");
                let mut e = Engine::new(&s, 1, Mutations::NONE, &mut w);
                let r = e.run();
                let n = w.digest().events();
                w.finish(r.outcome).expect("written");
                (r.stats, n)
            }
            None => {
                let mut rec = NullRecorder;
                let mut e = Engine::new(&s, 1, Mutations::NONE, &mut rec);
                (e.run().stats, 0)
            }
        });
        let engine_cpu = cpu_seconds(UsageWho::RUSAGE_SELF) - cpu_before;
        let rate = stats.messages_delivered as f64 / secs / 1e6;
        print!(
            "p={p}: {} messages delivered in {secs:.3}s = {rate:.2} M msg/s; {events} trace events = {:.2} M events/s",
            stats.messages_delivered,
            events as f64 / secs / 1e6
        );
        if let Some(bin) = &bin {
            let children_before = cpu_seconds(UsageWho::RUSAGE_CHILDREN);
            let (out, whole) = seconds(|| {
                std::process::Command::new(bin)
                    .args(["run", "--json", "--quiet", "--max-events"])
                    // past 2,600 ranks a ring's messages outnumber the default event budget
                    .arg(max_events.to_string())
                    .arg(&file)
                    .output()
                    .expect("ringside runs")
            });
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                String::from_utf8_lossy(&out.stdout).contains(r#""outcome": "completed""#),
                "the whole ring runs"
            );
            let rss = peak_child_rss_mb();
            let cpu = cpu_seconds(UsageWho::RUSAGE_CHILDREN) - children_before;
            print!(
                "; ringside run {whole:.3}s ({:.2}x the engine, {rss:.0} MB peak; CPU time {:.2}x)",
                whole / secs,
                cpu / engine_cpu
            );
            process.push((whole / secs, whole, cpu / engine_cpu));
        }
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
        if !process.is_empty() {
            let mut x: Vec<f64> = process.iter().map(|p| p.0).collect();
            let mut w: Vec<f64> = process.iter().map(|p| p.1).collect();
            let (worst_x, median_x) = mid(&mut x);
            let mut c: Vec<f64> = process.iter().map(|p| p.2).collect();
            let (_, median_w) = mid(&mut w);
            let (_, median_c) = mid(&mut c);
            println!(
                "ringside run as a process: median {median_w:.3}s, {median_x:.2}x the engine \
                 (worst {worst_x:.2}x); of the bare loop: {:.2}; CPU time: median {median_c:.2}x \
                 the engine's",
                median_ratio / median_x
            );
        }
    }
    if bin.is_some() {
        let _ = std::fs::remove_file(&file);
    }
}

/// The peak resident memory of the largest child waited for so far, in MB.
fn peak_child_rss_mb() -> f64 {
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0.0, |u| u.max_rss() as f64 / 1024.0)
}

/// The processor time (user and system) this process, or its children waited for, used so
/// far, in seconds. Unlike wall-clock time, it leaves out the time a busy machine kept the
/// process waiting for a processor.
fn cpu_seconds(who: UsageWho) -> f64 {
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    getrusage(who).map_or(0.0, |u| secs(u.user_time()) + secs(u.system_time()))
}
