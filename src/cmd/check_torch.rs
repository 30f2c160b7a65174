//! `ringside check --torch SCENARIO [--cases N] [--seed S] [--out DIR] [--json] -- PROGRAM ARGS...`

use super::check::CheckArgs;
use super::load_scenario;
use crate::progress::Progress;
use crate::Failure;
use ringside_sim::driver::torch::check::{check, replay_command, CheckOptions, CheckReport};
use ringside_sim::engine::describe_fault;

/// Cases when --cases is not given: each is a run of the whole program.
const DEFAULT_CASES: u32 = 16;

pub fn main(a: &CheckArgs) -> Result<(), Failure> {
    if !a.torch {
        return Err(Failure::Input(
            "a program after `--` is checked with --torch: `ringside check --torch SCENARIO -- \
             python train.py`"
                .into(),
        ));
    }
    let [path] = a.scenarios.as_slice() else {
        return Err(Failure::Input(format!(
            "check --torch takes one scenario (the cluster the program runs on), not {}",
            a.scenarios.len()
        )));
    };
    let cases = match a.cases {
        Some(0) => {
            return Err(Failure::Input(
                "--cases 0 checks nothing: give at least 1 case".into(),
            ))
        }
        Some(c) => u32::try_from(c).unwrap_or(u32::MAX),
        None => DEFAULT_CASES,
    };
    let scenario = load_scenario(path)?;
    let opts = CheckOptions {
        cases,
        seed: a.seed,
        out: a.out.clone(),
        ..CheckOptions::default()
    };
    let progress = Progress::new(a.quiet);
    let report = check(&scenario, &a.program, &opts, |done, total| {
        progress.items(u64::from(done), u64::from(total), "cases")
    })
    .map_err(|e| Failure::Input(format!("{}: {e}", path.display())))?;
    progress.finish();
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json(&report, &a.program))
                .map_err(|e| Failure::Input(e.to_string()))?
        );
    } else {
        print!("{}", human(&report, &a.program, path));
    }
    match report.failure {
        None => Ok(()),
        Some(_) => Err(Failure::Check(String::new())),
    }
}

fn human(r: &CheckReport, program: &[String], path: &std::path::Path) -> String {
    let calls: u32 = r.baseline_calls.iter().sum();
    let mut s = format!(
        "fault-free run of `{}` on {}: completed at {} with {calls} calls\n",
        program.join(" "),
        path.display(),
        ringside_sim::units::fmt_time(r.baseline_end),
    );
    let Some(f) = &r.failure else {
        s.push_str(&format!(
            "{} cases: every run ended, and every completed run returned the fault-free \
             results\n",
            r.cases
        ));
        return s;
    };
    s.push_str(&format!(
        "case {} fails {}: {}\n",
        f.case,
        f.broken.name(),
        f.why
    ));
    let list = |faults: &[ringside_sim::scenario::Fault]| {
        faults
            .iter()
            .map(describe_fault)
            .collect::<Vec<_>>()
            .join("; ")
    };
    s.push_str(&format!("  found with: {}\n", list(&f.found)));
    s.push_str(&format!(
        "  shrunk in {} runs to: {}\n",
        f.shrink_runs,
        list(&f.shrunk)
    ));
    match &f.written {
        Ok(p) => {
            s.push_str(&format!("  written to {}\n", p.display()));
            s.push_str(&format!("  replay: {}\n", replay_command(p, program)));
        }
        Err(why) => s.push_str(&format!("  not written: {why}\n")),
    }
    s
}

fn json(r: &CheckReport, program: &[String]) -> serde_json::Value {
    let faults = |f: &[ringside_sim::scenario::Fault]| {
        serde_json::to_value(f).unwrap_or(serde_json::Value::Null)
    };
    let failure = r.failure.as_ref().map(|f| {
        serde_json::json!({
            "case": f.case,
            "property": f.broken.name(),
            "why": f.why,
            "found": faults(&f.found),
            "shrunk": faults(&f.shrunk),
            "shrink_runs": f.shrink_runs,
            "scenario": f.written.as_ref().ok().map(|p| p.display().to_string()),
            "replay": f.written.as_ref().ok().map(|p| replay_command(p, program)),
            "not_written": f.written.as_ref().err(),
        })
    });
    serde_json::json!({
        "program": program,
        "baseline": {"virtual_time_ns": r.baseline_end, "calls": r.baseline_calls},
        "cases": r.cases,
        "ok": r.failure.is_none(),
        "failure": failure,
    })
}
