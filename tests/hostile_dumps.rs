//! Hostile Flight Recorder dumps through `ringside import`: pickles that reach below their
//! marks, file names that would size the world, files that are not files, a hundred thousand
//! groups, and text a terminal acts on. Each exits 2 with a one-line error naming the file,
//! or is read within its bounds and reported safely. The dumps are in
//! tests/data/hostile/dumps/ (written by its `make.py`); the large and special ones are made
//! here.

mod common;

use common::{ringside, root, text};
use std::path::{Path, PathBuf};
use std::process::Output;

fn dumps(case: &str) -> PathBuf {
    root().join("tests/data/hostile/dumps").join(case)
}

/// Exit 2 with one line, `error: FILE: ...` naming `file`, and `want` in it.
fn refused(o: &Output, file: &str, want: &str) {
    let out = text(o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(o.stdout.is_empty(), "{out}");
    assert!(!out.contains("panicked"), "{out}");
    assert_eq!(out.trim_end().lines().count(), 1, "one line:\n{out}");
    assert!(out.starts_with("error: ") && out.contains(file), "{out}");
    assert!(out.contains(want), "want {want:?} in:\n{out}");
}

#[test]
fn a_pickle_that_takes_values_from_below_its_mark_is_refused() {
    let dir = dumps("below-a-mark");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("the corpus") {
        let path = e.expect("an entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let o = ringside(&["import".as_ref(), path.as_os_str()]);
        refused(&o, &name, "from below the last MARK");
        n += 1;
    }
    assert_eq!(n, 7);
    // one such file among valid dumps refuses the import, naming it
    let tmp = tempfile::tempdir().expect("temp dir");
    let fixtures = root().join("tests/data/flight-recorder/fixtures/pickle");
    std::fs::copy(
        fixtures.join("crash_py_trace_0"),
        tmp.path().join("trace_0"),
    )
    .unwrap();
    std::fs::copy(dir.join("tuple2-then-list_4"), tmp.path().join("trace_1")).unwrap();
    let o = ringside(&["import".as_ref(), tmp.path().as_os_str()]);
    refused(&o, "trace_1", "malformed pickle: pickle byte 7");
}

#[test]
fn a_file_name_does_not_size_the_world_beyond_the_evidence() {
    for (case, file, want) in [
        (
            "beyond-the-largest-world",
            "trace_rank_99999999",
            "gives rank 99999999, beyond the largest world read (1000000 ranks)",
        ),
        (
            "a-million",
            "trace_rank_1000000",
            "gives rank 1000000, beyond the largest world read",
        ),
        (
            "outside-its-pg-config",
            "trace_rank_1000",
            "the pg_config of this dump lists the default group (the world) as ranks 0-1",
        ),
        (
            "outside-another-dump",
            "trace_rank_5.json",
            "trace_rank_0 lists the default group (the world) as ranks 0-1",
        ),
    ] {
        let dir = dumps("name-sizes-the-world").join(case);
        let o = ringside(&["import".as_ref(), dir.as_os_str(), "--json".as_ref()]);
        refused(&o, file, want);
    }
}

/// Two valid dumps whose tables (gloo's) list a group of 4 ranks, named ranks 0 and 999999: a
/// name is believed up to twice the world the dumps show, so rank 999999 is refused, naming the
/// evidence and `--world-size`. Stated with `--world-size`, the world is a million ranks, and its
/// 999998 ranks without a dump are one cause written as a range, in the report's first line and
/// in `--json`, never a million causes.
#[test]
fn a_world_far_larger_than_the_dumps_is_stated_and_summarised() {
    let dir = dumps("far-beyond-the-dumps");
    let o = ringside_or_kill(&["import".as_ref(), dir.as_os_str()]);
    refused(
        &o,
        "rank_999999",
        "gives rank 999999, but the dumps show a world of 4 ranks at most (2 dumps; the largest \
         pg_config group, in",
    );
    assert!(text(&o).contains("give --world-size if the job had 1000000 ranks or more"));
    let stated = [
        "import".as_ref(),
        dir.as_os_str(),
        "--world-size".as_ref(),
        "1000000".as_ref(),
    ];
    let o = ringside_or_kill(&stated);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("STALLED: missing:1-999998 — "), "{out}");
    assert!(out.lines().count() < 20, "{out}");
    let o = ringside_or_kill(&[&stated[..], &["--json".as_ref()]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["root_causes"], serde_json::json!(["missing:1-999998"]));
    assert_eq!(v["world_size"], 1_000_000);
    // the full list is in `missing` (rank lists in --json are whole)
    assert_eq!(v["missing"].as_array().map(Vec::len), Some(999_998));
}

/// `--world-size` is checked against the dumps: a file's rank beyond it, or a `pg_config`
/// group larger than it, is refused; a stated world larger than the names is the world.
#[test]
fn a_stated_world_size_is_checked_against_the_dumps() {
    let dir = dumps("far-beyond-the-dumps");
    let o = ringside_or_kill(&[
        "import".as_ref(),
        dir.as_os_str(),
        "--world-size".as_ref(),
        "5".as_ref(),
    ]);
    refused(
        &o,
        "rank_999999",
        "gives rank 999999, but --world-size is 5",
    );
    let tmp = tempfile::tempdir().expect("temp dir");
    std::fs::copy(dir.join("rank_0"), tmp.path().join("rank_0")).unwrap();
    let o = ringside_or_kill(&[
        "import".as_ref(),
        tmp.path().as_os_str(),
        "--world-size".as_ref(),
        "3".as_ref(),
    ]);
    refused(
        &o,
        "rank_0",
        "its pg_config lists a group of 4 ranks, more than --world-size 3",
    );
    let o = ringside_or_kill(&[
        "import".as_ref(),
        tmp.path().as_os_str(),
        "--world-size".as_ref(),
        "16".as_ref(),
        "--json".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["world_size"], 16);
    let missing: Vec<String> = (1..16).map(|r| format!("missing:{r}")).collect();
    assert_eq!(v["root_causes"], serde_json::json!(missing));
    for bad in ["0", "1000001", "x"] {
        let o = ringside_or_kill(&[
            "import".as_ref(),
            tmp.path().as_os_str(),
            "--world-size".as_ref(),
            bad.as_ref(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        assert!(text(&o).contains("--world-size"), "{}", text(&o));
    }
}

/// Runs `ringside ARGS` and kills it if it has not ended within a minute (a blocked read
/// would never end).
fn ringside_or_kill(args: &[&std::ffi::OsStr]) -> Output {
    let child = common::cmd()
        .args(args)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("runs");
    assert!(child.status.code().is_some(), "killed: {}", text(&child));
    child
}

#[test]
fn only_regular_files_are_read() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let fifo = tmp.path().join("rank_5");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.expect("mkfifo").success());
    let zero = tmp.path().join("rank_6");
    std::os::unix::fs::symlink("/dev/zero", &zero).expect("a symlink");
    let o = ringside_or_kill(&["import".as_ref(), fifo.as_os_str()]);
    refused(&o, "rank_5", "a FIFO, not a regular file");
    let o = ringside_or_kill(&["import".as_ref(), zero.as_os_str()]);
    refused(&o, "rank_6", "a character device, not a regular file");
    // in a directory, they are skipped, and said to be
    let fixtures = root().join("tests/data/flight-recorder/fixtures/pickle");
    std::fs::copy(fixtures.join("crash_py_trace_1"), tmp.path().join("rank_1")).unwrap();
    let o = ringside_or_kill(&["import".as_ref(), tmp.path().as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("rank_5: not a regular file") && err.contains("rank_6: not a regular file"),
        "{err}"
    );
    // a scenario and a trace likewise
    let o = ringside_or_kill(&["run".as_ref(), fifo.as_os_str()]);
    refused(&o, "rank_5", "a FIFO, not a regular file");
    let o = ringside_or_kill(&["explain".as_ref(), zero.as_os_str()]);
    refused(&o, "rank_6", "a character device, not a regular file");
}

/// One dump of a 2-rank job whose `pg_config` lists `groups` groups.
fn dump_with_groups(dir: &Path, groups: usize) -> PathBuf {
    let base = std::fs::read_to_string(
        root().join("tests/data/flight-recorder/fixtures/dumps/crash_py/rank_0.json"),
    )
    .expect("a fixture");
    let mut v: serde_json::Value = serde_json::from_str(&base).expect("JSON");
    let pg = v["pg_config"].as_object_mut().expect("pg_config");
    for i in 1..groups {
        pg.insert(
            i.to_string(),
            serde_json::json!({
                "name": i.to_string(),
                "desc": format!("group_{i}"),
                "ranks": if i % 2 == 1 { "[0, 1]" } else { "[0]" },
            }),
        );
    }
    let path = dir.join("rank_0.json");
    std::fs::write(&path, v.to_string()).expect("written");
    path
}

/// A `pg_config` of a hundred thousand groups (6.8 MB) is read in time linear in them: within
/// a CPU-time limit of 10 s that the quadratic inference it replaced (3.3 s for 40,000 groups,
/// about 20 s for 100,000) ran past. `cargo bench --bench fr_import` gives the figures.
#[test]
fn a_hundred_thousand_groups_are_inferred_in_linear_time() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = dump_with_groups(tmp.path(), 100_000);
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -t 10; exec \"$0\" import \"$1\"")
        .arg(common::bin())
        .arg(&path)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("1 dump of a 2-rank job"), "{}", text(&o));
}

/// Whether `s` holds a character a terminal would act on, other than a line break.
fn acts_on_a_terminal(s: &str) -> bool {
    s.chars()
        .any(|c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c))
}

#[test]
fn text_from_dumps_reaches_the_terminal_escaped() {
    let dir = dumps("escapes");
    let o = ringside(&["import".as_ref(), dir.as_os_str()]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(!acts_on_a_terminal(&out), "{out:?}");
    // shown as escapes, and no value forges a line of its own
    assert!(out.contains("\\u{1b}]0;pwned\\u{7}"), "{out}");
    assert!(out.contains("group 9\\nCOMPLETED: nothing to see"), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("COMPLETED")), "{out}");
    // --json keeps the dumps' own text, escaped as JSON escapes it
    let o = ringside(&["import".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    let v = common::json(&o);
    let descs: Vec<&str> = v["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter_map(|g| g["desc"].as_str())
        .collect();
    assert!(
        descs.iter().any(|d| d.starts_with("\u{1b}]0;pwned")),
        "{descs:?}"
    );
    // the scenario it writes keeps them in TOML strings, and its comments on one line
    let tmp = tempfile::tempdir().expect("temp dir");
    let sc = tmp.path().join("job.toml");
    let _ = ringside(&[
        "import".as_ref(),
        dir.as_os_str(),
        "--scenario".as_ref(),
        sc.as_os_str(),
    ]);
    if let Ok(s) = std::fs::read_to_string(&sc) {
        assert!(
            !s.lines().any(|l| l.starts_with("COMPLETED")),
            "a line forged in the scenario:\n{s}"
        );
    }
}

#[test]
fn text_from_scenarios_and_traces_reaches_the_terminal_escaped() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let sc = tmp.path().join("esc.toml");
    let source = std::fs::read_to_string(root().join("scenarios/preempt-mid-allreduce.toml"))
        .expect("a shipped scenario");
    let hostile = source.replacen(
        "name = \"",
        "name = \"\\u001b]0;pwned\\u0007\\u001b[2J\\nerror: forged ",
        1,
    );
    assert_ne!(hostile, source);
    std::fs::write(&sc, hostile).expect("written");
    let trace = tmp.path().join("esc.jsonl");
    for args in [
        vec!["run".as_ref(), sc.as_os_str()],
        vec![
            "run".as_ref(),
            sc.as_os_str(),
            "--trace".as_ref(),
            trace.as_os_str(),
        ],
        vec!["explain".as_ref(), trace.as_os_str()],
        vec!["replay".as_ref(), trace.as_os_str()],
    ] {
        let o = ringside(&args);
        let out = text(&o);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{args:?}: {out}");
        assert!(!acts_on_a_terminal(&out), "{args:?}: {out:?}");
        assert!(
            !out.lines().any(|l| l.starts_with("error: forged")),
            "{args:?}: {out}"
        );
    }
    // an error quoting the scenario's text is one line
    let bad = tmp.path().join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"x\"\n[world]\nsize = \"\"\"3\nerror: forged \u{1b}[2J\"\"\"\n",
    )
    .expect("written");
    let o = ringside(&["run".as_ref(), bad.as_os_str()]);
    refused(&o, "bad.toml", "world.size");
    assert!(!acts_on_a_terminal(&text(&o)), "{:?}", text(&o));
}

/// A group's name from a scenario reaches the terminal escaped from every command that
/// shows it: `sweep`'s table (which printed it raw), `check`'s summary, `explain --dot`.
#[test]
fn a_group_name_reaches_the_terminal_escaped_from_every_command() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let sc = tmp.path().join("esc.toml");
    let name = "tp\\u001b]0;pwned\\u0007\\u001b[2J";
    std::fs::write(
        &sc,
        format!(
            "name = \"esc\"\n[world]\nsize = 4\n[[groups]]\nname = \"{name}\"\nranks = [0, 1]\n\
             [workload]\niterations = 2\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\n\
             group = \"{name}\"\n"
        ),
    )
    .expect("written");
    let trace = tmp.path().join("esc.jsonl");
    let out = tmp.path().join("check");
    let o = ringside(&[
        "run".as_ref(),
        sc.as_os_str(),
        "--trace".as_ref(),
        trace.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for args in [
        vec![
            "sweep".as_ref(),
            sc.as_os_str(),
            "--bytes".as_ref(),
            "1KiB..2KiB".as_ref(),
        ],
        vec![
            "check".as_ref(),
            sc.as_os_str(),
            "--cases".as_ref(),
            "2".as_ref(),
            "--quiet".as_ref(),
            "--out".as_ref(),
            out.as_os_str(),
        ],
        vec!["explain".as_ref(), trace.as_os_str(), "--dot".as_ref()],
    ] {
        let o = ringside(&args);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {out}");
        assert!(!acts_on_a_terminal(&out), "{args:?}: {out:?}");
    }
    let o = ringside(&[
        "sweep".as_ref(),
        sc.as_os_str(),
        "--bytes".as_ref(),
        "1KiB..1KiB".as_ref(),
    ]);
    assert!(
        text(&o).contains("`tp\\u{1b}]0;pwned\\u{7}\\u{1b}[2J`"),
        "{}",
        text(&o)
    );
}
