//! End-to-end tests of `ringside sweep`: the table, the JSON rows, and what they say about the
//! algorithms (ring wins on large allreduces, recursive doubling on tiny ones).

mod common;

use ringside_sim::cost::bus_factor;
use ringside_sim::scenario::OpKind;
use std::process::Output;

const SCENARIO: &str = "name = \"sweep\"\n[world]\nsize = 8\n\
    [network]\nlatency = \"5us\"\nbandwidth = \"25GB/s\"\n\
    [workload]\niterations = 3\ncompute = \"10ms\"\n\
    [[workload.ops]]\nop = \"allreduce\"\nbytes = \"64MiB\"\n\
    [[workload.ops]]\nop = \"barrier\"\n\
    [[faults]]\nkind = \"preempt\"\nrank = 3\nat = \"1ms\"\n";

fn sweep(args: &[&str]) -> Output {
    sweep_of(SCENARIO, args)
}

fn sweep_of(text: &str, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sweep.toml");
    std::fs::write(&path, text).expect("write");
    let mut all = vec!["sweep", path.to_str().expect("utf-8")];
    all.extend_from_slice(args);
    common::ringside(&all)
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

const ALLREDUCE: [&str; 5] = [
    "ring",
    "recursive_doubling",
    "rabenseifner",
    "tree",
    "direct",
];

#[test]
fn the_table_lists_every_algorithm_at_every_size_and_marks_the_fastest() {
    let out = stdout(&sweep(&["--bytes", "1KiB..1MiB"]));
    assert!(out.contains("op 0: allreduce on 8 ranks"), "{out}");
    assert!(out.contains("op 1: barrier on 8 ranks"), "{out}");
    let header = out.lines().nth(1).expect("a header");
    for col in ["bytes", "algorithm", "time", "algbw", "busbw"] {
        assert!(header.contains(col), "{header}");
    }
    // 11 sizes x 5 algorithms, then the barrier's 2 algorithms once
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words
                .iter()
                .any(|w| ALLREDUCE.contains(w) || *w == "dissemination")
        })
        .collect();
    assert_eq!(rows.len(), 11 * 5 + 2, "{out}");
    for size in ["1KiB", "64KiB", "1MiB"] {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(size)),
            "{size}: {out}"
        );
    }
    // one fastest (or a tie) per size, and for the barrier
    let marked = out.lines().filter(|l| l.ends_with(" *")).count();
    assert!(marked >= 12, "{out}");
    // hierarchical needs a two-level topology: not in a flat world
    assert!(!out.contains("hierarchical"), "{out}");
}

#[test]
fn json_rows_agree_with_the_cost_model() {
    let out = stdout(&sweep(&["--bytes", "1KiB..64MiB", "--json"]));
    let rows: serde_json::Value = serde_json::from_str(&out).expect("a JSON array");
    let rows = rows.as_array().expect("an array");
    assert_eq!(rows.len(), 17 * 5 + 2);
    let time = |alg: &str, bytes: u64| {
        rows.iter()
            .find(|r| r["op"] == "allreduce" && r["algorithm"] == alg && r["bytes"] == bytes)
            .and_then(|r| r["time_ns"].as_u64())
            .unwrap_or_else(|| panic!("no row for {alg} at {bytes}"))
    };
    // large n: ring is bandwidth-optimal; tiny n: recursive doubling has fewer latencies
    assert!(time("ring", 64 << 20) < time("recursive_doubling", 64 << 20));
    assert!(time("recursive_doubling", 1 << 10) < time("ring", 1 << 10));
    // faults are left out: the preempted rank does not stop the sweep, and every time is the
    // undisturbed one: ring = 2(p-1) a + 2(p-1)/p n b, each chunk rounded up to a whole ns
    let chunk = ((64u64 << 20) / 8 * 1_000_000_000).div_ceil(25_000_000_000);
    assert_eq!(time("ring", 64 << 20), 14 * (5_000 + chunk));
    for r in rows {
        let t = r["time_ns"].as_u64().expect("time") as f64;
        let bytes = r["bytes"].as_u64().expect("bytes") as f64;
        if r["op"] == "barrier" {
            assert!(r["algbw_gbps"].is_null() && r["busbw_gbps"].is_null());
            continue;
        }
        let algbw = r["algbw_gbps"].as_f64().expect("algbw");
        let busbw = r["busbw_gbps"].as_f64().expect("busbw");
        assert!((algbw - bytes / t).abs() < 1e-9, "{r}");
        let factor = bus_factor(OpKind::Allreduce, 8).expect("allreduce has one");
        assert!((busbw - algbw * factor).abs() < 1e-9, "{r}");
        assert_eq!(r["ranks"], 8);
    }
    // exactly the fastest rows are marked, per size
    for bytes in (10..=26).map(|k| 1u64 << k) {
        let at: Vec<&serde_json::Value> = rows.iter().filter(|r| r["bytes"] == bytes).collect();
        let best = at.iter().filter_map(|r| r["time_ns"].as_u64()).min();
        for r in at {
            assert_eq!(r["fastest"] == true, r["time_ns"].as_u64() == best, "{r}");
        }
    }
}

#[test]
fn a_bad_range_is_bad_input() {
    for bad in ["1KiB", "1KiB..1Kb", "2KiB..1KiB"] {
        let o = sweep(&["--bytes", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--bytes"), "{bad}: {err}");
    }
}

/// A barrier's runs take few events, an allreduce's many.
const BARRIER_THEN_ALLREDUCE: &str = "name = \"budget\"\n[world]\nsize = 8\n[workload]\n\
    [[workload.ops]]\nop = \"barrier\"\n\
    [[workload.ops]]\nop = \"allreduce\"\nbytes = \"64MiB\"\n";

#[test]
fn a_run_past_its_event_budget_stops_the_sweep_and_keeps_the_rows_before_it() {
    let o = sweep_of(
        BARRIER_THEN_ALLREDUCE,
        &["--bytes", "1KiB..2KiB", "--max-events", "100", "--json"],
    );
    assert_eq!(o.status.code(), Some(2));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).expect("a JSON array");
    let names: Vec<&str> = rows
        .iter()
        .filter_map(|r| r["algorithm"].as_str())
        .collect();
    assert_eq!(names, ["dissemination", "tree"], "the barrier's rows");
    assert!(rows
        .iter()
        .all(|r| r["op"] == "barrier" && r["fastest"].is_boolean()));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("allreduce with ring on 1024 bytes did not complete (timed_out)")
            && err.contains("--max-events"),
        "{err}"
    );
    // the table says the same
    let o = sweep_of(
        BARRIER_THEN_ALLREDUCE,
        &["--bytes", "1KiB..2KiB", "--max-events", "100"],
    );
    assert_eq!(o.status.code(), Some(2));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("dissemination") && !table.contains("ring"),
        "{table}"
    );
    // with the budget it needs, every run completes
    let o = sweep_of(
        BARRIER_THEN_ALLREDUCE,
        &["--bytes", "1KiB..2KiB", "--max-events", "1000", "--json"],
    );
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(rows.len(), 2 + 5 * 2);
}

#[test]
fn the_wall_clock_budget_covers_the_whole_sweep() {
    // on 512 ranks the whole sweep takes seconds (10 s on a 2-core machine), thousands of
    // times the budget: whatever the machine, it stops early (on 8 ranks it took a few
    // milliseconds, and a budget of one could miss it)
    let o = sweep_of(
        &BARRIER_THEN_ALLREDUCE.replace("size = 8", "size = 512"),
        &["--bytes", "1B..1GiB", "--max-wall", "1ms", "--json"],
    );
    assert_eq!(o.status.code(), Some(2));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).expect("a JSON array");
    assert!(rows.len() < 2 + 5 * 31, "{} rows", rows.len());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("did not complete (timed_out)") && err.contains("--max-wall"),
        "{err}"
    );
}
