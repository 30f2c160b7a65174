//! The example's binary, `bidi-ring`: ringside's command line with the bidirectional ring
//! registered. Its commands know `bidi_ring` and `bidi_ring_wrong_peer` by name: `run`,
//! `check` (whose failure files name the algorithm), `replay` and `explain` of those files, and
//! `tui`, as a user of the example would run them.

use std::path::Path;
use std::process::{Command, Output};

fn bidi_ring(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bidi-ring"))
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .expect("the example's binary runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// One allreduce of `algorithm` on `p` ranks.
fn write_scenario(dir: &Path, algorithm: &str, p: u32) -> std::path::PathBuf {
    let path = dir.join(format!("{algorithm}.toml"));
    let text = format!(
        "name = \"{algorithm}\"\n[world]\nsize = {p}\n\
         [network]\nlatency = \"5us\"\nbandwidth = \"1GB/s\"\n\
         [group]\ntimeout = \"50ms\"\n\
         [workload]\ndtype = \"i64\"\nelements = 29\n\
         [[workload.ops]]\nop = \"allreduce\"\nalgorithm = \"{algorithm}\"\nbytes = \"64KiB\"\n"
    );
    std::fs::write(&path, text).expect("write the scenario");
    path
}

#[test]
fn its_run_knows_the_registered_algorithm() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let s = write_scenario(dir.path(), "bidi_ring", 5);
    let o = bidi_ring(&[&"run", &s]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report = text(&o);
    assert!(
        report.starts_with("COMPLETED: 1 collective on 5 ranks")
            && report
                .lines()
                .next()
                .is_some_and(|l| l.ends_with("all results correct")),
        "{report}"
    );
    // an algorithm nobody registered is refused as bad input, naming the file
    let unknown = write_scenario(dir.path(), "tri_ring", 5);
    let o = bidi_ring(&[&"run", &unknown]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("tri_ring.toml"), "{}", text(&o));
    assert!(text(&o).contains("tri_ring"), "{}", text(&o));
}

#[test]
fn its_check_replay_explain_and_tui_know_the_planted_bug() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let s = write_scenario(dir.path(), "bidi_ring_wrong_peer", 6);
    let out = dir.path().join("failures");
    let o = bidi_ring(&[
        &"check", &s, &"--cases", &"4", &"--seed", &"3", &"--out", &out,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("check: property `schedule_contract`"),
        "{}",
        text(&o)
    );
    let files: Vec<_> = std::fs::read_dir(&out)
        .expect("the failure's files")
        .map(|e| e.expect("an entry").path())
        .collect();
    let toml = files
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "toml"))
        .expect("a scenario file");
    let trace = files
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("a trace");
    let written = std::fs::read_to_string(toml).expect("the scenario");
    assert!(
        written.contains("algorithm = \"bidi_ring_wrong_peer\""),
        "{written}"
    );
    // the files reproduce the failure with the same binary
    let o = bidi_ring(&[&"replay", trace]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("identical"), "{}", text(&o));
    let o = bidi_ring(&[&"run", toml, &"--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["outcome"], "stalled");
    assert_eq!(v["root_causes"], serde_json::json!(["mismatch:0"]));
    let o = bidi_ring(&[&"explain", trace]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o)
            .contains("rank 0 sent its chunk of step 3/6 of allreduce #1 (bidi_ring_wrong_peer)"),
        "{}",
        text(&o)
    );
    // the viewer reads the trace, then asks for a terminal
    let o = bidi_ring(&[&"tui", trace]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("needs a terminal"), "{}", text(&o));
}

/// A schedule that completes with a wrong result: `run` says so first, and `explain` of its
/// trace does not say all is well — its first line counts the wrong call, the next lines name
/// it, and `--json` lists it.
#[test]
fn a_wrong_result_is_the_answer_of_run_and_explain() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let s = write_scenario(dir.path(), "bidi_ring_wrong_sum", 5);
    let trace = dir.path().join("wrong.jsonl");
    let o = bidi_ring(&[&"run", &s, &"--trace", &trace]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let first = text(&o).lines().next().unwrap_or_default().to_string();
    assert!(
        first.starts_with("COMPLETED: 1 collective on 5 ranks")
            && first.ends_with("WRONG results in 1 call"),
        "{}",
        text(&o)
    );
    let o = bidi_ring(&[&"explain", &trace]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report = text(&o);
    assert!(
        report
            .lines()
            .next()
            .is_some_and(|l| l.starts_with("COMPLETED:") && l.ends_with("WRONG results in 1 call")),
        "{report}"
    );
    assert!(
        report.contains("wrong results:\n  iter 0 op 0: allreduce #1"),
        "{report}"
    );
    assert!(report.contains("WRONG RESULT"), "{report}");
    let o = bidi_ring(&[&"explain", &trace, &"--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["wrong_results"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v["wrong_results"][0]["op"], "allreduce", "{v}");
    assert_eq!(v["wrong_results"][0]["correct"], false, "{v}");
}
