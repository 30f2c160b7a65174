//! `ringside import` against the ground truth of the Flight Recorder corpora: real hung gloo
//! jobs (`tests/data/flight-recorder/real`) and NCCL-style dumps of pipeline and 3-D parallel
//! hangs (`.../nccl`), every form of their dumps (pickle, JSON, dumps taken after the timeout).
//! The rules are those of `score.py` beside the corpora: the root causes are the expected set,
//! every rank surely blocked is reported blocked and no rank the dumps show free is, and the
//! ranks without a dump are `missing`.
//!
//! The forms the importer still gets wrong are listed, each with why: a form that goes wrong
//! fails the test, and so does a listed form that comes out right (take it off the list).

mod common;

use common::{ringside, root};
use serde_json::Value;
use std::collections::BTreeSet;

/// Forms known to come out wrong, and why.
const KNOWN_WRONG: &[(&str, &str, &str)] = &[];

fn canonical(cause: &str) -> String {
    match cause.split_once(':') {
        Some(("deadlock", ranks)) => {
            let mut r: Vec<u32> = ranks.split(',').filter_map(|x| x.parse().ok()).collect();
            r.sort_unstable();
            let r: Vec<String> = r.iter().map(u32::to_string).collect();
            format!("deadlock:{}", r.join(","))
        }
        _ => cause.to_string(),
    }
}

fn ranks(v: &Value) -> BTreeSet<u64> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

/// What is wrong with the import of one form, or None when it is right.
fn judge(dir: &std::path::Path, truth: &Value) -> Option<String> {
    let o = ringside(&["import", "--json", dir.to_str().unwrap()]);
    let Ok(got) = serde_json::from_slice::<Value>(&o.stdout) else {
        return Some(format!(
            "exit {:?}: {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        ));
    };
    let mut want_rc: Vec<String> = truth["root_causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| canonical(c.as_str().unwrap()))
        .collect();
    want_rc.sort();
    let mut got_rc: Vec<String> = got["root_causes"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| canonical(c.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    got_rc.sort();
    let sure = ranks(&truth["blocked"]);
    let maybe: BTreeSet<u64> = sure
        .union(&ranks(&truth["blocked_maybe"]))
        .copied()
        .collect();
    let blocked: BTreeSet<u64> = got["blocked"]
        .as_array()
        .map(|a| a.iter().filter_map(|b| b["rank"].as_u64()).collect())
        .unwrap_or_default();
    let mut wrong = Vec::new();
    if got_rc != want_rc {
        wrong.push(format!("root causes {got_rc:?}, expected {want_rc:?}"));
    }
    if !(sure.is_subset(&blocked) && blocked.is_subset(&maybe)) {
        wrong.push(format!(
            "blocked {blocked:?}, expected {sure:?} (maybe {maybe:?})"
        ));
    }
    if ranks(&got["missing"]) != ranks(&truth["missing"]) {
        wrong.push(format!(
            "missing {}, expected {}",
            got["missing"], truth["missing"]
        ));
    }
    (!wrong.is_empty()).then(|| wrong.join("; "))
}

#[test]
fn every_corpus_case_is_diagnosed_as_its_ground_truth_says() {
    let mut regressions = Vec::new();
    let mut fixed = Vec::new();
    let mut right = 0;
    let mut forms = 0;
    for corpus in ["real", "nccl"] {
        let base = root().join("tests/data/flight-recorder").join(corpus);
        let index: Value =
            serde_json::from_str(&std::fs::read_to_string(base.join("cases.json")).unwrap())
                .unwrap();
        for case in index["cases"].as_array().unwrap() {
            let name = format!("{corpus}/{}", case["case"].as_str().unwrap());
            let dir = base.join(case["case"].as_str().unwrap());
            for (form, truth) in case["forms"].as_object().unwrap() {
                if !dir.join(form).is_dir() {
                    continue;
                }
                forms += 1;
                let known = KNOWN_WRONG.iter().any(|(c, f, _)| *c == name && f == form);
                match (judge(&dir.join(form), truth), known) {
                    (None, false) => right += 1,
                    (None, true) => fixed.push(format!("{name} {form}")),
                    (Some(why), false) => regressions.push(format!("{name} {form}: {why}")),
                    (Some(_), true) => {}
                }
            }
        }
    }
    assert!(forms >= 90, "the corpora hold {forms} forms");
    assert!(
        regressions.is_empty(),
        "{} forms wrong:\n{}",
        regressions.len(),
        regressions.join("\n")
    );
    assert!(
        fixed.is_empty(),
        "right now, take them off KNOWN_WRONG: {fixed:?}"
    );
    assert_eq!(right + KNOWN_WRONG.len(), forms);
}

/// The 3-D parallel cases written at 256 ranks (32 tensor-parallel groups of 8, 64 pipelines of
/// 4 stages, 32 data-parallel groups of 8), where the dumps' host clocks, 800 us apart, are as far apart as two calls: a rank
/// that stopped is not taken for one that went on because its host's clock runs ahead. The
/// order inversion is written twice more, with ring buffers of 30 records: too short for any
/// rank's records to reach back to the iteration before, so the order of the sibling groups
/// (the other data-parallel replicas) names the rank that inverted its calls.
#[test]
fn three_d_cases_at_256_ranks_are_diagnosed_as_their_ground_truth_says() {
    let gen = root().join("tests/data/flight-recorder/nccl/gen.py");
    let out = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    for (case, ranks, entries) in [
        ("3d_hung", 256, 100),
        ("3d_dead", 256, 100),
        ("3d_wrong_stage_recv", 256, 100),
        ("3d_short_bucket", 256, 100),
        ("3d_order_inversion", 256, 100),
        ("3d_timeout_skew", 256, 100),
        ("3d_order_inversion", 256, 30),
        ("3d_order_inversion", 8, 30),
    ] {
        let dest = out.path().join(format!("{ranks}x{entries}"));
        let o = std::process::Command::new("python3")
            .arg(&gen)
            .args([
                "--ranks",
                &ranks.to_string(),
                "--entries",
                &entries.to_string(),
            ])
            .args(["--formats", "pickle", "--case", case, "--out"])
            .arg(&dest)
            .output()
            .expect("python3 runs the corpus generator");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let dir = dest.join(case);
        let truth: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("case.json")).unwrap()).unwrap();
        if let Some(why) = judge(&dir.join("pickle"), &truth["forms"]["pickle"]) {
            wrong.push(format!(
                "{case} ({ranks} ranks, {entries} records each): {why}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
