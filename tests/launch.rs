//! `ringside launch`: the same protocol code as real OS processes over loopback TCP, with real
//! faults (SIGKILL, SIGSTOP), merged traces the other commands read, and a cross-check of real
//! runs against the engine.

use ringside_sim::scenario::Fault;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;

use common::{json, ringside};

fn scenario(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(&p, format!("name = \"{name}\"\n{body}")).expect("write the scenario");
    p
}

const FOUR_RANKS: &str = r#"
[world]
size = 4
[group]
timeout = "600ms"
[workload]
iterations = 3
compute = "5ms"
elements = 32
[[workload.ops]]
op = "allreduce"
bytes = "16MiB"
[[workload.ops]]
op = "broadcast"
bytes = "1MiB"
root = 1
"#;

/// `launch --json --trace` of `path`: (exit code, report, trace path).
fn launch(dir: &Path, path: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value, PathBuf) {
    let trace = dir.join(format!(
        "{}.trace.jsonl",
        path.file_stem().and_then(|s| s.to_str()).unwrap_or("run")
    ));
    let mut args = vec![
        "launch",
        path.to_str().expect("utf-8"),
        "--json",
        "--trace",
        trace.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(extra);
    let o = ringside(&args);
    (o.status.code(), json(&o), trace)
}

fn all_correct(report: &serde_json::Value) -> bool {
    report["ops"]
        .as_array()
        .expect("ops")
        .iter()
        .all(|op| op["correct"] == true)
}

fn root_causes(report: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = report["root_causes"]
        .as_array()
        .expect("root_causes")
        .iter()
        .map(|c| c.as_str().expect("string").to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn a_healthy_four_rank_run_is_correct_and_its_trace_readable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scenario(dir.path(), "healthy4", FOUR_RANKS);
    let (code, r, trace) = launch(dir.path(), &path, &[]);
    assert_eq!(code, Some(0), "{r:#}");
    assert_eq!(r["outcome"], "completed");
    let ops = r["ops"].as_array().expect("ops");
    assert_eq!(ops.len(), 6);
    for op in ops {
        assert_eq!(op["correct"], true, "{op}");
        assert_eq!(op["ranks_completed"], 4, "{op}");
    }
    let t = trace.to_str().expect("utf-8");
    let header = std::fs::read_to_string(&trace).expect("trace");
    let header: serde_json::Value =
        serde_json::from_str(header.lines().next().expect("header")).expect("json header");
    assert_eq!(header["real"], true);
    assert_eq!(header["driver"], "tcp");
    let e = ringside(&["explain", t, "--json"]);
    assert_eq!(e.status.code(), Some(0));
    assert_eq!(json(&e)["blocked"], serde_json::json!([]));
    let perfetto = dir.path().join("p.json");
    let x = ringside(&["export", t, "--perfetto", perfetto.to_str().expect("utf-8")]);
    assert_eq!(x.status.code(), Some(0), "{x:?}");
    let rp = ringside(&["replay", t]);
    assert_eq!(rp.status.code(), Some(2));
    let err = String::from_utf8_lossy(&rp.stderr);
    assert!(err.contains(t) && err.contains("real run"), "{err}");
}

fn with_fault(fault: &str) -> String {
    format!("{FOUR_RANKS}\n[[faults]]\n{fault}")
}

#[test]
fn a_sigstopped_rank_outlasting_the_timeout_is_diagnosed_paused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = with_fault("kind = \"pause\"\nrank = 2\nat = \"8ms\"\nduration = \"10s\"\n");
    let path = scenario(dir.path(), "paused", &body);
    let (code, r, trace) = launch(dir.path(), &path, &[]);
    assert_eq!(code, Some(0), "{r:#}");
    assert_eq!(r["outcome"], "stalled");
    // real timing may add a straggler under load; the pause must be named
    assert!(root_causes(&r).contains(&"paused:2".into()), "{r:#}");
    let e = ringside(&["explain", trace.to_str().expect("utf-8"), "--json"]);
    assert_eq!(e.status.code(), Some(0));
    assert!(root_causes(&json(&e)).contains(&"paused:2".into()));
    let loaded = ringside_tui::Loaded::open(&trace).expect("the debugger opens the merged trace");
    assert!(!loaded.is_empty());
}

#[test]
fn a_sigkilled_rank_is_diagnosed_preempted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = with_fault("kind = \"preempt\"\nrank = 3\nat = \"8ms\"\n");
    let path = scenario(dir.path(), "killed", &body);
    let (code, r, trace) = launch(dir.path(), &path, &[]);
    assert_eq!(code, Some(0), "{r:#}");
    assert_eq!(r["outcome"], "stalled");
    assert!(root_causes(&r).contains(&"preempted:3".into()), "{r:#}");
    let e = ringside(&["explain", trace.to_str().expect("utf-8"), "--json"]);
    assert!(root_causes(&json(&e)).contains(&"preempted:3".into()));
}

#[test]
fn elastic_survivors_rebuild_around_a_killed_rank() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/elastic-three-workers.toml");
    let (code, r, _) = launch(dir.path(), &path, &[]);
    assert_eq!(code, Some(0), "{r:#}");
    assert_eq!(r["outcome"], "rebuilt");
    let gens = r["generations"].as_array().expect("generations");
    assert!(gens.len() >= 2, "{r:#}");
    assert_eq!(
        gens.last().expect("a generation")["members"],
        serde_json::json!([0, 1])
    );
    assert!(all_correct(&r), "{r:#}");
}

#[test]
fn network_faults_are_refused_unless_ignored() {
    let p = "scenarios/network-partition.toml";
    let o = ringside(&["launch", p]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not emulated") && err.contains("--ignore-unsupported"),
        "{err}"
    );
}

#[test]
fn a_garbage_client_does_not_disturb_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = FOUR_RANKS
        .replace("iterations = 3", "iterations = 8")
        .replace("compute = \"5ms\"", "compute = \"40ms\"");
    let path = scenario(dir.path(), "garbage", &body);
    let work = dir.path().join("work");
    let mut child = Command::new(common::bin())
        .args([
            "launch",
            path.to_str().expect("utf-8"),
            "--json",
            "--verbose",
        ])
        .arg("--workdir")
        .arg(&work)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("launch starts");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut addr = None;
    let mut line = String::new();
    while addr.is_none() {
        line.clear();
        if stderr.read_line(&mut line).expect("read stderr") == 0 {
            break;
        }
        if let Some(a) = line.trim().strip_prefix("launch: node 0 listening on ") {
            addr = Some(a.to_string());
        }
    }
    let addr = addr.expect("launch names node 0's address");
    let junk: [&[u8]; 4] = [
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        &[0xff, 0xff, 0xff, 0xff, 1, 2, 3],
        &[0, 0, 0, 3, 1, 1, 0],
        // a well-formed hello of another job, then a message
        &[
            0, 0, 0, 22, 1, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 0, 9, 9, 9, 9,
        ],
    ];
    for j in junk {
        if let Ok(mut s) = TcpStream::connect(&addr) {
            let _ = s.write_all(j);
        }
    }
    let out = child.wait_with_output().expect("launch ends");
    assert_eq!(out.status.code(), Some(0));
    let r = json(&out);
    assert_eq!(r["outcome"], "completed", "{r:#}");
    assert_eq!(r["ops"].as_array().expect("ops").len(), 16);
    assert!(all_correct(&r), "{r:#}");
    let log = std::fs::read_to_string(work.join("rank-0.0.log")).expect("rank 0's log");
    assert!(log.contains("closing the connection"), "{log}");
}

/// The faults a real run applies for real: a shipped scenario with only these (or none) must
/// reach the engine's outcome, generations and per-call correctness, and name its root causes.
fn real_faults_only(path: &Path) -> bool {
    let s = ringside_sim::scenario::load(path).expect("a shipped scenario loads");
    s.faults
        .iter()
        .all(|f| matches!(f, Fault::Preempt { .. } | Fault::Pause { .. }))
}

/// A call some rank completed: a collective by its (iteration, index), a message (whose
/// index differs between its two ends) by its group, sender, receiver and order.
type Completed = (Option<(u64, u64)>, Option<[u64; 4]>, bool);

/// Calls that some rank completed, with whether every result was right.
fn completed_calls(r: &serde_json::Value) -> Vec<Completed> {
    let u = |op: &serde_json::Value, k: &str| op[k].as_u64().expect(k);
    let mut v: Vec<Completed> = r["ops"]
        .as_array()
        .expect("ops")
        .iter()
        .filter(|op| op["ranks_completed"].as_u64().unwrap_or(0) > 0)
        .map(|op| {
            let correct = op["correct"] == true;
            if op.get("from").is_some() {
                let msg = [u(op, "group"), u(op, "from"), u(op, "to"), u(op, "seq")];
                (None, Some(msg), correct)
            } else {
                (Some((u(op, "iteration"), u(op, "index"))), None, correct)
            }
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn real_runs_of_the_shipped_scenarios_agree_with_the_engine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("scenarios/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    let mut checked = 0;
    for path in paths {
        if !real_faults_only(&path) {
            continue;
        }
        let p = path.to_str().expect("utf-8");
        let sim = json(&ringside(&["run", p, "--json"]));
        let (code, real, _) = launch(dir.path(), &path, &[]);
        assert_eq!(code, Some(0), "{p}: {real:#}");
        assert_eq!(real["outcome"], sim["outcome"], "{p}: outcome");
        let gens = |r: &serde_json::Value| r["generations"].as_array().map(|g| g.len());
        assert_eq!(gens(&real), gens(&sim), "{p}: generations");
        let causes = root_causes(&real);
        for c in root_causes(&sim) {
            assert!(causes.contains(&c), "{p}: {c} missing from {causes:?}");
        }
        let (rc, sc) = (completed_calls(&real), completed_calls(&sim));
        assert!(rc.iter().all(|c| c.2), "{p}: a wrong result: {rc:?}");
        if sim["outcome"] == "stalled" {
            // where a fault cuts the workload short depends on real timing: only the
            // results of the calls both runs completed must agree
            let both = |a: &[Completed], b: &[Completed]| {
                a.iter()
                    .filter(|x| b.iter().any(|y| (y.0, y.1) == (x.0, x.1)))
                    .copied()
                    .collect::<Vec<_>>()
            };
            assert_eq!(both(&rc, &sc), both(&sc, &rc), "{p}: results");
        } else {
            assert_eq!(rc, sc, "{p}: results");
        }
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} scenarios cross-checked");
}
