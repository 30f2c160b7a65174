//! A scenario that reproduces an imported job in the simulator (`import --scenario`).
//!
//! The job is first described as a [`Replay`]: the world, the program every rank runs (one
//! iteration's calls, found as the shortest period of the calls the agreeing ranks recorded,
//! with modeled bytes from sizes times dtype and the compute between iterations from the
//! wall-clock gaps), and the faults the diagnosis found: a rank without a dump is preempted
//! after its last call, a stopped rank hangs, a rank that called with other parameters or
//! skipped a call gets a `mismatch` or `skip` fault. What the scenario language cannot say
//! yet — groups other than the world, point-to-point calls and all_to_all, a rank's own extra
//! calls (per-rank programs) — is collected in [`Replay::needs`], and the scenario is written
//! only when nothing is needed. `[expect]` states the import's verdict, so `ringside run` on
//! the file checks the replay itself.

use super::analyze::lanes::{self, Call};
use super::analyze::{Analysis, DivergenceKind};
use super::model::{Dump, OpKind as FrOp};
use super::report::call_bytes;
use crate::scenario::{
    Dtype, Expect, Fault, GroupConfig, OpKind, OpSpec, Outcome, RootCause, Scenario, Workload,
    World,
};
use crate::trace::{Event, VecRecorder};
use crate::units::{Duration, Size};

/// A job as the simulator would run it, and what it needs that the scenario language lacks.
#[derive(Clone, Debug)]
pub struct Replay {
    pub scenario: Scenario,
    /// The first seq of the world group the program starts at (earlier calls were overwritten).
    pub first_seq: u64,
    /// Ops per iteration.
    pub period: usize,
    /// Constructs the job needs that the scenario language does not have, one sentence each.
    pub needs: Vec<String>,
}

/// The ringside op of a Flight Recorder op, when there is one.
pub fn op_kind(k: FrOp) -> Option<OpKind> {
    Some(match k {
        FrOp::AllReduce => OpKind::Allreduce,
        FrOp::Broadcast => OpKind::Broadcast,
        FrOp::Reduce => OpKind::Reduce,
        FrOp::AllGather => OpKind::Allgather,
        FrOp::ReduceScatter => OpKind::ReduceScatter,
        FrOp::Barrier => OpKind::Barrier,
        _ => return None,
    })
}

/// The ringside dtype of a torch dtype name (the real buffers only; bytes carry the size).
pub fn dtype(name: &str) -> Dtype {
    match name.split(',').next().unwrap_or("") {
        "Double" | "float64" => Dtype::F64,
        "Long" | "int64" => Dtype::I64,
        _ => Dtype::F32,
    }
}

/// One call as an op of the scenario.
fn op_spec(dumps: &[Dump], c: &Call) -> Option<OpSpec> {
    let r = lanes::head(dumps, c);
    let op = op_kind(r.kind)?;
    let bytes = if op == OpKind::Barrier {
        0
    } else {
        call_bytes(dumps, c).max(1)
    };
    Some(OpSpec {
        op,
        bytes: Size(bytes),
        reduce: Default::default(),
        algorithm: None,
        root: None,
        group: None,
        peer: None,
        rendezvous: false,
        compute: None,
    })
}

/// Two significant digits, so that compute reads as a round number.
fn round2(ns: u64) -> u64 {
    let mut scale = 1u64;
    while ns / scale >= 100 {
        scale *= 10;
    }
    (ns + scale / 2) / scale * scale
}

/// The smallest period of `ops` (at most 64 ops per iteration).
fn period(ops: &[OpSpec]) -> usize {
    (1..=ops.len().clamp(1, 64))
        .find(|&p| (p..ops.len()).all(|i| ops[i] == ops[i % p]))
        .unwrap_or(ops.len().max(1))
}

/// Plans the replay of the job.
pub fn plan(name: &str, dumps: &[Dump], a: &Analysis) -> Replay {
    let mut needs: Vec<String> = Vec::new();
    let world = a.groups.world_size;
    let wg = a
        .groups
        .list
        .iter()
        .find(|g| g.members.len() as u32 == world && g.members.first() == Some(&0));
    for g in &a.groups.list {
        if Some(g.id) != wg.map(|w| w.id) {
            needs.push(format!(
                "{} (ranks {}): the scenario language has the world and mesh slices, not named \
                 groups yet",
                g.label(),
                crate::diagnose::fmt_ranks(&g.members)
            ));
        }
    }
    for d in dumps {
        if let Some(r) = d.records.iter().find(|r| r.kind.is_p2p() || r.is_p2p) {
            needs.push(format!(
                "point-to-point calls ({} on rank {}): not in the scenario language yet",
                d.profiling_name(r),
                d.rank
            ));
            break;
        }
    }
    let mut ops: Vec<OpSpec> = Vec::new();
    let mut starts: Vec<u64> = Vec::new();
    let mut first_seq = 0;
    let mut timeout = None;
    let mut dtypes: Vec<Dtype> = Vec::new();
    if let Some(wg) = wg {
        let div = a.scans[wg.id as usize].divergence.as_ref();
        let culprits: Vec<u32> = div.map(|d| d.culprits.clone()).unwrap_or_default();
        // the program: the calls of the agreeing rank with the most of them
        let reference = wg
            .members
            .iter()
            .copied()
            .filter(|m| !culprits.contains(m))
            .filter_map(|m| a.lane(m, wg.id).map(|l| (m, l)))
            .max_by_key(|(m, l)| (l.calls.len(), std::cmp::Reverse(*m)));
        // the window every dumped member has
        first_seq = wg
            .members
            .iter()
            .filter_map(|&m| {
                a.lane(m, wg.id)
                    .and_then(|l| l.calls.first())
                    .map(|c| c.seq)
            })
            .max()
            .unwrap_or(1);
        if let Some((_, lane)) = reference {
            for c in lane.calls.iter().filter(|c| c.seq >= first_seq) {
                let r = lanes::head(dumps, c);
                match op_spec(dumps, c) {
                    Some(o) => ops.push(o),
                    None => {
                        needs.push(format!(
                            "{} (#{} of {}): not in the scenario language yet",
                            dumps[c.dump as usize].profiling_name(r),
                            c.seq,
                            wg.label()
                        ));
                        break;
                    }
                }
                starts.push(c.time_ns);
                timeout = timeout.or(r.timeout_ms);
                dtypes.push(dtype(dumps[c.dump as usize].str(r.in_dtypes)));
            }
        }
    }
    let p = period(&ops);
    let iterations = ops.len().div_ceil(p).max(1) as u32;
    let body: Vec<OpSpec> = ops.iter().take(p).cloned().collect();
    // compute: the typical gap between the starts of two iterations, less nothing (the calls
    // themselves are short next to it on a CPU job; the simulator adds their modeled time)
    let mut gaps: Vec<u64> = starts
        .chunks(p)
        .map(|c| c[0])
        .collect::<Vec<_>>()
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect();
    gaps.sort_unstable();
    let compute = round2(gaps.get(gaps.len() / 2).copied().unwrap_or(0));
    let mut dt = dtypes.clone();
    dt.sort_by_key(|d| d.name());
    let wdtype = dt.get(dt.len() / 2).copied().unwrap_or(Dtype::F32);
    let mut scenario = Scenario {
        name: name.to_string(),
        description: None,
        seed: 0,
        time_limit: None,
        world: World {
            size: world.max(1),
            ranks_per_host: 1,
        },
        network: Default::default(),
        engine: Default::default(),
        group: GroupConfig {
            timeout: Duration(timeout.map_or(30_000_000_000, |t| t.saturating_mul(1_000_000))),
            ..GroupConfig::default()
        },
        workload: Workload {
            iterations,
            compute: Duration(compute),
            dtype: wdtype,
            elements: 16,
            ops: body,
            programs: Vec::new(),
            pipeline: None,
            registry: Vec::new(),
        },
        groups: Vec::new(),
        faults: Vec::new(),
        expect: None,
    };
    // the faults
    let site = |seq: u64| {
        let i = seq.saturating_sub(first_seq) as usize;
        (i / p, i % p)
    };
    let mut preempts: Vec<(u32, usize)> = Vec::new();
    let mut causes: Vec<RootCause> = Vec::new();
    for c in &a.diagnosis.causes {
        let cause = c.cause.clone();
        let div = a
            .divergences
            .iter()
            .find(|d| d.causes.contains(&cause) && Some(d.group) == wg.map(|g| g.id));
        match (&cause, div) {
            (RootCause::Missing(m), Some(d)) => {
                let (it, ix) = site(d.seq);
                if ix != 0 {
                    needs.push(format!(
                        "rank {} left no dump and stopped inside an iteration (before op {ix}): a \
                         preemption between two calls of one iteration has no time to land in",
                        m.0
                    ));
                }
                preempts.push((m.0, it));
                causes.push(RootCause::Preempted(*m));
            }
            (RootCause::Hung(m), Some(d)) => {
                let (it, ix) = site(d.seq);
                if ix != 0 {
                    needs.push(format!(
                        "rank {} stopped inside an iteration (before op {ix}): `hang` stops a rank \
                         at the start of an iteration",
                        m.0
                    ));
                }
                scenario.faults.push(Fault::Hang {
                    rank: m.0,
                    iteration: it as u32,
                });
                causes.push(cause.clone());
            }
            (RootCause::Mismatch(m), Some(d)) if d.kind == DivergenceKind::Parameters => {
                let (it, ix) = site(d.seq);
                let theirs = a
                    .lane(m.0, d.group)
                    .and_then(|l| l.calls.iter().find(|x| x.seq == d.seq).copied());
                match theirs.and_then(|x| op_spec(dumps, &x).map(|o| (x, o))) {
                    Some((x, o)) => {
                        let mine = &scenario.workload.ops[ix];
                        let dt =
                            dtype(dumps[x.dump as usize].str(lanes::head(dumps, &x).in_dtypes));
                        scenario.faults.push(Fault::Mismatch {
                            rank: m.0,
                            iteration: it as u32,
                            op_index: Some(ix as u32),
                            op: (o.op != mine.op).then_some(o.op),
                            bytes: (o.bytes != mine.bytes).then_some(o.bytes),
                            root: None,
                            dtype: (dt != scenario.workload.dtype).then_some(dt),
                        });
                    }
                    None => needs.push(format!(
                        "rank {}'s call #{} is not in the scenario language",
                        m.0, d.seq
                    )),
                }
                causes.push(cause.clone());
            }
            (RootCause::Skipped(m), Some(d)) if d.kind == DivergenceKind::SkippedCall => {
                let (it, ix) = site(d.seq);
                scenario.faults.push(Fault::Skip {
                    rank: m.0,
                    iteration: it as u32,
                    op_index: Some(ix as u32),
                });
                causes.push(cause.clone());
            }
            (RootCause::Mismatch(m), Some(d)) if d.kind == DivergenceKind::ExtraCall => {
                needs.push(format!(
                    "rank {} issued an extra call (#{} of group {}): a rank's own calls need \
                     per-rank programs",
                    m.0, d.seq, d.group
                ));
            }
            (RootCause::Undecided, _) => needs.push(
                "the dumps do not decide who is wrong (undecided): a scenario needs a fault".into(),
            ),
            (RootCause::Deadlock(_), _) => needs.push(
                "a deadlock across groups or peers needs named groups or per-rank programs".into(),
            ),
            _ => needs.push(format!(
                "the root cause {} has no fault to replay it",
                c.cause
            )),
        }
    }
    // a rank without a dump that a divergence explains died too (gloo aborts the receiver of a
    // mismatched message); the replay keeps it alive: its blocked set may include it
    let victims: Vec<u32> = a
        .divergences
        .iter()
        .flat_map(|d| d.victims.clone())
        .collect();
    if !preempts.is_empty() && scenario.workload.compute.0 == 0 {
        scenario.workload.compute = Duration(100_000);
    }
    if !preempts.is_empty() && needs.is_empty() {
        // when each rank computes, in the run without the preemptions
        let mut rec = VecRecorder::default();
        let _ = crate::run::run_events(&scenario, &crate::run::RunOptions::default(), &mut rec);
        for (m, it) in preempts {
            let t = rec.events.iter().find_map(|(t, e)| match e {
                Event::Compute {
                    rank, iteration, ..
                } if *rank == m && *iteration as usize == it => Some(*t),
                _ => None,
            });
            match t {
                Some(t) => scenario.faults.push(Fault::Preempt {
                    rank: m,
                    // mid-compute, on a whole microsecond
                    at: Duration((t + scenario.workload.compute.0 / 2) / 1000 * 1000),
                    restart_after: None,
                }),
                None => needs.push(format!(
                    "rank {m} left no dump, and its last iteration cannot be placed in time"
                )),
            }
        }
    }
    causes.sort();
    causes.dedup();
    let mut blocked: Vec<u32> = a.diagnosis.blocked.iter().map(|b| b.rank).collect();
    blocked.sort_unstable();
    scenario.expect = Some(Expect {
        outcome: Some(if a.outcome == Outcome::Completed {
            Outcome::Completed
        } else {
            Outcome::Stalled
        }),
        blocked: victims.is_empty().then_some(blocked),
        root_causes: Some(causes),
        correct: None,
        generations: None,
    });
    let causes_text = crate::cause::listed(&a.root_causes());
    scenario.description = Some(format!(
        "Imported from {} Flight Recorder dumps ({} call{} per iteration from #{first_seq} of the \
         world group){}{}",
        dumps.len(),
        p,
        if p == 1 { "" } else { "s" },
        if causes_text.is_empty() {
            String::new()
        } else {
            format!("; the import's root causes: {causes_text}")
        },
        if victims.is_empty() {
            String::new()
        } else {
            format!(
                "; {} left no dump as a victim and stays alive here",
                crate::diagnose::ranks_phrase(&victims)
            )
        }
    ));
    Replay {
        scenario,
        first_seq,
        period: p,
        needs,
    }
}

/// The scenario as TOML, or why the job cannot be written as one yet.
pub fn write(name: &str, dumps: &[Dump], a: &Analysis) -> Result<String, String> {
    let r = plan(name, dumps, a);
    if !r.needs.is_empty() {
        return Err(format!(
            "this job needs what the scenario language does not have yet: {}",
            r.needs.join("; ")
        ));
    }
    let text = toml::to_string(&r.scenario).map_err(|e| e.to_string())?;
    // the file must read back as written
    crate::scenario::parse(&text, "the written scenario")
        .map_err(|e| format!("the scenario written does not validate: {e}"))?;
    Ok(format!(
        "# Written by `ringside import` from Flight Recorder dumps. `ringside run` on it checks\n\
         # [expect]: the import's blocked ranks and root causes (a rank without a dump is\n\
         # replayed as a preemption, so `missing:R` reads `preempted:R`).\n{text}"
    ))
}
