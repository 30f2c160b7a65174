//! `ringside launch`: the same protocol code as real OS processes over loopback TCP, with real
//! faults (SIGKILL, SIGSTOP), merged traces the other commands read, and a cross-check of real
//! runs against the engine.

use ringside_sim::check::{Case, Property, Run as JudgedRun, UserProperty};
use ringside_sim::scenario::{Fault, Outcome};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[path = "launch/attack.rs"]
mod attack;
mod common;

use attack::{authenticate, chunk, claim, hello, with_job, Run, LONG};
use common::{json, ringside};
use ringside_sim::driver::tcp::ahead::MAX_HELD_BYTES;
use ringside_sim::driver::tcp::auth::{Channel, JobKey};

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
    judged_from_its_trace(&path, &trace, Outcome::Completed);
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
    judged_from_its_trace(&path, &trace, Outcome::Stalled);
}

/// The properties that judge a run by what it recorded judge the merged trace of real
/// processes as they judge the engine's (`Run::from_trace`): the case is the launched scenario,
/// the outcome and the diagnosis are the trace's, and every such property holds. A property of
/// the test's own that demands completion tells the stalled run from the healthy one.
fn judged_from_its_trace(scenario: &Path, trace: &Path, outcome: Outcome) {
    struct Completes;
    impl UserProperty for Completes {
        fn name(&self) -> &'static str {
            "completes"
        }
        fn statement(&self) -> &'static str {
            "the run completes"
        }
        fn check(&self, _: &Case, run: &JudgedRun) -> Result<(), String> {
            match run.report.outcome {
                Outcome::Completed => Ok(()),
                o => Err(format!(
                    "the run {o}, blocked: {:?}",
                    run.diagnosis.blocked_ranks()
                )),
            }
        }
    }
    let bytes = std::fs::read(trace).expect("the trace");
    let (case, run) = JudgedRun::from_trace(bytes, "merged.jsonl").expect("a whole trace");
    let launched = ringside_sim::scenario::load(scenario).expect("the scenario");
    assert_eq!(case.scenario, launched);
    assert_eq!(run.report.outcome, outcome);
    let recorded = [
        Property::ScheduleContract,
        Property::Agreement,
        Property::Validity,
        Property::DiagnosisSound,
        Property::DiagnosisComplete,
        Property::OneWorldPerGeneration,
        Property::FaultFreeCompletes,
    ];
    for p in recorded {
        assert_eq!(p.check(&case, &run), Ok(()), "{p}");
    }
    let completes = Completes.check(&case, &run);
    match outcome {
        Outcome::Completed => assert_eq!(completes, Ok(())),
        _ => {
            let why = completes.expect_err("a stalled run does not complete");
            assert!(why.contains("stalled"), "{why}");
            assert!(run
                .diagnosis
                .root_causes()
                .iter()
                .any(|c| c.to_string() == "preempted:3"));
        }
    }
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

/// Where a real run of a shipped scenario disagrees with the engine's run `sim` (`None`:
/// nowhere). A wrong result fails at once: no scheduling excuses it.
fn disagreement(
    p: &str,
    sim: &serde_json::Value,
    code: Option<i32>,
    real: &serde_json::Value,
) -> Option<String> {
    let (rc, sc) = (completed_calls(real), completed_calls(sim));
    assert!(
        rc.iter().all(|c| c.2),
        "{p}: a wrong result: {rc:?}\n{real:#}"
    );
    if code != Some(0) {
        return Some(format!("exit code {code:?}: {:#}", real["expect"]));
    }
    if real["outcome"] != sim["outcome"] {
        return Some(format!(
            "outcome {} (the engine: {})",
            real["outcome"], sim["outcome"]
        ));
    }
    let gens = |r: &serde_json::Value| r["generations"].as_array().map(|g| g.len());
    if gens(real) != gens(sim) {
        return Some(format!(
            "generations {:?} (the engine: {:?})",
            gens(real),
            gens(sim)
        ));
    }
    let causes = root_causes(real);
    if let Some(c) = root_causes(sim).into_iter().find(|c| !causes.contains(c)) {
        return Some(format!("{c} missing from {causes:?}"));
    }
    // where a fault cuts a stalled workload short depends on real timing: then only the
    // results of the calls both runs completed must agree
    let both = |a: &[Completed], b: &[Completed]| {
        a.iter()
            .filter(|x| b.iter().any(|y| (y.0, y.1) == (x.0, x.1)))
            .copied()
            .collect::<Vec<_>>()
    };
    let agree = match sim["outcome"] == "stalled" {
        true => both(&rc, &sc) == both(&sc, &rc),
        false => rc == sc,
    };
    (!agree).then(|| format!("results {rc:?} (the engine: {sc:?})"))
}

/// The time scales a real run is tried at: wall-clock scheduling on a loaded machine can make
/// a timing-sensitive scenario (a registry query a few ms after a join) disagree with the
/// engine; a slower run leaves scheduling noise less room. A real disagreement persists at
/// every scale, and fails.
const SCALES: [&str; 3] = ["1", "4", "16"];

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
        let mut tries = Vec::new();
        for scale in SCALES {
            let (code, real, _) = launch(dir.path(), &path, &["--time-scale", scale]);
            match disagreement(p, &sim, code, &real) {
                None => break,
                Some(why) => tries.push(format!("at --time-scale {scale}: {why}")),
            }
        }
        assert!(
            tries.len() < SCALES.len(),
            "{p} disagrees with the engine:\n{}",
            tries.join("\n")
        );
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} scenarios cross-checked");
}

#[test]
fn forged_hellos_and_chunks_without_the_key_are_refused_and_logged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scenario(dir.path(), "forged", LONG);
    let run = Run::start(dir.path(), &path, None);
    let job = run.job();
    // the old attack: a hello claiming rank 2 of the real job, then a well-formed chunk of
    // the first allreduce whose values would poison the sum
    let mut forged = hello(job, 2);
    forged.extend(chunk(job, 2, 1, 8));
    let mut s = TcpStream::connect(&run.node0).expect("connect");
    let _ = s.write_all(&forged);
    let _ = s.shutdown(std::net::Shutdown::Write);
    // a handshake with a key of its own, claiming rank 2
    let wrong = JobKey::random().expect("randomness");
    let (ok, _s2) = authenticate(&run.node0, &wrong, claim(Channel::Data, job, 2), &forged);
    assert!(!ok, "a wrong key was accepted");
    let end = run.finish();
    drop(s);
    let log = end.log(0);
    assert!(
        log.matches("authentication failed").count() >= 2,
        "both forgeries are logged by rank 0:\n{log}"
    );
    assert!(log.contains("does not match this job's key"), "{log}");
    end.undisturbed(20);
}

#[test]
fn control_hijacks_are_refused_and_logged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scenario(dir.path(), "hijack", LONG);
    let key = JobKey::random().expect("randomness");
    let run = Run::start(dir.path(), &path, Some(&key));
    let job = run.job();
    // the old attack: re-point rank 1 at a port of the attacker's
    let line =
        format!("{{\"type\":\"hello\",\"job\":{job},\"rank\":1,\"incarnation\":0,\"port\":9}}\n");
    let mut s = TcpStream::connect(&run.rendezvous).expect("connect");
    let _ = s.write_all(line.as_bytes());
    let _ = s.shutdown(std::net::Shutdown::Write);
    // the same with a key of the attacker's own
    let wrong = JobKey::random().expect("randomness");
    let (ok, _s2) = authenticate(
        &run.rendezvous,
        &wrong,
        claim(Channel::Control, job, 1),
        line.as_bytes(),
    );
    assert!(!ok, "a wrong key was accepted on the control channel");
    // even with the key, a registered node cannot be re-pointed, and a proof for one node
    // does not speak for another
    let (ok, _s3) = authenticate(
        &run.rendezvous,
        &key,
        claim(Channel::Control, job, 1),
        line.as_bytes(),
    );
    assert!(ok, "the job's key is accepted");
    let (ok, _s4) = authenticate(
        &run.rendezvous,
        &key,
        claim(Channel::Control, job, 3),
        line.as_bytes(),
    );
    assert!(ok);
    // a data-channel proof is no control proof
    let (ok, _s5) = authenticate(
        &run.rendezvous,
        &key,
        claim(Channel::Data, job, 1),
        line.as_bytes(),
    );
    assert!(!ok);
    let end = run.finish();
    drop(s);
    let stderr = &end.stderr;
    assert!(
        stderr.matches("authentication failed").count() >= 3,
        "launch logs each refused connection:\n{stderr}"
    );
    assert!(
        stderr.contains("refusing a second control hello for node 1.0"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hello from node 1.0 on a connection proven for 3.0"),
        "{stderr}"
    );
    end.undisturbed(20);
}

/// An attacker without the key opens more idle connections to a worker and to launch than
/// they may hold files, and keeps them open: each listener closes the oldest connection still
/// in its handshake to make room, so the run goes on as if nobody had attacked it (before, a
/// worker spun in its accept loop and the job stalled). And the key given to launch is in no
/// process's environment.
#[test]
fn idle_connections_without_the_key_neither_stall_nor_end_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    // five times the usual run, so that it outlasts the attack: a listener that is slower to
    // accept than the attacker is to connect fills its backlog, and each connection past it
    // waits a second for its SYN to be sent again
    let path = scenario(
        dir.path(),
        "idle",
        &LONG.replace("iterations = 20", "iterations = 100"),
    );
    let key = JobKey::random().expect("randomness");
    let mut run = Run::start_with_open_files(dir.path(), &path, Some(&key), 256);
    // both listeners at once, each kept busy past the files its process may hold
    let idle: Vec<TcpStream> = std::thread::scope(|s| {
        let attacks: Vec<_> = [&run.node0, &run.rendezvous]
            .map(|addr| {
                s.spawn(move || {
                    (0..320)
                        .flat_map(|_| TcpStream::connect(addr))
                        .collect::<Vec<_>>()
                })
            })
            .into_iter()
            .collect();
        attacks
            .into_iter()
            .flat_map(|a| a.join().expect("an attacker"))
            .collect()
    });
    assert!(idle.len() >= 600, "{} connections", idle.len());
    assert!(
        run.child.try_wait().expect("launch").is_none(),
        "the run ended before the attack did"
    );
    let hex = key.to_hex();
    let pids = std::iter::once(run.child.id()).chain(run.workers().into_iter().map(|(p, _)| p));
    for pid in pids {
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&env).contains(&hex),
            "the job's key is in the environment of {pid}"
        );
    }
    let end = run.finish();
    drop(idle);
    end.undisturbed(100);
    assert!(
        end.stderr.contains("closed unproven to make room"),
        "launch logs the connections it closed:\n{}",
        end.stderr
    );
    assert!(
        end.log(0).contains("closed unproven to make room"),
        "rank 0 logs the connections it closed:\n{}",
        end.log(0)
    );
}

#[test]
fn chunks_far_ahead_are_capped_per_peer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scenario(dir.path(), "ahead", LONG);
    let key = JobKey::random().expect("randomness");
    // a peer that knows the key (a broken worker) floods rank 0 with chunks of calls a
    // million ahead: 94 frames of about 1 MB each, made before the run starts (the job id
    // goes in when it is known)
    let frames: Vec<Vec<u8>> = (0..94)
        .map(|i| chunk(0, 2, 1_000_000 + i, 250_000))
        .collect();
    let run = Run::start(dir.path(), &path, Some(&key));
    let job = run.job();
    let mut flood = hello(job, 2);
    for f in frames {
        flood.extend(with_job(f, job));
    }
    let (ok, s) = authenticate(&run.node0, &key, claim(Channel::Data, job, 2), &flood);
    assert!(ok);
    let end = run.finish();
    drop(s);
    let log = end.log(0);
    assert!(
        log.contains("for a call far ahead of this rank")
            && log.contains(&format!("at most {MAX_HELD_BYTES}")),
        "rank 0 logs the capped peer:\n{log}"
    );
    end.undisturbed(20);
}

#[test]
fn a_sigterm_stops_the_workers_and_removes_the_temporary_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).expect("mkdir");
    let path = scenario(dir.path(), "terminated", LONG);
    let run = Run::start_in_temp(&tmp, &path);
    let workers = run.workers();
    assert_eq!(workers.len(), 4, "{workers:?}");
    assert_eq!(std::fs::read_dir(&tmp).expect("tmp").count(), 1);
    let pid = nix::unistd::Pid::from_raw(run.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("signal launch");
    let end = run.finish();
    assert_eq!(end.code, Some(2), "{}", end.stderr);
    assert!(end.stderr.contains("stopped by SIGTERM"), "{}", end.stderr);
    let left: Vec<_> = std::fs::read_dir(&tmp).expect("tmp").collect();
    assert!(left.is_empty(), "{left:?}");
    for (w, _) in workers {
        // launch waited for each worker: none is left, not even as a zombie
        assert!(
            !Path::new(&format!("/proc/{w}")).exists(),
            "worker {w} outlived launch"
        );
    }
}

#[test]
fn time_scales_deadlines_and_process_counts_out_of_range_are_refused() {
    let p = "scenarios/brief-pause-recovers.toml";
    let cases: [(&[&str], &str); 7] = [
        (
            &["--time-scale", "1e-300"],
            "--time-scale 1e-300: must be between 0.001 and 1000",
        ),
        (
            &["--time-scale", "1e300"],
            "--time-scale 1e300: must be between 0.001 and 1000",
        ),
        (
            &["--time-scale", "NaN"],
            "--time-scale NaN: must be between",
        ),
        (
            &["--deadline", "0s"],
            "--deadline 0s: the run needs some time",
        ),
        (
            &["--deadline", "1000000h"],
            "more than 24h of wall-clock time",
        ),
        (
            &["--deadline", "1e300s"],
            "--deadline: unknown duration unit",
        ),
        (
            &["--nprocs", "1000000"],
            "--nprocs 1000000: 1000000 processes: a real run starts one OS process per rank",
        ),
    ];
    for (args, message) in cases {
        let mut a = vec!["launch", p];
        a.extend_from_slice(args);
        let o = ringside(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
    }
}
