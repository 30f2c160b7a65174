//! Importing the Flight Recorder dumps of a large job: 4,096 ranks x 2,000 records each, as
//! torch writes them (pickle, strings and stack frames memoized). The dumps are generated once
//! into `target/fr-bench/` (about 1 GiB); the import (read, analyze, report) is timed three
//! times. `FR_BENCH_RANKS` and `FR_BENCH_ENTRIES` change the size. `FR_BENCH_DIR` imports a
//! directory of dumps instead, such as a Megatron job with 30-frame Python stacks written by
//! `tests/data/flight-recorder/nccl/gen.py --ranks 4096 --entries 2000 --out DIR --formats
//! pickle` (its `DIR/3d_hung/pickle`), and prints its root causes.
//!
//! `cargo bench -p ringside-sim --bench fr_import`

#[path = "common/alloc.rs"]
mod alloc;

use ringside_sim::fr;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A pickle writer that memoizes strings and reuses shared objects, as `torch::jit::Pickler`.
struct Pickler {
    out: Vec<u8>,
    memo: BTreeMap<String, u32>,
    next: u32,
}

impl Pickler {
    fn new() -> Self {
        Pickler {
            out: vec![0x80, 2],
            memo: BTreeMap::new(),
            next: 0,
        }
    }

    fn put(&mut self) -> u32 {
        let id = self.next;
        self.next += 1;
        if id < 256 {
            self.out.extend([b'q', id as u8]);
        } else {
            self.out.push(b'r');
            self.out.extend(id.to_le_bytes());
        }
        id
    }

    fn get(&mut self, id: u32) {
        if id < 256 {
            self.out.extend([b'h', id as u8]);
        } else {
            self.out.push(b'j');
            self.out.extend(id.to_le_bytes());
        }
    }

    fn str(&mut self, s: &str) {
        if let Some(&id) = self.memo.get(s) {
            self.get(id);
            return;
        }
        self.out.push(b'X');
        self.out.extend((s.len() as u32).to_le_bytes());
        self.out.extend(s.as_bytes());
        let id = self.put();
        self.memo.insert(s.to_string(), id);
    }

    fn int(&mut self, v: i64) {
        if (0..256).contains(&v) {
            self.out.extend([b'K', v as u8]);
        } else if i32::try_from(v).is_ok() {
            self.out.push(b'J');
            self.out.extend((v as i32).to_le_bytes());
        } else {
            self.out.extend([0x8a, 8]);
            self.out.extend(v.to_le_bytes());
        }
    }
}

fn generate(dir: &Path, ranks: u32, entries: u32) {
    std::fs::create_dir_all(dir).expect("bench dir");
    let t0: i64 = 1_796_000_000_000_000_000;
    for rank in 0..ranks {
        let mut p = Pickler::new();
        p.out.push(b'}');
        p.put();
        p.out.push(b'(');
        p.str("version");
        p.str("2.10");
        p.str("pg_config");
        p.out.push(b'}');
        p.put();
        p.str("0");
        p.out.push(b'}');
        p.put();
        p.out.push(b'(');
        p.str("name");
        p.str("0");
        p.str("desc");
        p.str("default_pg");
        p.str("ranks");
        let list: Vec<String> = (0..ranks).map(|r| r.to_string()).collect();
        p.str(&format!("[{}]", list.join(", ")));
        p.out.push(b'u');
        p.out.push(b's');
        // the last rank stops one call early: the others wait for it
        let mine = if rank == ranks - 1 {
            entries - 1
        } else {
            entries
        };
        p.str("pg_status");
        p.out.push(b'}');
        p.put();
        p.str("0");
        p.out.push(b'}');
        p.put();
        p.out.push(b'(');
        p.str("last_enqueued_collective");
        p.int(i64::from(mine));
        p.str("last_started_collective");
        p.int(-1);
        p.str("last_completed_collective");
        p.int(i64::from(entries - 1));
        p.out.push(b'u');
        p.out.push(b's');
        p.str("entries");
        p.out.push(b']');
        p.put();
        p.out.push(b'(');
        let mut frames: Option<u32> = None;
        for i in 0..mine {
            let seq = i64::from(i) + 1;
            p.out.push(b'}');
            p.put();
            p.out.push(b'(');
            p.str("frames");
            match frames {
                Some(id) => p.get(id),
                None => {
                    p.out.push(b']');
                    let id = p.put();
                    p.out.push(b'(');
                    for (name, file, line) in [
                        ("all_reduce", "torch/distributed/distributed_c10d.py", 2696),
                        ("wrapper", "torch/distributed/c10d_logger.py", 83),
                        ("train_step", "train.py", 120),
                    ] {
                        p.out.push(b'}');
                        p.put();
                        p.out.push(b'(');
                        p.str("name");
                        p.str(name);
                        p.str("filename");
                        p.str(file);
                        p.str("line");
                        p.int(line);
                        p.out.push(b'u');
                    }
                    p.out.push(b'e');
                    frames = Some(id);
                }
            }
            p.str("record_id");
            p.int(i64::from(i));
            p.str("pg_id");
            p.int(0);
            p.str("process_group");
            p.str("0");
            p.str("default_pg");
            p.out.push(0x86);
            p.put();
            p.str("collective_seq_id");
            p.int(seq);
            p.str("p2p_seq_id");
            p.int(0);
            p.str("op_id");
            p.int(seq);
            p.str("profiling_name");
            p.str("nccl:all_reduce");
            p.str("time_created_ns");
            p.int(t0 + seq * 1_000_000 + i64::from(rank));
            for k in ["input_sizes", "output_sizes"] {
                p.str(k);
                p.out.extend(b"](](");
                p.int(1024);
                p.int(1024);
                p.out.extend(b"ee");
            }
            for k in ["input_dtypes", "output_dtypes"] {
                p.str(k);
                p.out.push(b']');
                p.str("BFloat16");
                p.out.push(b'a');
            }
            let done = seq < i64::from(entries);
            p.str("state");
            p.str(if done { "completed" } else { "scheduled" });
            p.str("time_discovered_started_ns");
            p.out.push(b'N');
            p.str("time_discovered_completed_ns");
            p.out.push(b'N');
            p.str("retired");
            p.out.push(if done { 0x88 } else { 0x89 });
            p.str("timeout_ms");
            p.int(600_000);
            p.str("is_p2p");
            p.out.push(0x89);
            p.str("thread_id");
            p.str("140000000000000");
            p.str("thread_name");
            p.str("pt_main_thread");
            p.out.push(b'u');
        }
        p.out.push(b'e');
        p.out.push(b'u');
        p.out.push(b'.');
        std::fs::write(dir.join(format!("nccl_trace_rank_{rank}")), &p.out).expect("write");
    }
}

#[allow(clippy::disallowed_methods)] // a benchmark reads the wall clock, by design
fn main() {
    let ranks: u32 = std::env::var("FR_BENCH_RANKS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4096);
    let entries: u32 = std::env::var("FR_BENCH_ENTRIES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let given = std::env::var_os("FR_BENCH_DIR").map(PathBuf::from);
    let dir: PathBuf = given.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target/fr-bench")
            .join(format!("{ranks}x{entries}"))
    });
    if given.is_none() && !dir.join(format!("nccl_trace_rank_{}", ranks - 1)).exists() {
        let t = Instant::now();
        generate(&dir, ranks, entries);
        eprintln!(
            "generated {ranks} dumps of {entries} records in {:.1?}",
            t.elapsed()
        );
    }
    let bytes: u64 = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    println!(
        "fr_import: {} ({:.0} MiB of dumps)",
        match &given {
            Some(d) => d.display().to_string(),
            None => format!("{ranks} ranks x {entries} records"),
        },
        bytes as f64 / (1u64 << 20) as f64
    );
    for run in 0..3 {
        let t = Instant::now();
        let loaded = fr::read_paths(std::slice::from_ref(&dir), &fr::ReadOptions::default())
            .expect("the dumps read");
        let read = t.elapsed();
        let a = fr::analyze(&loaded.dumps);
        let analyzed = t.elapsed();
        let report = fr::report::build("bench", &loaded.dumps, &a);
        let total = t.elapsed();
        if given.is_none() {
            assert_eq!(
                report.root_causes,
                [ringside_sim::cause::RootCause::Hung(
                    ringside_sim::proto::Rank(ranks - 1)
                )]
            );
        }
        println!(
            "  run {run}: read {:.2?}, analyze {:.2?}, report {:.2?}: total {:.2?}",
            read,
            analyzed - read,
            total - analyzed,
            total
        );
        if run == 0 && given.is_some() {
            let causes: Vec<String> = report.root_causes.iter().map(|c| c.to_string()).collect();
            println!("  root causes: {}", causes.join(", "));
        }
    }
}
