//! `ringside sweep`: every applicable algorithm of a scenario's ops over a range of sizes, as
//! nccl-tests reports them: simulated time, algorithm bandwidth and bus bandwidth.
//!
//! Each (op, algorithm, size) runs alone in a copy of the scenario with no faults, no jitter, no
//! compute and one iteration, so its time is the engine's end time: every rank calls at 0.
//! Bandwidths follow nccl-tests, as [`cost`](crate::cost) states them: algbw = n / t, and
//! busbw = algbw times [`bus_factor`], where p is the size of the group the op runs on; a
//! barrier has a time only.

use crate::budget::Limits;
use crate::cost::bus_factor;
use crate::engine::{Engine, RunResult, StopReason};
use crate::proto::collective::supported;
use crate::proto::mesh::MeshLayout;
use crate::proto::mutation::Mutations;
use crate::scenario::{Algorithm, OpKind, OpSpec, Outcome, Scenario};
use crate::trace::NullRecorder;
use crate::units::{fmt_time, Duration, Nanos, Size};
use serde::Serialize;

/// The sizes to sweep: `min`, 2 `min`, 4 `min`, ... up to `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    pub min: u64,
    pub max: u64,
}

impl Default for Sizes {
    /// 1KiB..64MiB.
    fn default() -> Self {
        Sizes {
            min: 1 << 10,
            max: 64 << 20,
        }
    }
}

/// Why a sweep cannot run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SweepError {
    #[error("`{0}` is not a size range: write A..B, e.g. 1KiB..1GiB")]
    Range(String),
    #[error("{0}")]
    Size(String),
    #[error("the range {0} is empty: its start must be at least 1B and at most its end")]
    Empty(String),
    #[error("the scenario has no ops to sweep")]
    NoOps,
    #[error("{op} with {algorithm} on {bytes} bytes did not complete ({outcome}): {why}")]
    Incomplete {
        op: OpKind,
        algorithm: Algorithm,
        bytes: u64,
        outcome: Outcome,
        /// What ended the run, e.g. the watchdog firing before the collective could finish.
        why: String,
    },
}

impl Sizes {
    /// Parses `A..B`, e.g. `1KiB..1GiB`.
    pub fn parse(s: &str) -> Result<Sizes, SweepError> {
        let (a, b) = s
            .split_once("..")
            .ok_or_else(|| SweepError::Range(s.into()))?;
        let size = |x: &str| Size::parse(x).map_err(|e| SweepError::Size(e.0));
        let (min, max) = (size(a)?.0, size(b)?.0);
        if min == 0 || min > max {
            return Err(SweepError::Empty(s.into()));
        }
        Ok(Sizes { min, max })
    }

    /// Every size of the sweep, in increasing order.
    pub fn each(&self) -> Vec<u64> {
        let mut v = Vec::new();
        let mut n = self.min;
        while n <= self.max {
            v.push(n);
            match n.checked_mul(2) {
                Some(m) => n = m,
                None => break,
            }
        }
        v
    }
}

/// One line of the sweep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepRow {
    /// Index of the op in the scenario's `[[workload.ops]]`.
    pub index: u32,
    pub op: OpKind,
    /// The mesh dimension the op runs along (none: the world).
    pub group: Option<String>,
    /// Ranks in the group the op runs on.
    pub ranks: u32,
    pub algorithm: Algorithm,
    /// Modeled size n (0 for a barrier).
    pub bytes: u64,
    pub time_ns: Nanos,
    /// n / t in GB/s (none for a barrier).
    pub algbw_gbps: Option<f64>,
    /// algbw times the op's bus factor, in GB/s (none for a barrier).
    pub busbw_gbps: Option<f64>,
    /// The fastest algorithm for this op and size (ties: all of them).
    pub fastest: bool,
}

/// The algorithms of `op` that apply to `scenario`: those the library implements, and
/// `hierarchical` only on a two-level topology.
pub fn applicable(op: OpKind, scenario: &Scenario) -> Vec<Algorithm> {
    op.algorithms()
        .iter()
        .copied()
        .filter(|&a| supported(op, a))
        .filter(|&a| a != Algorithm::Hierarchical || scenario.world.ranks_per_host > 1)
        .collect()
}

/// The size of the group `spec` runs on.
fn group_size(scenario: &Scenario, spec: &OpSpec) -> u32 {
    let world = scenario.world.size;
    let layout = scenario
        .group
        .mesh
        .as_ref()
        .and_then(|m| MeshLayout::new(m, world).map(|l| (m, l)));
    match (&spec.group, layout) {
        (Some(dim), Some((mesh, layout))) => layout.dim(dim).map_or(world, |d| mesh.shape[d]),
        _ => world,
    }
}

/// `scenario` reduced to one call of `spec` with `algorithm` on `bytes`, undisturbed.
/// What ended a sweep's run before its one collective completed.
fn why_incomplete(s: &Scenario, r: &RunResult) -> String {
    match &r.stop {
        StopReason::Watchdog { rank } => format!(
            "the watchdog fired on rank {rank} at {}: at this size the collective takes longer \
             than group.timeout ({}); raise it in the scenario",
            fmt_time(r.end_ns),
            s.group.timeout
        ),
        StopReason::OutOfBudget(b) => format!("{} at {}", b.describe(), fmt_time(r.end_ns)),
        other => format!("the run stopped at {} ({other:?})", fmt_time(r.end_ns)),
    }
}

fn alone(scenario: &Scenario, spec: &OpSpec, algorithm: Algorithm, bytes: u64) -> Scenario {
    let mut s = scenario.clone();
    s.faults.clear();
    s.expect = None;
    s.time_limit = None;
    s.network.jitter = Duration::ZERO;
    s.group.elastic = None;
    s.workload.iterations = 1;
    s.workload.compute = Duration::ZERO;
    s.workload.registry.clear();
    s.workload.ops = vec![OpSpec {
        algorithm: Some(algorithm),
        bytes: Size(bytes),
        ..spec.clone()
    }];
    s
}

/// What a sweep measured.
#[derive(Debug)]
pub struct Swept {
    /// One row per run that completed, in the order they ran.
    pub rows: Vec<SweepRow>,
    /// The run that did not complete ([`SweepError::Incomplete`]), where the sweep stopped.
    /// The rows of its size are kept, none of them marked fastest.
    pub incomplete: Option<SweepError>,
}

/// Runs the sweep: for each op of the scenario, each applicable algorithm and each size, each
/// run within `limits`. An op that differs from an earlier one only in its algorithm, size or
/// reduction is not repeated. `progress` is told the runs done and the runs in all, after each
/// run. A scenario with nothing to sweep is an error; a run that does not complete stops the
/// sweep, keeping the rows before it.
pub fn sweep(
    scenario: &Scenario,
    sizes: Sizes,
    limits: &Limits,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Swept, SweepError> {
    let ops = &scenario.workload.ops;
    if ops.is_empty() {
        return Err(SweepError::NoOps);
    }
    let same = |a: &OpSpec, b: &OpSpec| (a.op, &a.group, a.root) == (b.op, &b.group, b.root);
    // (op index, bytes, the algorithms to run at that size)
    let mut plan = Vec::new();
    for (index, spec) in ops.iter().enumerate() {
        if ops[..index].iter().any(|o| same(o, spec)) {
            continue;
        }
        let each = if spec.op == OpKind::Barrier {
            vec![0]
        } else {
            sizes.each()
        };
        for bytes in each {
            plan.push((index, bytes, applicable(spec.op, scenario)));
        }
    }
    let runs = plan.iter().map(|(_, _, a)| a.len()).sum();
    let mut rows = Vec::new();
    for (index, bytes, algorithms) in plan {
        let spec = &ops[index];
        let op = spec.op;
        let ranks = group_size(scenario, spec);
        let first = rows.len();
        for algorithm in algorithms {
            let s = alone(scenario, spec, algorithm, bytes);
            let mut rec = NullRecorder;
            let r = Engine::new(&s, s.seed, Mutations::NONE, &mut rec).run_within(limits, None);
            if r.outcome != Outcome::Completed {
                let incomplete = SweepError::Incomplete {
                    op,
                    algorithm,
                    bytes,
                    outcome: r.outcome,
                    why: why_incomplete(&s, &r),
                };
                return Ok(Swept {
                    rows,
                    incomplete: Some(incomplete),
                });
            }
            let t = r.end_ns;
            // bytes per ns is GB/s
            let algbw = (op != OpKind::Barrier && t > 0).then(|| bytes as f64 / t as f64);
            rows.push(SweepRow {
                index: index as u32,
                op,
                group: spec.group.clone(),
                ranks,
                algorithm,
                bytes,
                time_ns: t,
                algbw_gbps: algbw,
                busbw_gbps: algbw.zip(bus_factor(op, ranks)).map(|(a, f)| a * f),
                fastest: false,
            });
            progress(rows.len(), runs);
        }
        let best = rows[first..].iter().map(|r| r.time_ns).min();
        for r in &mut rows[first..] {
            r.fastest = Some(r.time_ns) == best;
        }
    }
    Ok(Swept {
        rows,
        incomplete: None,
    })
}

/// The rows as a table, one block per op, sizes in order, `*` on the fastest.
pub fn table(rows: &[SweepRow]) -> String {
    let mut s = String::new();
    let mut last: Option<(u32, u64)> = None;
    for r in rows {
        if last.map(|(i, _)| i) != Some(r.index) {
            if last.is_some() {
                s.push('\n');
            }
            let on = match &r.group {
                Some(g) => format!("each `{g}` sub-group of {} ranks", r.ranks),
                None => format!("{} ranks", r.ranks),
            };
            s.push_str(&format!(
                "op {}: {} on {on} (time; algbw and busbw in GB/s; * fastest)\n",
                r.index, r.op
            ));
            s.push_str(&format!(
                "{:>10}  {:<20} {:>14} {:>10} {:>10}\n",
                "bytes", "algorithm", "time", "algbw", "busbw"
            ));
        }
        let size = if last == Some((r.index, r.bytes)) {
            String::new()
        } else if r.op == OpKind::Barrier {
            "-".into()
        } else {
            Size(r.bytes).to_string()
        };
        let bw = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.3}"));
        s.push_str(&format!(
            "{:>10}  {:<20} {:>14} {:>10} {:>10}{}\n",
            size,
            r.algorithm.name(),
            crate::units::fmt_time(r.time_ns),
            bw(r.algbw_gbps),
            bw(r.busbw_gbps),
            if r.fastest { " *" } else { "" }
        ));
        last = Some((r.index, r.bytes));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse;

    fn scenario(extra_world: &str, ops: &str) -> Scenario {
        parse(
            &format!(
                "name = \"sweep\"\n[world]\nsize = 8\n{extra_world}[workload]\niterations = 3\n\
                 compute = \"1ms\"\n{ops}"
            ),
            "sweep.toml",
        )
        .expect("valid")
    }

    #[test]
    fn sizes_double_from_start_to_end() {
        let s = Sizes::parse("1KiB..8KiB").unwrap();
        assert_eq!(s.each(), [1024, 2048, 4096, 8192]);
        assert_eq!(Sizes::default().each().len(), 17);
        assert_eq!(Sizes::parse("3B..20B").unwrap().each(), [3, 6, 12]);
        assert!(matches!(Sizes::parse("1KiB"), Err(SweepError::Range(_))));
        assert!(matches!(Sizes::parse("1KiB..x"), Err(SweepError::Size(_))));
        assert!(matches!(
            Sizes::parse("2KiB..1KiB"),
            Err(SweepError::Empty(_))
        ));
        assert!(matches!(
            Sizes::parse("0B..1KiB"),
            Err(SweepError::Empty(_))
        ));
    }

    #[test]
    fn hierarchical_only_on_two_levels() {
        let flat = scenario(
            "",
            "[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n",
        );
        assert!(!applicable(OpKind::Allreduce, &flat).contains(&Algorithm::Hierarchical));
        let two = scenario(
            "ranks_per_host = 4\n",
            "[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n",
        );
        assert!(applicable(OpKind::Allreduce, &two).contains(&Algorithm::Hierarchical));
        assert_eq!(applicable(OpKind::Barrier, &two).len(), 2);
    }

    #[test]
    fn rows_cover_every_algorithm_and_size_and_mark_the_fastest() {
        let s = scenario(
            "",
            "[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n\
             [[workload.ops]]\nop = \"barrier\"\n\
             [[workload.ops]]\nop = \"allreduce\"\nbytes = \"2MiB\"\nalgorithm = \"tree\"\n",
        );
        let rows = sweep(
            &s,
            Sizes::parse("1KiB..4KiB").unwrap(),
            &Limits::default(),
            &mut |_, _| {},
        )
        .unwrap()
        .rows;
        // allreduce: 5 algorithms x 3 sizes; barrier: 2 algorithms, once
        assert_eq!(rows.len(), 5 * 3 + 2);
        for size in [1024, 2048, 4096] {
            let at: Vec<&SweepRow> = rows.iter().filter(|r| r.bytes == size).collect();
            assert_eq!(at.len(), 5);
            assert!(at.iter().any(|r| r.fastest));
            let best = at.iter().map(|r| r.time_ns).min().unwrap();
            assert!(at.iter().all(|r| r.fastest == (r.time_ns == best)));
        }
        // ring: 2(p-1) (a + n/p b) at 5us and 25GB/s; 128-byte chunks take 5.12 ns, rounded up
        let ring = &rows[0];
        assert_eq!((ring.algorithm, ring.bytes), (Algorithm::Ring, 1024));
        assert_eq!(ring.time_ns, 14 * (5_000 + 6));
        let algbw = 1024.0 / ring.time_ns as f64;
        assert_eq!(ring.algbw_gbps, Some(algbw));
        assert_eq!(ring.busbw_gbps, Some(algbw * 2.0 * 7.0 / 8.0));
        let barrier = rows.last().unwrap();
        assert_eq!((barrier.op, barrier.bytes), (OpKind::Barrier, 0));
        assert_eq!((barrier.algbw_gbps, barrier.busbw_gbps), (None, None));
        let t = table(&rows);
        assert!(t.contains("op 0: allreduce on 8 ranks"), "{t}");
        assert!(t.contains("op 1: barrier on 8 ranks"), "{t}");
    }

    #[test]
    fn mesh_ops_sweep_their_sub_groups() {
        let s = parse(
            "name = \"m\"\n[world]\nsize = 8\n[group.mesh]\nshape = [2, 4]\n\
             dims = [\"dp\", \"tp\"]\n[workload]\n[[workload.ops]]\nop = \"allgather\"\n\
             bytes = \"1MiB\"\ngroup = \"tp\"\n",
            "m.toml",
        )
        .unwrap();
        let rows = sweep(
            &s,
            Sizes::parse("4KiB..4KiB").unwrap(),
            &Limits::default(),
            &mut |_, _| {},
        )
        .unwrap()
        .rows;
        assert_eq!(rows.len(), 3);
        assert!(rows.iter().all(|r| r.ranks == 4));
        let r = &rows[0];
        assert_eq!(r.busbw_gbps, r.algbw_gbps.map(|a| a * 3.0 / 4.0));
        assert!(table(&rows).contains("each `tp` sub-group of 4 ranks"));
    }
}
