//! Cross-check of the madsim driver against the engine (issue 8, item 3): for every shipped
//! scenario, the same protocol code run as madsim nodes reaches the same outcome, generations
//! and collective results as the engine. Times differ; results must not.
//!
//! Built only with `RUSTFLAGS="--cfg madsim"` (see README.md, "madsim driver").
#![cfg(madsim)]

use ringside_sim::driver::madsim::{run_scenario, run_scenario_seeded, MadsimOutcome};
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
/// and the distinct result bits; and which ranks are blocked at the end.
#[derive(Debug, PartialEq)]
struct Verdict {
    outcome: String,
    generations: Vec<(u32, Vec<u32>)>,
    ops: Vec<OpVerdict>,
    blocked: Vec<u32>,
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
                        .map(|v| {
                            (
                                v.sig.iteration,
                                v.sig.index,
                                v.sig.op.name().into(),
                                v.sig.bytes,
                            )
                        })
                        .collect(),
                ),
                called: o.ranks_called,
                completed: o.ranks_completed,
                correct: OpReport::from_view(o).correct,
                results: sorted(o.results.clone()),
            })
            .collect(),
        blocked: sorted(out.report.blocked.iter().map(|b| b.rank).collect()),
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
        blocked: m.blocked.clone(),
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
            "{name}: engine {} ({} ops, {} generations, blocked {:?}) at {}ns; madsim {} at {}ns ({:?})",
            e.outcome,
            e.ops.len(),
            e.generations.len(),
            e.blocked,
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

/// Madsim's own seed decides its task scheduling: results must not depend on it.
#[test]
fn results_do_not_depend_on_madsim_scheduling() {
    let mut failures = Vec::new();
    for (name, s) in shipped() {
        let engine = from_engine(&run(&s, &RunOptions::default()).expect("engine run"));
        for madsim_seed in [7, 1234] {
            let v = from_madsim(&run_scenario_seeded(&s, s.seed, madsim_seed));
            if engine != v {
                failures.push(format!(
                    "{name} (madsim seed {madsim_seed}):\n  engine {engine:?}\n  madsim {v:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The same seeds give the same run, times included.
#[test]
fn a_madsim_run_is_deterministic() {
    for (name, s) in shipped().into_iter().take(6) {
        assert_eq!(run_scenario(&s, None), run_scenario(&s, None), "{name}");
    }
}

/// The API for users who already test their system under madsim: the group's nodes run
/// beside theirs, on their timeline, and their test injects its own faults.
#[test]
fn a_group_runs_inside_your_own_simulation() {
    use madsim::runtime::{Handle, Runtime};
    use madsim::time::{sleep, Duration};
    use ringside_sim::driver::madsim::{config, spawn_group, GroupOptions};
    use ringside_sim::scenario::{parse, Outcome};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    let scenario = parse(
        r#"
        name = "yours"
        [world]
        size = 3
        [group]
        timeout = "1s"
        [workload]
        iterations = 4
        compute = "50ms"
        [[workload.ops]]
        op = "allreduce"
        bytes = "4MiB"
        "#,
        "yours.toml",
    )
    .expect("valid scenario");
    let rt = Runtime::with_seed_and_config(3, config());
    let ticks = Arc::new(AtomicU32::new(0));
    let seen = ticks.clone();
    let out = rt.block_on(async move {
        let handle = Handle::current();
        // your own node, doing its own work meanwhile
        handle
            .create_node()
            .name("yours")
            .ip("10.0.0.1".parse().unwrap())
            .init(move || {
                let ticks = ticks.clone();
                async move {
                    loop {
                        sleep(Duration::from_millis(10)).await;
                        ticks.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
            .build();
        let group = Arc::new(spawn_group(handle, &scenario, GroupOptions::default()));
        // your test preempts rank 1 during the second iteration's compute
        let g = group.clone();
        madsim::task::spawn(async move {
            sleep(Duration::from_millis(70)).await;
            g.preempt(1, false);
        });
        group.run().await
    });
    assert_eq!(out.outcome, Outcome::Stalled, "{out:?}");
    assert_eq!(out.ops.len(), 2, "{out:?}");
    assert_eq!(out.ops[0].ranks_completed, 3);
    assert!(out.ops.iter().all(|o| o.correct));
    assert_eq!(out.ops[1].ranks_called, 2, "the preempted rank never calls");
    assert!(
        seen.load(Ordering::Relaxed) > 10,
        "your node ran beside the group"
    );
}
