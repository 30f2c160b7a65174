//! `ringside import`: real Flight Recorder dumps of hung PyTorch jobs and the upstream-derived
//! fixtures give their ground-truth culprit, from pickle and JSON, main and late dumps;
//! corrupt and hostile dumps exit 2; `--scenario`, `--trace` and `export --fr` round-trip.

mod common;

use common::{json, ringside};
use std::path::{Path, PathBuf};
use std::process::Command;

fn data() -> PathBuf {
    common::root().join("tests/data/flight-recorder")
}

fn import_json(paths: &[&Path]) -> serde_json::Value {
    let mut args = vec!["import", "--json"];
    let ps: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    args.extend(ps.iter().map(|s| s.as_str()));
    let o = ringside(&args);
    assert!(
        o.status.success(),
        "import {:?} failed: {}",
        ps,
        String::from_utf8_lossy(&o.stderr)
    );
    json(&o)
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    let mut s: Vec<String> = v
        .as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_str().expect("a string").to_string())
        .collect();
    s.sort();
    s
}

fn ranks(v: &serde_json::Value) -> Vec<u64> {
    let mut r: Vec<u64> = v
        .as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_u64().expect("a rank"))
        .collect();
    r.sort_unstable();
    r
}

/// The root causes a real case's ground truth (`case.json`) calls for.
fn expected_causes(case: &serde_json::Value) -> Vec<String> {
    let fault = case["fault"].as_str().expect("fault");
    let tag = match fault {
        "none" => return Vec::new(),
        "extra_collective" | "size_mismatch" => "mismatch",
        "rank_stuck_in_host_code" => "hung",
        "rank_died" => "missing",
        other => panic!("a case with an unknown fault class {other}"),
    };
    let mut v: Vec<String> = ranks(&case["culprit_ranks"])
        .iter()
        .map(|r| format!("{tag}:{r}"))
        .collect();
    v.sort();
    v
}

/// The five real cases whose ground truth `expected_causes` maps; the other cases of the corpus
/// carry their expected answer per form in `real/cases.json` (scored by `score.py`).
fn real_cases() -> Vec<PathBuf> {
    let v: Vec<PathBuf> = [
        "extra_collective",
        "healthy",
        "killed_rank",
        "size_mismatch",
        "stopped_rank",
    ]
    .iter()
    .map(|c| data().join("real").join(c))
    .collect();
    for p in &v {
        assert!(p.join("case.json").exists(), "{} is shipped", p.display());
    }
    v
}

#[test]
fn every_real_case_gives_its_ground_truth_from_every_form_of_its_dumps() {
    for dir in real_cases() {
        let case: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("case.json")).expect("case.json"))
                .expect("case.json is JSON");
        let want = expected_causes(&case);
        let without: Vec<u64> = ranks(&case["ranks_without_dump"]);
        for form in ["pickle", "json", "late/pickle", "late/json"] {
            let r = import_json(&[&dir.join(form)]);
            let what = format!("{} {form}", dir.display());
            assert_eq!(r["source"], "flight-recorder", "{what}");
            assert_eq!(strings(&r["root_causes"]), want, "{what}");
            assert_eq!(ranks(&r["missing"]), without, "{what}");
            assert_eq!(
                r["world_size"].as_u64(),
                case["world_size"].as_u64(),
                "{what}"
            );
            if want.is_empty() {
                assert_eq!(r["outcome"], "completed", "{what}");
                assert!(
                    r["blocked"].as_array().expect("blocked").is_empty(),
                    "{what}"
                );
                assert!(r["divergence"].is_null(), "{what}");
            } else {
                assert_eq!(r["outcome"], "stalled", "{what}");
                assert!(
                    !r["blocked"].as_array().expect("blocked").is_empty(),
                    "{what}"
                );
                let d = &r["divergence"];
                assert_eq!(d["group"], 0, "{what}");
                // the culprit is never among the ranks the divergence says agree
                for c in ranks(&case["culprit_ranks"]) {
                    assert!(!ranks(&d["agree"]).contains(&c), "{what}: {d}");
                }
            }
        }
    }
}

#[test]
fn the_earliest_divergence_is_found_not_the_hang_point() {
    let dir = data().join("real/extra_collective");
    // the pickle's stack frames show rank 0's third call comes from another line
    let r = import_json(&[&dir.join("pickle")]);
    assert_eq!(r["divergence"]["seq"], 3, "{}", r["divergence"]);
    assert_eq!(r["divergence"]["kind"], "extra_call");
    assert_eq!(ranks(&r["divergence"]["culprits"]), [0]);
    assert_eq!(
        ranks(
            &r["blocked"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["rank"].clone())
                .collect()
        ),
        [0]
    );
    // JSON has no frames: the first observable divergence is the call ranks 1,2 never issue
    let r = import_json(&[&dir.join("json")]);
    assert_eq!(r["divergence"]["seq"], 5);
    assert_eq!(strings(&r["root_causes"]), ["mismatch:0"]);
    // the size mismatch: rank 0, which gloo aborted for receiving it, is a victim
    let r = import_json(&[&data().join("real/size_mismatch/json")]);
    assert_eq!(r["divergence"]["seq"], 3);
    assert_eq!(ranks(&r["divergence"]["victims"]), [0]);
    assert_eq!(strings(&r["root_causes"]), ["mismatch:1"]);
}

#[test]
fn gloo_group_tables_are_repaired_from_the_records() {
    let r = import_json(&[&data().join("real/healthy/pickle")]);
    let groups = r["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0]["desc"], "default_pg");
    assert_eq!(ranks(&groups[0]["members"]), [0, 1, 2]);
    assert_eq!(groups[1]["desc"], "pair12");
    assert_eq!(ranks(&groups[1]["members"]), [1, 2]);
    assert_eq!(groups[1]["members_from"], "records");
    assert!(
        r["notes"].to_string().contains("point-to-point"),
        "{}",
        r["notes"]
    );
}

#[test]
fn fixtures_give_their_verdicts() {
    let fx = data().join("fixtures");
    // the tutorial's crash.py: rank 0's extra call at seq 3, not rank 1 "missing" at seq 5
    for p in [
        vec![fx.join("dumps/crash_py")],
        vec![
            fx.join("pickle/crash_py_trace_0"),
            fx.join("pickle/crash_py_trace_1"),
        ],
    ] {
        let ps: Vec<&Path> = p.iter().map(|x| x.as_path()).collect();
        let r = import_json(&ps);
        assert_eq!(strings(&r["root_causes"]), ["mismatch:0"], "{p:?}");
        assert_eq!(r["divergence"]["seq"], 3, "{p:?}");
    }
    // two ranks, one issues a call the other never does: the dumps cannot tell who is wrong
    for p in [
        vec![fx.join("dumps/trace_while_stuck")],
        vec![
            fx.join("pickle/trace_while_stuck_trace_0"),
            fx.join("pickle/trace_while_stuck_trace_1"),
        ],
    ] {
        let ps: Vec<&Path> = p.iter().map(|x| x.as_path()).collect();
        let r = import_json(&ps);
        assert_eq!(strings(&r["root_causes"]), ["undecided"], "{p:?}");
        assert!(
            r["undecided_reason"]
                .as_str()
                .is_some_and(|s| s.contains("rank 1")),
            "{r}"
        );
    }
    // one name, two groups: "107" is [1] on rank 1 and [4..7] on ranks 4-7
    let r = import_json(&[&fx.join("dumps/pg_name_collision")]);
    let groups = r["groups"].as_array().expect("groups");
    let g107: Vec<&serde_json::Value> = groups.iter().filter(|g| g["name"] == "107").collect();
    assert_eq!(g107.len(), 1, "only ranks 4-7 record calls of 107");
    assert_eq!(ranks(&g107[0]["members"]), [4, 5, 6, 7]);
    assert_eq!(strings(&r["root_causes"]), ["undecided"]);
    // the published single dump: its call completed on the device, so rank 1 took part
    for p in [
        fx.join("dumps/tutorial_example"),
        fx.join("pickle/tutorial_example_trace_0"),
    ] {
        let r = import_json(&[&p]);
        assert_eq!(r["outcome"], "completed", "{p:?}");
        assert_eq!(ranks(&r["missing"]), [1]);
    }
}

#[test]
fn directories_skip_files_without_a_rank_and_dot_draws_the_graph() {
    let o = ringside(&[
        "import",
        "--dot",
        data().join("real/killed_rank/json").to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let dot = String::from_utf8_lossy(&o.stdout);
    assert!(dot.starts_with("digraph waits {"), "{dot}");
    assert!(
        dot.contains("r0 -> r2") && dot.contains("missing:2"),
        "{dot}"
    );
    assert!(dot.contains("no dump"), "{dot}");
    let o = ringside(&["import", data().join("real/killed_rank").to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a case folder holds no dumps itself"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no dump files found"), "{err}");
    assert!(err.contains("skipped") && err.contains("case.md"), "{err}");
    let o = ringside(&[
        "import",
        "--prefix",
        "rank_",
        data().join("real/stopped_rank/json").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("root cause: ranks 0,1,2 issued"));
}

/// Files of a directory that are not dumps are skipped, said on stderr and listed in `--json`
/// with the reason.
#[test]
fn files_skipped_in_a_directory_are_listed_in_the_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = data().join("real/killed_rank/json");
    for e in std::fs::read_dir(&src).expect("case") {
        let p = e.expect("entry").path();
        std::fs::copy(&p, dir.path().join(p.file_name().unwrap())).expect("copy");
    }
    std::fs::write(dir.path().join("notes.txt"), "not a dump").expect("write");
    let o = ringside(&["import", "--json", dir.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let notes = dir.path().join("notes.txt").display().to_string();
    assert_eq!(
        json(&o)["skipped"],
        serde_json::json!([{"file": notes, "reason": "no rank number at the end of its name"}])
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!(
        "skipped {notes}: no rank number at the end of its name"
    )));
    // nothing skipped: an empty list
    let v = import_json(&[&src]);
    assert_eq!(v["skipped"], serde_json::json!([]), "{v}");
}

/// Runs import on files written to a temporary directory; returns (exit code, stderr).
fn import_files(files: &[(&str, &[u8])]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).expect("write");
    }
    let o = ringside(&["import", dir.path().to_str().unwrap()]);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn real_pickle() -> Vec<u8> {
    std::fs::read(data().join("real/stopped_rank/pickle/rank_0")).expect("a real pickle")
}

#[test]
fn truncated_and_malformed_dumps_exit_2_naming_the_file() {
    let p = real_pickle();
    for cut in [1, 2, 40, p.len() / 2, p.len() - 1] {
        let (code, err) = import_files(&[("rank_0", &p[..cut])]);
        assert_eq!(code, Some(2), "cut at {cut}: {err}");
        assert!(err.contains("rank_0") && err.contains("truncated"), "{err}");
    }
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("rank_0.json", b"".to_vec(), "empty file"),
        ("rank_0.json", b"{\"a\": 1}".to_vec(), "not a Flight Recorder dump"),
        ("rank_0.json", b"\x01\x02".to_vec(), "neither a pickle nor JSON"),
        (
            "rank_0.json",
            br#"{"version": "2.10", "entries": [{"profiling_name": "nccl:all_reduce", "process_group": ["0", ""], "collective_seq_id": [1]}]}"#.to_vec(),
            "entry 0: `collective_seq_id` should be an integer, found a list",
        ),
        (
            "rank_0.json",
            br#"{"version": "2.10", "entries": [{"process_group": ["0", ""], "collective_seq_id": 1}]}"#.to_vec(),
            "no `profiling_name`",
        ),
        (
            "rank_0.json",
            br#"{"version": "2.10", "entries": {"a": 1}}"#.to_vec(),
            "`entries` is a dict",
        ),
        (
            "rank_0.json",
            br#"{"version": "2.10", "pg_config": [1]}"#.to_vec(),
            "`pg_config` should be a dict",
        ),
        ("rank_0.json", b"[".repeat(10_000), "malformed JSON"),
    ];
    for (name, content, want) in cases {
        let (code, err) = import_files(&[(name, &content)]);
        assert_eq!(code, Some(2), "{want}: {err}");
        assert!(err.contains(name), "{err}");
        assert!(err.contains(want), "want {want:?} in {err}");
    }
    let (code, err) = import_files(&[("rank_0", &p), ("rank_0.json", b"{}")]);
    assert_eq!(code, Some(2));
    assert!(err.contains("a second dump of rank 0"), "{err}");
}

#[test]
fn huge_lists_are_refused_without_reading_them_into_memory() {
    // more records than any recorder holds
    let mut s = String::from("{\"version\": \"2.10\", \"entries\": [");
    s.push_str(&"{},".repeat(1_000_001));
    s.push_str("{}]}");
    let (code, err) = import_files(&[("rank_0.json", s.as_bytes())]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("1000002 records"), "{err}");
    // a pickle that repeats one reference: 2,000 records sharing one record whose sizes list
    // repeats one shared list 60,000 times (a few hundred KB that would expand to 10^8 values)
    let mut p: Vec<u8> = vec![0x80, 2, b'}', b'(']; // {  MARK
    p.extend(b"X\x07\x00\x00\x00entries"); // "entries"
    p.extend(b"]("); // [  MARK
    p.extend(b"}q\x01("); // the record, memo 1
    p.extend(b"X\x0e\x00\x00\x00profiling_nameX\x0f\x00\x00\x00nccl:all_reduce");
    p.extend(b"X\x11\x00\x00\x00collective_seq_idK\x01");
    p.extend(b"X\x0d\x00\x00\x00process_groupX\x01\x00\x00\x000");
    p.extend(b"X\x0b\x00\x00\x00input_sizes](]q\x02K\x01a"); // [[1] (memo 2)
    p.extend(std::iter::repeat_n(*b"h\x02", 60_000).flatten()); // ... 60,000 more
    p.extend(b"eu"); // APPENDS, SETITEMS: the record
    p.extend(std::iter::repeat_n(*b"h\x01", 1_999).flatten());
    p.extend(b"eu."); // APPENDS entries, SETITEMS, STOP
    let (code, err) = import_files(&[("rank_0", &p)]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("too many times"), "{err}");
}

#[test]
fn a_pickle_that_imports_a_python_object_is_refused_and_never_run() {
    // pickle.dumps of an object whose __reduce__ is (os.system, ("touch ...",)), protocol 2
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("ran");
    let cmd = format!("touch {}", marker.display());
    let mut p: Vec<u8> = vec![0x80, 2];
    p.extend(b"cposix\nsystem\nq\x00X");
    p.extend((cmd.len() as u32).to_le_bytes());
    p.extend(cmd.as_bytes());
    p.extend(b"q\x01\x85q\x02Rq\x03.");
    let (code, err) = import_files(&[("rank_0", &p)]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("rank_0"), "{err}");
    assert!(
        err.contains("`posix.system`") && err.contains("refused"),
        "{err}"
    );
    assert!(!marker.exists());
    // the other ways a pickle names or builds an object
    for op in [0x93u8, b'R', b'i', b'o', 0x81, 0x92, b'b'] {
        let p = [
            0x80, 2, b'X', 1, 0, 0, 0, b'a', b'X', 1, 0, 0, 0, b'b', op, b'.',
        ];
        let (code, err) = import_files(&[("rank_0", &p)]);
        assert_eq!(code, Some(2), "{op:#x}: {err}");
        assert!(err.contains("refused"), "{op:#x}: {err}");
    }
}

/// `missing:R` as a replay names it: a rank without a dump is replayed as a preemption.
fn as_replayed(causes: &[String]) -> Vec<String> {
    let mut v: Vec<String> = causes
        .iter()
        .map(|c| c.replace("missing:", "preempted:"))
        .collect();
    v.sort();
    v
}

fn blocked_ranks(r: &serde_json::Value) -> Vec<u64> {
    let mut v: Vec<u64> = r["blocked"]
        .as_array()
        .expect("blocked")
        .iter()
        .map(|b| b["rank"].as_u64().expect("rank"))
        .collect();
    v.sort_unstable();
    v
}

/// Imports `dumps` with `--scenario`, runs the scenario written, and checks that the replay
/// ends with the import's blocked ranks and root causes. Returns the import's report.
fn replays_to_the_same_verdict(dumps: &Path, out: &Path, what: &str) -> serde_json::Value {
    let o = ringside(&[
        "import",
        "--json",
        "--scenario",
        out.to_str().unwrap(),
        dumps.to_str().unwrap(),
    ]);
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let imported = json(&o);
    let run = ringside(&["run", "--json", out.to_str().unwrap()]);
    assert!(
        run.status.success(),
        "{what}: the replay does not meet its [expect]:\n{}",
        String::from_utf8_lossy(&run.stdout)
    );
    let replayed = json(&run);
    assert_eq!(replayed["outcome"], imported["outcome"], "{what}");
    assert_eq!(
        strings(&replayed["root_causes"]),
        as_replayed(&strings(&imported["root_causes"])),
        "{what}"
    );
    // a rank without a dump that the divergence explains (a victim) lives on in the
    // replay, blocked with the others
    let mut want = blocked_ranks(&imported);
    if let Some(v) = imported["divergence"]["victims"].as_array() {
        want.extend(v.iter().map(|x| x.as_u64().unwrap()));
    }
    // a rank in a call whose end the dumps cannot tell is blocked in it
    if let Some(v) = imported["in_progress"].as_array() {
        want.extend(v.iter().map(|x| x.as_u64().unwrap()));
    }
    want.sort_unstable();
    want.dedup();
    assert_eq!(blocked_ranks(&replayed), want, "{what}");
    imported
}

#[test]
fn the_scenario_of_every_real_case_replays_to_the_same_verdict() {
    let dir = tempfile::tempdir().expect("tempdir");
    for case in real_cases() {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        for form in ["pickle", "json", "late/pickle", "late/json"] {
            let out = dir.path().join(format!("{name}.toml"));
            replays_to_the_same_verdict(&case.join(form), &out, &format!("{name} {form}"));
        }
    }
    // the extra call is rank 0's own program; the group of two is a `[[groups]]` entry
    let out = dir.path().join("x.toml");
    let real = data().join("real");
    replays_to_the_same_verdict(&real.join("extra_collective/pickle"), &out, "extra");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("[[workload.programs]]"), "{text}");
    replays_to_the_same_verdict(&real.join("healthy/pickle"), &out, "healthy");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("[[groups]]") && text.contains("pair12"),
        "{text}"
    );
}

#[test]
fn the_scenario_of_every_stalled_fixture_replays_to_the_same_verdict_or_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("x.toml");
    let fx = data().join("fixtures");
    for f in [
        "dumps/crash_py",
        "pickle/crash_py_trace_0",
        "pickle/trace_while_stuck_trace_1",
        "dumps/tutorial_example",
    ] {
        replays_to_the_same_verdict(&fx.join(f), &out, f);
    }
    // where the dumps cannot decide, no scenario can tell the same story: exit 2, saying why
    for f in ["dumps/trace_while_stuck", "dumps/pg_name_collision"] {
        let _ = std::fs::remove_file(&out);
        let o = ringside(&[
            "import",
            "--scenario",
            out.to_str().unwrap(),
            fx.join(f).to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{f}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("cannot be replayed") && err.contains("undecided"),
            "{f}: {err}"
        );
        assert!(!out.exists(), "{f}: nothing is written");
    }
}

/// Runs the shipped scenario `name` (under `root`), writing its trace into `dir`: the trace's
/// path and the run's `--json` report.
fn run_shipped(root: &Path, dir: &Path, name: &str) -> (PathBuf, serde_json::Value) {
    let scenario = root.join("scenarios").join(format!("{name}.toml"));
    let trace = dir.join(format!("{name}.jsonl"));
    let run = ringside(&[
        "run",
        "--json",
        "--trace",
        trace.to_str().unwrap(),
        scenario.to_str().unwrap(),
    ]);
    (trace, json(&run))
}

#[test]
fn simulated_jobs_with_groups_and_messages_replay_from_their_dumps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in [
        "pipeline-recv-mismatch",
        "cross-group-deadlock",
        "moe-all-to-all",
        "mesh-tp-dp",
        "pipeline-1f1b",
        "hung-worker",
        "skipped-allreduce",
        "preempt-mid-allreduce",
    ] {
        let (trace, ran) = run_shipped(root, dir.path(), name);
        for pickle in [false, true] {
            let fr = dir.path().join(format!("{name}-{pickle}"));
            let mut args = vec![
                "export",
                trace.to_str().unwrap(),
                "--fr",
                fr.to_str().unwrap(),
            ];
            if pickle {
                args.push("--pickle");
            }
            assert!(ringside(&args).status.success(), "{name}");
            let what = format!("{name} (pickle: {pickle})");
            let out = dir.path().join(format!("{name}-{pickle}.toml"));
            let imported = replays_to_the_same_verdict(&fr, &out, &what);
            // a blocked send or recv names its other end, as `run` does
            for b in imported["blocked"].as_array().unwrap() {
                if b["op"] == "send" || b["op"] == "recv" {
                    assert!(b["peer"].is_u64(), "{what}: {b}");
                }
            }
            if name == "pipeline-recv-mismatch" {
                let o = ringside(&["import", fr.to_str().unwrap()]);
                let text = String::from_utf8_lossy(&o.stdout);
                assert!(text.contains("recv #3 from rank 1"), "{text}");
            }
            // the dumps tell the simulated story: a dead rank is one without a dump (JSON dumps
            // carry no call sites: a skipped call looks like another call made there)
            let loose = |v: Vec<String>| -> Vec<String> {
                v.iter()
                    .map(|c| {
                        if pickle {
                            c.clone()
                        } else {
                            c.replace("skipped:", "mismatch:")
                        }
                    })
                    .collect()
            };
            // (rank 1's inverted order in cross-group-deadlock: the run compares it with the
            // programs of ranks 2,3, the import with the order their sibling groups made the
            // two calls in, and the replay's split groups with their programs again)
            assert_eq!(
                loose(strings(&imported["root_causes"])),
                loose(as_dumped(&strings(&ran["root_causes"]))),
                "{what}"
            );
        }
    }
}

#[test]
fn the_trace_of_an_import_reads_in_explain_and_export() {
    let dir = tempfile::tempdir().expect("tempdir");
    for case in real_cases() {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let trace = dir.path().join(format!("{name}.jsonl"));
        let o = ringside(&[
            "import",
            "--json",
            "--trace",
            trace.to_str().unwrap(),
            case.join("pickle").to_str().unwrap(),
        ]);
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let imported = json(&o);
        let header: serde_json::Value = serde_json::from_str(
            std::fs::read_to_string(&trace)
                .unwrap()
                .lines()
                .next()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(header["real"], true);
        assert_eq!(header["driver"], "flight-recorder");
        let e = ringside(&["explain", "--json", trace.to_str().unwrap()]);
        assert!(
            e.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&e.stderr)
        );
        let explained = json(&e);
        // the trace tells the import's story: a victim without a dump waits in the call, alive
        let mut want = blocked_ranks(&imported);
        if let Some(v) = imported["divergence"]["victims"].as_array() {
            want.extend(v.iter().map(|x| x.as_u64().unwrap()));
            want.sort_unstable();
            want.dedup();
        }
        assert_eq!(blocked_ranks(&explained), want, "{name}");
        // a rank without a dump is missing there too, not preempted
        let mut want = strings(&imported["root_causes"]);
        want.sort();
        assert_eq!(strings(&explained["root_causes"]), want, "{name}");
        let pf = dir.path().join(format!("{name}.json"));
        let x = ringside(&[
            "export",
            trace.to_str().unwrap(),
            "--perfetto",
            pf.to_str().unwrap(),
        ]);
        assert!(
            x.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&x.stderr)
        );
    }
}

/// A cause as the dumps of a simulated run can show it: a dead or frozen rank writes no dump.
fn as_dumped(causes: &[String]) -> Vec<String> {
    let mut v: Vec<String> = causes
        .iter()
        .map(|c| {
            c.replace("preempted:", "missing:")
                .replace("paused:", "missing:")
        })
        .collect();
    v.sort();
    v
}

#[test]
fn exported_dumps_of_every_shipped_stall_import_back_to_the_same_root_cause() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // faults a Flight Recorder sees: its calls, and who left no dump
    let seen = [
        "hung-worker",
        "mismatched-bytes",
        "mismatched-op",
        "paused-worker",
        "preempt-and-pause",
        "preempt-mid-allreduce",
        "skipped-allreduce",
        "stalled-paused-worker",
    ];
    // a partition shows as every rank waiting in a call every member issued: the dumps
    // cannot tell, and say so
    let unseen = [
        "network-partition",
        "partition-oneway",
        "partition-three-ways",
    ];
    for name in seen.iter().chain(&unseen) {
        let (trace, ran) = run_shipped(root, dir.path(), name);
        assert_eq!(ran["outcome"], "stalled", "{name}");
        for pickle in [false, true] {
            let out = dir.path().join(format!("{name}-{pickle}"));
            let mut args = vec![
                "export",
                trace.to_str().unwrap(),
                "--fr",
                out.to_str().unwrap(),
            ];
            if pickle {
                args.push("--pickle");
            }
            let e = ringside(&args);
            assert!(
                e.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&e.stderr)
            );
            let imported = import_json(&[&out]);
            let what = format!("{name} (pickle: {pickle})");
            if unseen.contains(name) {
                assert_eq!(strings(&imported["root_causes"]), ["undecided"], "{what}");
            } else if pickle {
                assert_eq!(
                    strings(&imported["root_causes"]),
                    as_dumped(&strings(&ran["root_causes"])),
                    "{what}"
                );
            } else {
                // JSON dumps carry no call sites: a rank stuck in the call after the one it
                // skipped looks like a rank that called something else there
                let loose = |v: Vec<String>| -> Vec<String> {
                    v.iter()
                        .map(|c| c.replace("skipped:", "mismatch:"))
                        .collect()
                };
                assert_eq!(
                    loose(strings(&imported["root_causes"])),
                    loose(as_dumped(&strings(&ran["root_causes"]))),
                    "{what}"
                );
            }
        }
    }
}

/// Why PyTorch's fr_trace cannot run here, if it cannot: no python3, or no torch in it.
fn fr_trace_missing() -> Option<String> {
    match Command::new("python3")
        .args(["-c", "import torch.distributed.flight_recorder.fr_trace"])
        .output()
    {
        Err(e) => Some(format!("python3 cannot be run ({e})")),
        Ok(o) if !o.status.success() => Some(format!(
            "python3 has no torch.distributed.flight_recorder.fr_trace ({})",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )),
        Ok(_) => None,
    }
}

/// PyTorch's own analyzer reads the exported dumps, when Python with torch is installed.
#[test]
fn exported_dumps_read_in_pytorchs_fr_trace_when_it_is_installed() {
    if let Some(why) = fr_trace_missing() {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["mismatched-bytes", "hung-worker"] {
        let trace = dir.path().join(format!("{name}.jsonl"));
        let scenario = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .join(format!("{name}.toml"));
        ringside(&[
            "run",
            "--trace",
            trace.to_str().unwrap(),
            scenario.to_str().unwrap(),
        ]);
        let out = dir.path().join(name);
        let e = ringside(&[
            "export",
            trace.to_str().unwrap(),
            "--fr",
            out.to_str().unwrap(),
            "--pickle",
        ]);
        assert!(e.status.success(), "{name}");
        let files = std::fs::read_dir(&out).unwrap().count();
        assert!(files > 0, "{name}: no dumps written");
        // `-j`: fr_trace loads every dump and prints each rank's records; then the analysis
        for extra in [&["-j"][..], &[][..]] {
            let o = Command::new("python3")
                .args(["-m", "torch.distributed.flight_recorder.fr_trace"])
                .arg(&out)
                .args(extra)
                .output()
                .expect("python3 runs");
            let text = String::from_utf8_lossy(&o.stdout).into_owned()
                + &String::from_utf8_lossy(&o.stderr);
            assert!(
                o.status.success(),
                "{name} {extra:?}: fr_trace failed:\n{text}"
            );
            if extra == ["-j"] {
                assert!(
                    text.contains("all_reduce"),
                    "{name}: fr_trace read no records:\n{text}"
                );
            }
        }
    }
}

/// One JSON record: `(group name, seq, profiling name, retired)`.
fn rec(group: &str, seq: u64, name: &str, retired: bool, p2p: bool) -> serde_json::Value {
    serde_json::json!({
        "record_id": seq, "pg_id": 0, "process_group": [group, group],
        "collective_seq_id": if p2p { 0 } else { seq }, "p2p_seq_id": if p2p { seq } else { 0 },
        "op_id": seq, "profiling_name": name, "time_created_ns": 1_000 + seq,
        "input_sizes": [[4]], "output_sizes": [[4]], "input_dtypes": ["Float"],
        "output_dtypes": ["Float"], "state": if retired { "completed" } else { "scheduled" },
        "retired": retired, "timeout_ms": 1000, "is_p2p": p2p,
    })
}

fn job(dumps: &[serde_json::Value]) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("tempdir");
    for (r, d) in dumps.iter().enumerate() {
        std::fs::write(dir.path().join(format!("rank_{r}.json")), d.to_string()).expect("write");
    }
    import_json(&[dir.path()])
}

#[test]
fn wait_cycles_across_groups_and_peers_are_deadlocks() {
    let cfg = serde_json::json!({
        "a": {"name": "a", "desc": "a", "ranks": "[0, 1]"},
        "b": {"name": "b", "desc": "b", "ranks": "[0, 1]"},
    });
    // two groups called in opposite orders
    let r = job(&[
        serde_json::json!({"version": "2.10", "pg_config": cfg,
            "entries": [rec("a", 1, "nccl:all_reduce", false, false)]}),
        serde_json::json!({"version": "2.10", "pg_config": cfg,
            "entries": [rec("b", 1, "nccl:all_reduce", false, false)]}),
    ]);
    assert_eq!(strings(&r["root_causes"]), ["deadlock:0,1"], "{r}");
    assert_eq!(blocked_ranks(&r), [0, 1]);
    // two ranks receiving from each other first
    let r = job(&[
        serde_json::json!({"version": "2.10", "pg_config": cfg,
            "entries": [rec("a", 1, "nccl:recv 0<-1", false, true)]}),
        serde_json::json!({"version": "2.10", "pg_config": cfg,
            "entries": [rec("a", 1, "nccl:recv 1<-0", false, true)]}),
    ]);
    assert_eq!(strings(&r["root_causes"]), ["deadlock:0,1"], "{r}");
    // a send matched by its receive completes; an unmatched receive waits
    let r = job(&[
        serde_json::json!({"version": "2.10", "pg_config": cfg,
            "entries": [rec("a", 1, "nccl:send 0->1", true, true)]}),
        serde_json::json!({"version": "2.10", "pg_config": cfg,
            "entries": [rec("a", 1, "nccl:recv 1<-0", true, true),
                        rec("a", 2, "nccl:recv 1<-0", false, true)]}),
    ]);
    assert_eq!(strings(&r["root_causes"]), ["undecided"], "{r}");
    assert_eq!(blocked_ranks(&r), [1]);
}

#[test]
fn old_layouts_are_read_by_their_keys_and_mixed_versions_are_noted() {
    // PyTorch 2.2: a bare list of entries with `seq_id`; 1.4: `pg_config` as {pg_id: [ranks]}
    let mut old = rec("0", 1, "nccl:all_reduce", true, false);
    let o = old.as_object_mut().unwrap();
    o.remove("collective_seq_id");
    o.insert("seq_id".into(), 1.into());
    o.remove("process_group");
    let r = job(&[
        serde_json::json!([old]),
        serde_json::json!({"version": "1.4", "pg_config": {"0": [0, 1]},
            "entries": [{"seq_id": 1, "pg_id": 0, "profiling_name": "nccl:all_reduce",
                         "input_sizes": [[4]], "output_sizes": [[4]], "state": "completed",
                         "time_created_ns": 1001}]}),
    ]);
    assert_eq!(r["outcome"], "completed", "{r}");
    assert!(
        r["notes"].to_string().contains("different versions"),
        "{}",
        r["notes"]
    );
}

#[test]
fn a_ring_buffer_that_dropped_old_records_is_not_a_divergence() {
    let cfg = serde_json::json!({"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2]"}});
    let full: Vec<serde_json::Value> = (1..=4)
        .map(|s| rec("0", s, "nccl:all_reduce", true, false))
        .collect();
    // rank 2 kept only its last two records
    let r = job(&[
        serde_json::json!({"version": "2.10", "pg_config": cfg, "entries": full}),
        serde_json::json!({"version": "2.10", "pg_config": cfg, "entries": full}),
        serde_json::json!({"version": "2.10", "pg_config": cfg, "entries": full[2..]}),
    ]);
    assert_eq!(r["outcome"], "completed", "{r}");
    assert!(r["divergence"].is_null(), "{r}");
    // and a rank that stopped is still told from one whose records were overwritten: rank 2
    // has no record of #5, and `pg_status` says it never enqueued it
    let mut more = full.clone();
    more.push(rec("0", 5, "nccl:all_reduce", false, false));
    let status = |n: u64| {
        serde_json::json!({"0": {"last_enqueued_collective": n,
        "last_started_collective": -1, "last_completed_collective": 4}})
    };
    let r = job(&[
        serde_json::json!({"version": "2.10", "pg_config": cfg, "pg_status": status(5), "entries": more}),
        serde_json::json!({"version": "2.10", "pg_config": cfg, "pg_status": status(5), "entries": more}),
        serde_json::json!({"version": "2.10", "pg_config": cfg, "pg_status": status(4), "entries": full[2..]}),
    ]);
    assert_eq!(strings(&r["root_causes"]), ["hung:2"], "{r}");
}

/// A world of thousands of ranks, stated with `--world-size` (a name so far past the dumps'
/// evidence is otherwise refused), that left two dumps: the import names the others as one
/// cause, its ranks as ranges, in a few lines and at once (it used to compare every such rank
/// with every other, for minutes and gigabytes, and to list a cause per rank).
#[test]
fn thousands_of_ranks_without_a_dump_are_one_cause_named_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = real_pickle();
    std::fs::write(dir.path().join("rank_0"), &p).expect("write");
    std::fs::write(dir.path().join("rank_4999"), &p).expect("write");
    let o = common::cmd()
        .args([
            "import",
            dir.path().to_str().unwrap(),
            "--world-size",
            "5000",
        ])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .expect("the ringside binary runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("STALLED: missing:1-4998 — "), "{out}");
    assert!(out.contains("a 5000-rank job"), "{out}");
    assert!(out.contains("0 waits for 1-4998"), "{out}");
    assert!(
        out.contains("root cause: ranks 1-4998 of group 0 (default_pg) left no dump"),
        "{out}"
    );
    assert!(!out.contains("more root causes"), "{out}");
    assert!(out.lines().count() < 20, "{out}");
    let o = common::cmd()
        .args([
            "import",
            "--json",
            dir.path().to_str().unwrap(),
            "--world-size",
            "5000",
        ])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .expect("the ringside binary runs");
    let v = json(&o);
    assert_eq!(
        v["root_causes"],
        serde_json::json!(["missing:1-4998"]),
        "{}",
        v["root_causes"]
    );
    for b in v["blocked"].as_array().expect("blocked") {
        assert_eq!(b["root_causes"], serde_json::json!(["missing:1-4998"]));
    }
    // the full list of ranks is in `missing`
    assert_eq!(v["missing"].as_array().map(Vec::len), Some(4998));
    // up to a screen of them, each is a cause of its own
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("rank_0"), &p).expect("write");
    // (a 4-rank job's table: names are believed up to rank 7)
    std::fs::write(dir.path().join("rank_7"), &p).expect("write");
    let v = import_json(&[dir.path()]);
    let want: Vec<String> = (1..7).map(|r| format!("missing:{r}")).collect();
    assert_eq!(strings(&v["root_causes"]), want, "{v}");
}

/// One NCCL-style JSON record with its state: `(group, seq, p2p seq, profiling name, state)`;
/// `completed` records are retired.
fn nccl(group: &str, seq: u64, p2p_seq: u64, name: &str, state: &str) -> serde_json::Value {
    let p2p = name.contains("send ") || name.contains("recv ");
    let mut r = rec(group, seq, name, state == "completed", p2p);
    r["collective_seq_id"] = seq.into();
    r["p2p_seq_id"] = p2p_seq.into();
    r["state"] = state.into();
    if name.ends_with(":coalesced") {
        r["input_sizes"] = serde_json::json!([]);
        r["output_sizes"] = serde_json::json!([]);
    }
    r
}

fn world4(entries: Vec<Vec<serde_json::Value>>) -> serde_json::Value {
    let cfg =
        serde_json::json!({"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}});
    let dumps: Vec<serde_json::Value> = entries
        .into_iter()
        .map(|e| serde_json::json!({"version": "2.10", "pg_config": cfg, "entries": e}))
        .collect();
    job(&dumps)
}

/// A call's state is evidence: a rank whose kernel never started (`scheduled`) while its peers'
/// did holds them up, in a collective, in a send, and in a batch of sends and recvs whose
/// closing record alone carries the state.
#[test]
fn a_rank_whose_kernel_never_started_holds_up_its_peers() {
    let done = |s: u64| nccl("0", s, 0, "nccl:all_reduce", "completed");
    let at5 = |state: &str| {
        let mut v: Vec<serde_json::Value> = (1..5).map(done).collect();
        v.push(nccl("0", 5, 0, "nccl:all_reduce", state));
        v
    };
    let r = world4(vec![
        at5("started"),
        at5("started"),
        at5("scheduled"),
        at5("started"),
    ]);
    assert_eq!(strings(&r["root_causes"]), ["hung:2"], "{r}");
    assert_eq!(blocked_ranks(&r), [0, 1, 3]);
    // a pipeline, no collective before it: rank 1's send never started
    let r = world4(vec![
        vec![nccl("0", 0, 1, "nccl:send 0->1", "completed")],
        vec![
            nccl("0", 0, 1, "nccl:recv 1<-0", "completed"),
            nccl("0", 0, 2, "nccl:send 1->2", "scheduled"),
        ],
        vec![nccl("0", 0, 1, "nccl:recv 2<-1", "started")],
        vec![nccl("0", 0, 1, "nccl:recv 3<-2", "started")],
    ]);
    assert_eq!(strings(&r["root_causes"]), ["hung:1"], "{r}");
    assert_eq!(blocked_ranks(&r), [2, 3]);
    let b = &r["blocked"][0];
    assert_eq!(
        (b["op"].as_str(), b["peer"].as_u64()),
        (Some("recv"), Some(1))
    );
    // batch_isend_irecv: the closing record of rank 3's batch never started
    let batch = |ops: [&str; 2], state: &str| {
        let mut v = vec![done(1)];
        v.extend(ops.map(|o| nccl("0", 1, 1, o, "scheduled")));
        v.push(nccl("0", 1, 1, "nccl:coalesced", state));
        v
    };
    let r = world4(vec![
        vec![done(1)],
        vec![done(1)],
        batch(["nccl:send 2->3", "nccl:recv 2<-3"], "started"),
        batch(["nccl:recv 3<-2", "nccl:send 3->2"], "scheduled"),
    ]);
    assert_eq!(strings(&r["root_causes"]), ["hung:3"], "{r}");
    assert_eq!(blocked_ranks(&r), [2]);
}

/// A rank stuck in one call holds up every call it issued behind it: a peer that waits for one
/// of those waits for whatever holds the rank.
#[test]
fn a_call_behind_a_stuck_one_waits_for_it() {
    let cfg = serde_json::json!({
        "1": {"name": "1", "desc": "tp", "ranks": "[0, 1]"},
        "2": {"name": "2", "desc": "pp", "ranks": "[1, 2]"},
    });
    let dump = |e: Vec<serde_json::Value>| serde_json::json!({"version": "2.10", "pg_config": cfg, "entries": e});
    // rank 1 waits in tp #1 for rank 0, which left no dump; behind it pp's #1, which rank 2
    // waits in
    let dir = tempfile::tempdir().expect("tempdir");
    for (r, d) in [
        (
            1,
            dump(vec![
                nccl("1", 1, 0, "nccl:all_reduce", "started"),
                nccl("0", 1, 0, "nccl:all_reduce", "scheduled"),
            ]),
        ),
        (2, dump(vec![nccl("0", 1, 0, "nccl:all_reduce", "started")])),
    ] {
        std::fs::write(dir.path().join(format!("rank_{r}.json")), d.to_string()).expect("write");
    }
    let r = import_json(&[dir.path()]);
    assert_eq!(strings(&r["root_causes"]), ["missing:0"], "{r}");
    assert_eq!(blocked_ranks(&r), [1, 2]);
}

/// torch writes `_all_gather_base` where ProcessGroupNCCL writes `_allgather_base`: both are
/// all_gather_into_tensor, so ranks recorded either way agree, and the job replays.
#[test]
fn both_spellings_of_all_gather_base_are_one_op() {
    let gather_in = |name: &str, state: &str| {
        let mut r = nccl("0", 1, 0, name, state);
        r["output_sizes"] = serde_json::json!([[16]]);
        r
    };
    let gather = |name: &str| gather_in(name, "completed");
    let r = world4(vec![
        vec![gather("nccl:_allgather_base")],
        vec![gather("nccl:_all_gather_base")],
        vec![gather("nccl:all_gather_into_tensor")],
        vec![gather("nccl:_allgather_base")],
    ]);
    assert_eq!(r["outcome"], "completed", "{r}");
    assert!(r["divergence"].is_null(), "{r}");
    assert_eq!(r["ops"][0]["op"], "allgather", "{r}");
    // a rank whose all-gather never started holds the others up, whatever its spelling
    let r = world4(vec![
        vec![gather_in("nccl:_allgather_base", "started")],
        vec![gather_in("nccl:_all_gather_base", "started")],
        vec![gather_in("nccl:_all_gather_base", "scheduled")],
        vec![gather_in("nccl:all_gather_into_tensor", "started")],
    ]);
    assert_eq!(strings(&r["root_causes"]), ["hung:2"], "{r}");
    // and the job replays
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg =
        serde_json::json!({"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}});
    for (rank, name) in [
        "_allgather_base",
        "_all_gather_base",
        "_allgather_base",
        "all_gather_into_tensor",
    ]
    .iter()
    .enumerate()
    {
        // rank 3 stops after the all-gather
        let mut entries: Vec<serde_json::Value> = Vec::new();
        let mut g = gather(&format!("nccl:{name}"));
        g["record_id"] = 0.into();
        entries.push(g);
        if rank != 3 {
            let mut a = nccl("0", 2, 0, "nccl:all_reduce", "started");
            a["record_id"] = 1.into();
            entries.push(a);
        }
        let d = serde_json::json!({"version": "2.10", "pg_config": cfg, "entries": entries});
        std::fs::write(dir.path().join(format!("rank_{rank}.json")), d.to_string()).expect("write");
    }
    let out = dir.path().join("gather.toml");
    let r = replays_to_the_same_verdict(dir.path(), &out, "all_gather_base spellings");
    assert_eq!(strings(&r["root_causes"]), ["hung:3"], "{r}");
    let toml = std::fs::read_to_string(&out).expect("scenario");
    assert!(toml.contains("op = \"allgather\""), "{toml}");
}

/// The text of the divergence of the first data-parallel group that has one.
fn dp_divergence(r: &serde_json::Value) -> String {
    (r["groups"].as_array().into_iter().flatten())
        .filter(|g| g["desc"] == "DATA_PARALLEL_GROUP")
        .find_map(|g| g["divergence"]["text"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// A data-parallel reduce_scatter whose size differs on one rank of a two-member group is a
/// tie within the group: its earlier calls, else its sibling groups at the same seq (the other
/// replicas: same description and size, other members), tell which size is right, and the
/// reason says which evidence decided; with neither, it is `undecided`, the tie stated.
#[test]
fn a_tie_in_a_pair_is_decided_by_its_history_or_its_sibling_groups() {
    let rs = |seq: u64, n: u64, state: &str| {
        let mut r = nccl("1", seq, 0, "nccl:_reduce_scatter_base", state);
        r["process_group"] = serde_json::json!(["1", "DATA_PARALLEL_GROUP"]);
        r["input_sizes"] = serde_json::json!([[n]]);
        r["output_sizes"] = serde_json::json!([[n / 2]]);
        r
    };
    let world = |state: &str| nccl("0", 1, 0, "nccl:all_reduce", state);
    let dumps = |ranks: &[u32], entries: &dyn Fn(u32) -> Vec<serde_json::Value>| {
        let dir = tempfile::tempdir().expect("tempdir");
        let all: Vec<String> = ranks.iter().map(u32::to_string).collect();
        for &r in ranks {
            let pair = if r < 2 { "[0, 1]" } else { "[2, 3]" };
            let cfg = serde_json::json!({
                "0": {"name": "0", "desc": "default_pg", "ranks": format!("[{}]", all.join(", "))},
                "1": {"name": "1", "desc": "DATA_PARALLEL_GROUP", "ranks": pair},
            });
            let d = serde_json::json!({"version": "2.10", "pg_config": cfg, "entries": entries(r)});
            std::fs::write(dir.path().join(format!("rank_{r}.json")), d.to_string())
                .expect("write");
        }
        import_json(&[dir.path()])
    };
    // the sibling pair 2,3 made #1 with 8 elements: rank 1's 4 is the deviation
    let r = dumps(&[0, 1, 2, 3], &|r| match r {
        0 => vec![rs(1, 8, "started")],
        1 => vec![rs(1, 4, "started")],
        _ => vec![rs(1, 8, "completed"), world("started")],
    });
    assert_eq!(strings(&r["root_causes"]), ["mismatch:1"], "{r}");
    let why = dp_divergence(&r);
    assert!(
        why.contains("1 sibling group (DATA_PARALLEL_GROUP, the same size, other members) made #1 as rank 0 did"),
        "{why}"
    );
    // the sibling agrees with rank 1 instead: rank 0 is named
    let r = dumps(&[0, 1, 2, 3], &|r| match r {
        0 => vec![rs(1, 8, "started")],
        1 => vec![rs(1, 4, "started")],
        _ => vec![rs(1, 4, "completed"), world("started")],
    });
    assert_eq!(strings(&r["root_causes"]), ["mismatch:0"], "{r}");
    // the group's own earlier call decides before any sibling
    let r = dumps(&[0, 1], &|r| {
        vec![
            rs(1, 8, "completed"),
            rs(2, if r == 1 { 4 } else { 8 }, "started"),
        ]
    });
    assert_eq!(strings(&r["root_causes"]), ["mismatch:1"], "{r}");
    let why = dp_divergence(&r);
    assert!(
        why.contains("the group's calls at other seqs were made as rank 0 made this one"),
        "{why}"
    );
    // neither: a tie, stated
    let r = dumps(&[0, 1], &|r| {
        vec![rs(1, if r == 1 { 4 } else { 8 }, "started")]
    });
    assert_eq!(strings(&r["root_causes"]), ["undecided"], "{r}");
    let why = r["undecided_reason"].as_str().unwrap_or("");
    assert!(
        why.contains(
            "no majority, and neither the group's calls at other seqs nor its sibling groups"
        ),
        "{why}"
    );
}

/// Two ranks of a data-parallel pair wait for each other: rank 1 entered the world all_reduce
/// first, rank 0 the pair's reduce_scatter, and neither's records reach back to an earlier
/// iteration. The other replicas (the sibling pairs: same description and size, other members)
/// made the two calls in one order, which names the rank that deviates from it; when the
/// siblings are split as many one way as the other, the cycle is a deadlock, the tie stated.
#[test]
fn a_call_order_the_pair_disputes_is_decided_by_its_sibling_groups() {
    let rs = |state: &str| {
        let mut r = nccl("1", 1, 0, "nccl:_reduce_scatter_base", state);
        r["process_group"] = serde_json::json!(["1", "DATA_PARALLEL_GROUP"]);
        r["input_sizes"] = serde_json::json!([[8]]);
        r
    };
    let world = |state: &str| nccl("0", 1, 0, "nccl:all_reduce", state);
    let rs_first = || vec![rs("completed"), world("started")];
    let world_first = || vec![world("started"), rs("scheduled")];
    let dumps = |entries: Vec<Vec<serde_json::Value>>| {
        let dir = tempfile::tempdir().expect("tempdir");
        let all: Vec<String> = (0..entries.len()).map(|r| r.to_string()).collect();
        for (r, mut e) in entries.into_iter().enumerate() {
            for (i, x) in e.iter_mut().enumerate() {
                x["record_id"] = i.into();
                x["time_created_ns"] = (1_000 + i).into();
            }
            let pair = format!("[{}, {}]", r / 2 * 2, r / 2 * 2 + 1);
            let cfg = serde_json::json!({
                "0": {"name": "0", "desc": "default_pg", "ranks": format!("[{}]", all.join(", "))},
                "1": {"name": "1", "desc": "DATA_PARALLEL_GROUP", "ranks": pair},
            });
            let d = serde_json::json!({"version": "2.10", "pg_config": cfg, "entries": e});
            std::fs::write(dir.path().join(format!("rank_{r}.json")), d.to_string())
                .expect("write");
        }
        import_json(&[dir.path()])
    };
    let explained = |r: &serde_json::Value| strings(&r["explanation"]).join("\n");
    let pair = || {
        vec![
            vec![rs("started"), world("scheduled")],
            vec![world("started"), rs("scheduled")],
        ]
    };
    // the pair alone: nothing says whose order is right
    let r = dumps(pair());
    assert_eq!(strings(&r["root_causes"]), ["deadlock:0,1"], "{r}");
    // the sibling pair 2,3 made the reduce_scatter first: rank 1 deviates
    let r = dumps([pair(), vec![rs_first(), rs_first()]].concat());
    assert_eq!(strings(&r["root_causes"]), ["mismatch:1"], "{r}");
    assert_eq!(blocked_ranks(&r), [0, 1, 2, 3]);
    let why = explained(&r);
    assert!(
        why.contains(
            "rank 1 called nccl:all_reduce #1 of group 0 (default_pg) first, where rank 0 waits \
             for it in nccl:reduce_scatter_tensor #1 of group 1 (DATA_PARALLEL_GROUP), which the \
             ranks of the sibling groups (the same descriptions and sizes, other members) made \
             first (2 ranks did, 0 made the other first)"
        ),
        "{why}"
    );
    // the siblings made the world all_reduce first instead: rank 0 is named
    let r = dumps([pair(), vec![world_first(), world_first()]].concat());
    assert_eq!(strings(&r["root_causes"]), ["mismatch:0"], "{r}");
    // two sibling pairs, one each way: a tie, stated
    let r = dumps(
        [
            pair(),
            vec![rs_first(), rs_first()],
            vec![world_first(), world_first()],
        ]
        .concat(),
    );
    assert_eq!(strings(&r["root_causes"]), ["deadlock:0,1"], "{r}");
    let why = explained(&r);
    assert!(
        why.contains(
            "the ranks of the sibling groups tie on the order: 2 ranks made \
             nccl:reduce_scatter_tensor #1 of group 1 (DATA_PARALLEL_GROUP) first, as many made \
             nccl:all_reduce #1 of group 0 (default_pg) first"
        ),
        "{why}"
    );
}

/// Ranks an equal step apart (every 8th rank of a 512-rank job left no dump: one replica of
/// every tensor-parallel group) are one term, `7-511/8`, in the first line, in `--json`'s
/// causes and in the trace written from the dumps, which `explain` reads back; the scenario
/// written from them replays (each such rank preempted).
#[test]
fn ranks_an_equal_step_apart_are_written_as_one_stepped_range() {
    let dir = tempfile::tempdir().expect("tempdir");
    let world: Vec<String> = (0..512).map(|r: u32| r.to_string()).collect();
    let cfg = serde_json::json!({
        "0": {"name": "0", "desc": "default_pg", "ranks": format!("[{}]", world.join(", "))},
    });
    for r in (0..512u32).filter(|r| r % 8 != 7) {
        let d = serde_json::json!({"version": "2.10", "pg_config": cfg,
            "entries": [nccl("0", 1, 0, "nccl:all_reduce", "started")]});
        std::fs::write(dir.path().join(format!("rank_{r}.json")), d.to_string()).expect("write");
    }
    let scenario = dir.path().join("replay.toml");
    let trace = dir.path().join("import.jsonl");
    let o = ringside(&[
        "import",
        dir.path().to_str().unwrap(),
        "--scenario",
        scenario.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let first = out.lines().next().unwrap_or_default();
    assert!(first.starts_with("STALLED: missing:7-511/8 — "), "{first}");
    assert!(
        first.contains("ranks 7-511/8 of group 0 (default_pg) left no dump"),
        "{first}"
    );
    // the ranks with a dump: one term per offset
    assert!(
        first.contains("ranks 0-504/8,1-505/8,2-506/8,3-507/8,4-508/8,5-509/8,6-510/8 are blocked"),
        "{first}"
    );
    let v = import_json(&[dir.path()]);
    assert_eq!(strings(&v["root_causes"]), ["missing:7-511/8"], "{v}");
    assert_eq!(v["missing"].as_array().map(Vec::len), Some(64));
    // the replay preempts each of them: the scenario meets its `[expect]`
    let run = ringside(&["run", scenario.to_str().unwrap()]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stdout)
    );
    // the trace holds the cause as written, and `explain` reads it back
    let explained = ringside(&["explain", trace.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&explained.stdout);
    assert!(text.starts_with("STALLED: missing:7-511/8 — "), "{text}");
}
