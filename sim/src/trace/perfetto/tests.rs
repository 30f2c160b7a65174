//! The export checked against the trace-event format.

use super::*;
use crate::run::{run_events, RunOptions};
use crate::scenario;
use crate::trace::TraceWriter;
use std::collections::BTreeSet;

const PREEMPT: &str = include_str!("../../../../scenarios/preempt-mid-allreduce.toml");
const PARTITION: &str = r#"
name = "partition-heals"
[world]
size = 3
[network]
latency = "5us"
bandwidth = "25GB/s"
retransmit_timeout = "1ms"
[group]
timeout = "1s"
[workload]
iterations = 2
compute = "1ms"
elements = 8
[[workload.ops]]
op = "allreduce"
bytes = "1MiB"
[[faults]]
kind = "partition"
sides = [[0], [1, 2]]
at = "1050us"
duration = "3ms"
[[faults]]
kind = "pause"
rank = 2
at = "4500us"
duration = "1ms"
"#;

fn export(toml: &str) -> (Value, ExportStats) {
    let s = scenario::parse(toml, "test").expect("valid scenario");
    let mut bytes = Vec::new();
    let mut w = TraceWriter::new(&mut bytes, &s, s.seed).expect("header");
    let (result, _, _) = run_events(&s, &RunOptions::default(), &mut w);
    w.finish(result.outcome).expect("footer");
    let mut r = TraceReader::new(&bytes[..], "test").expect("trace");
    let mut out = Vec::new();
    let stats = export_chrome(&mut r, &mut out).expect("export");
    let v: Value = serde_json::from_slice(&out).expect("the export is JSON");
    (v, stats)
}

/// Checks the trace-event format: known phases, numeric pid/tid/ts, B/E paired and
/// nested per track in time order, every flow end after its start.
fn check_format(v: &Value, ranks: u32) -> Vec<Value> {
    assert_eq!(v["displayTimeUnit"], "ns");
    let evs = v["traceEvents"].as_array().expect("traceEvents").clone();
    let mut stacks: BTreeMap<(u64, u64), Vec<f64>> = BTreeMap::new();
    let mut last_ts: BTreeMap<(u64, u64), f64> = BTreeMap::new();
    let mut flows_started = BTreeSet::new();
    let mut named = BTreeSet::new();
    for e in &evs {
        let ph = e["ph"].as_str().expect("ph");
        assert!(
            ["M", "B", "E", "X", "i", "s", "f"].contains(&ph),
            "phase {ph}"
        );
        let track = (
            e["pid"].as_u64().expect("pid"),
            e["tid"].as_u64().expect("tid"),
        );
        if ph == "M" {
            if e["name"] == "thread_name" {
                named.insert(track);
            }
            continue;
        }
        let t = e["ts"].as_f64().expect("ts");
        if ph != "i" || e["s"] != "g" {
            let last = last_ts.entry(track).or_insert(0.0);
            assert!(t >= *last, "time goes back on {track:?}: {e}");
            *last = t;
        }
        match ph {
            "B" => stacks.entry(track).or_default().push(t),
            "E" => {
                let b = stacks.entry(track).or_default().pop();
                assert!(b.is_some_and(|b| b <= t), "E without B on {track:?}: {e}");
            }
            "X" => assert!(e["dur"].as_f64().is_some(), "X without dur: {e}"),
            "s" => assert!(flows_started.insert(e["id"].as_u64().expect("flow id"))),
            "f" => {
                assert_eq!(e["bp"], "e");
                assert!(flows_started.contains(&e["id"].as_u64().expect("flow id")));
            }
            _ => {}
        }
    }
    for (track, s) in &stacks {
        assert!(s.is_empty(), "unclosed slices on {track:?}");
    }
    for r in 0..ranks {
        for tid in [WORK, MESSAGES, PROCESS] {
            assert!(
                named.contains(&(u64::from(r) + 1, u64::from(tid))),
                "rank {r} tid {tid}"
            );
        }
    }
    evs
}

fn named<'a>(evs: &'a [Value], ph: &str, name: &str) -> Vec<&'a Value> {
    evs.iter()
        .filter(|e| e["ph"] == ph && e["name"].as_str().is_some_and(|n| n.starts_with(name)))
        .collect()
}

#[test]
fn preemption_exports_tracks_slices_flows_and_the_fault() {
    let (v, stats) = export(PREEMPT);
    let evs = check_format(&v, 3);
    assert_eq!(v["otherData"]["scenario"], "preempt-mid-allreduce");
    // one track per rank, named
    let procs: Vec<&str> = named(&evs, "M", "process_name")
        .iter()
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(procs, ["rank 0", "rank 1", "rank 2"]);
    // the allreduce is a slice on every rank, with its steps inside
    let calls: BTreeSet<u64> = named(&evs, "B", "allreduce #1")
        .iter()
        .map(|e| e["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(calls, BTreeSet::from([1, 2, 3]));
    assert!(!named(&evs, "B", "step 1/4").is_empty());
    assert_eq!(named(&evs, "B", "compute").len(), 3);
    // messages as flows
    assert!(stats.flows > 0);
    assert!(!named(&evs, "f", "message").is_empty());
    // the preemption, on rank 2's track; its death as a `dead` slice
    let fault = named(&evs, "i", "fault: preempt");
    assert_eq!(fault.len(), 1);
    assert_eq!(fault[0]["pid"], 3);
    assert_eq!(fault[0]["ts"].as_f64(), Some(12_000.0));
    assert_eq!(named(&evs, "B", "dead").len(), 1);
    assert_eq!(named(&evs, "i", "watchdog timeout").len(), 1);
}

#[test]
fn a_healed_partition_resends_with_distinct_flow_ids_and_pauses_are_slices() {
    let (v, _) = export(PARTITION);
    let evs = check_format(&v, 3);
    let partition = named(&evs, "i", "fault: partition");
    assert_eq!(partition.len(), 1);
    assert_eq!(partition[0]["s"], "g");
    assert!(!named(&evs, "i", "drop from").is_empty());
    assert_eq!(named(&evs, "B", "paused").len(), 1);
    let ids: Vec<u64> = named(&evs, "s", "message")
        .iter()
        .map(|e| e["id"].as_u64().unwrap())
        .collect();
    assert!(
        ids.iter().any(|id| id >> 48 > 0),
        "a resend got its own flow id"
    );
}
