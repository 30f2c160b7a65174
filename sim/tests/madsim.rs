//! Cross-check of the madsim driver against the engine (issue 8, item 3): for every shipped
//! scenario, the same protocol code run as madsim nodes reaches the same outcome, generations
//! and collective results as the engine. Times differ; results must not.
//!
//! Built only with `RUSTFLAGS="--cfg madsim"` (see README.md, "madsim driver").
#![cfg(madsim)]

use ringside_sim::driver::madsim::{run_scenario, MadsimOutcome};
use ringside_sim::report::OpReport;
use ringside_sim::run::{run, RunOptions, RunOutput};
use ringside_sim::scenario::{load, Scenario};
use std::path::PathBuf;

fn shipped() -> Vec<(String, Scenario)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenarios/ exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let s = load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (name, s)
        })
        .collect()
}

/// What must agree between the engine and madsim: outcome, generations (number and members)
/// and, per collective slot (group, generation, seq): the distinct calls made in it, how many
/// ranks called and completed it, whether every result was correct (validity and agreement),
/// and the distinct result bits.
#[derive(Debug, PartialEq)]
struct Verdict {
    outcome: String,
    generations: Vec<(u32, Vec<u32>)>,
    ops: Vec<OpVerdict>,
}

#[derive(Debug, PartialEq)]
struct OpVerdict {
    slot: (u32, u32, u64),
    /// (iteration, index, op, bytes) of each distinct call, sorted.
    calls: Vec<(u32, u32, String, u64)>,
    called: u32,
    completed: u32,
    correct: bool,
    results: Vec<String>,
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

fn from_engine(out: &RunOutput) -> Verdict {
    Verdict {
        outcome: out.report.outcome.name().into(),
        generations: out
            .report
            .generations
            .iter()
            .filter(|g| g.generation > 0)
            .map(|g| (g.generation, g.members.clone()))
            .collect(),
        ops: out
            .fold
            .ops
            .values()
            .map(|o| OpVerdict {
                slot: (o.group.0, o.generation.0, o.seq.0),
                calls: sorted(
                    o.variants
                        .iter()
                        .map(|v| (v.sig.iteration, v.sig.index, v.sig.op.name().into(), v.sig.bytes))
                        .collect(),
                ),
                called: o.ranks_called,
                completed: o.ranks_completed,
                correct: OpReport::from_view(o).correct,
                results: sorted(o.results.clone()),
            })
            .collect(),
    }
}

fn from_madsim(m: &MadsimOutcome) -> Verdict {
    Verdict {
        outcome: m.outcome.name().into(),
        generations: m
            .generations
            .iter()
            .filter(|g| g.generation > 0)
            .map(|g| (g.generation, g.members.clone()))
            .collect(),
        ops: m
            .ops
            .iter()
            .map(|o| OpVerdict {
                slot: (o.group, o.generation, o.seq),
                calls: sorted(
                    o.calls
                        .iter()
                        .map(|c| (c.iteration, c.index, c.fp.op.name().into(), c.fp.bytes))
                        .collect(),
                ),
                called: o.ranks_called,
                completed: o.ranks_completed,
                correct: o.correct,
                results: sorted(o.results.clone()),
            })
            .collect(),
    }
}

#[test]
fn madsim_agrees_with_the_engine_on_every_shipped_scenario() {
    let mut failures = Vec::new();
    for (name, s) in shipped() {
        let engine = run(&s, &RunOptions::default()).expect("engine run");
        let m = run_scenario(&s, None);
        let (e, v) = (from_engine(&engine), from_madsim(&m));
        eprintln!(
            "{name}: engine {} ({} ops, {} generations) at {}ns; madsim {} at {}ns ({:?})",
            e.outcome,
            e.ops.len(),
            e.generations.len(),
            engine.report.virtual_time_ns,
            v.outcome,
            m.end_ns,
            m.stop
        );
        if e != v {
            failures.push(format!("{name}:\n  engine {e:?}\n  madsim {v:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
