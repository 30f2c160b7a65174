//! The dumps of a job as a ringside trace (`import --trace`), so that `explain`, `tui` and
//! `export --perfetto` show a real hang as they show a simulated one.
//!
//! Times are wall-clock, relative to the first record (the header keeps its Unix time as
//! `start_unix_ns`). Each record becomes a `call` (with a `step` saying whom the rank waits
//! for), and a `complete` when the rank left it, at the latest of its members' calls (a
//! collective ends when its last member arrives; gloo records no completion time). A call that
//! was retired but cannot have succeeded becomes an `abort` at its timeout. The time a rank
//! spends outside its recorded calls is `compute` (see [`between_calls`]). A rank without a
//! dump is listed in the header's `missing` and dies (`process_death`) where the others get
//! stuck. The import's verdict closes the
//! trace as its `diagnosis`. The header's scenario is the job's world and program (see
//! [`super::scenario`]), without faults.

use super::analyze::lanes::{self, Call};
use super::analyze::Analysis;
use super::model::dtype;
use super::model::Dump;
use super::report::call_bytes;
use super::scenario::plan;
use crate::proto::{Generation, GroupId, SeqNo};
use crate::scenario::{OpKind, OpSpec, Outcome, ReduceOp};
use crate::trace::{Event, FaultPhase, Recorder, TraceWriter};
use crate::units::Size;
use std::path::Path;

/// The events of the trace, in time order, and its outcome.
pub fn events(dumps: &[Dump], a: &Analysis) -> Result<(Vec<(u64, Event)>, Outcome), String> {
    let t0 = a.t0_ns;
    let rel = |t: u64| t.saturating_sub(t0);
    let world = a.groups.world_size;
    // (time, order, event): the order keeps events of one instant as they were produced
    let mut evs: Vec<(u64, u64, Event)> = Vec::new();
    let mut n = 0u64;
    let mut push = |evs: &mut Vec<(u64, u64, Event)>, t: u64, e: Event| {
        evs.push((t, n, e));
        n += 1;
    };
    for r in 0..world {
        push(
            &mut evs,
            0,
            Event::ProcessStart {
                rank: r,
                incarnation: 0,
            },
        );
    }
    let mut end = a.span_ns;
    // calls are placed in their ranks' programs as the scenario places them
    let replay = plan("trace", dumps, a, false);
    for (gi, g) in a.groups.list.iter().enumerate() {
        // the calls of each seq, by member
        let mut by_seq: std::collections::BTreeMap<u64, Vec<(u32, Call)>> = Default::default();
        for &m in &g.members {
            if let Some(l) = a.lane(m, gi as u32) {
                if let Some(p) = l.p2p.first() {
                    let d = &dumps[p.dump as usize];
                    return Err(format!(
                        "point-to-point calls ({} on rank {m}) cannot be written in a trace yet",
                        d.profiling_name(&d.records[p.first as usize])
                    ));
                }
                for c in &l.calls {
                    by_seq.entry(c.seq).or_default().push((m, *c));
                }
            }
        }
        for (seq, calls) in &by_seq {
            let last_arrival = calls.iter().map(|(_, c)| c.time_ns).max().unwrap_or(0);
            for &(m, c) in calls {
                let rec = lanes::head(dumps, &c);
                let d = &dumps[c.dump as usize];
                let op = rec.kind.op().ok_or_else(|| {
                    format!(
                        "{} (#{seq} of {}) has no ringside op yet: it cannot be written in a trace",
                        d.profiling_name(rec),
                        g.label()
                    )
                })?;
                let bytes = call_bytes(dumps, &c);
                let t = rel(c.time_ns);
                let (iteration, index) = (0, replay.index_of(&c).unwrap_or(0));
                push(
                    &mut evs,
                    t,
                    Event::Call {
                        rank: m,
                        iteration,
                        index,
                        group: GroupId(g.id),
                        generation: Generation(0),
                        seq: SeqNo(*seq),
                        op,
                        algorithm: op.default_algorithm(),
                        bytes,
                        dtype: dtype(d.str(rec.in_dtypes)),
                        root: 0,
                        reduce: ReduceOp::Sum,
                        elements: replay.scenario.workload.elements,
                        members: g.members.len() as u32,
                        peer: None,
                    },
                );
                let stuck = super::analyze::waits::of_rank(&a.stuck, m)
                    .filter(|s| s.group == g.id && s.call.seq == *seq && !s.p2p);
                let waiting_for: Vec<u32> = match stuck {
                    Some(s) => s.waiting_for(),
                    None => g
                        .members
                        .iter()
                        .copied()
                        .filter(|&o| o != m)
                        .filter(|&o| {
                            !calls
                                .iter()
                                .any(|(x, xc)| *x == o && xc.time_ns <= c.time_ns)
                        })
                        .collect(),
                };
                push(
                    &mut evs,
                    t,
                    Event::Step {
                        rank: m,
                        group: GroupId(g.id),
                        generation: Generation(0),
                        seq: SeqNo(*seq),
                        step: 0,
                        steps: 1,
                        waiting_for: waiting_for.as_slice().into(),
                    },
                );
                let next = a
                    .lane(m, gi as u32)
                    .and_then(|l| l.calls.iter().find(|x| x.seq > *seq))
                    .map(|x| rel(x.time_ns));
                match stuck {
                    Some(s) if s.failed => {
                        let timeout = rec.timeout_ms.get().unwrap_or(0).saturating_mul(1_000_000);
                        let at = t.saturating_add(timeout).max(t);
                        end = end.max(at);
                        push(
                            &mut evs,
                            at,
                            Event::Abort {
                                rank: m,
                                group: GroupId(g.id),
                                generation: Generation(0),
                                seq: SeqNo(*seq),
                                step: 0,
                                steps: 1,
                                waiting_for,
                                reason: "watchdog: retired without completing".into(),
                            },
                        );
                    }
                    Some(_) => {}
                    None if c.left() => {
                        let done = if rec.completed_ns > 0 {
                            rel(rec.completed_ns)
                        } else {
                            rel(last_arrival)
                        };
                        let done = done.max(t).min(next.unwrap_or(u64::MAX).max(t));
                        end = end.max(done);
                        push(
                            &mut evs,
                            done,
                            Event::Complete {
                                rank: m,
                                group: GroupId(g.id),
                                generation: Generation(0),
                                seq: SeqNo(*seq),
                                iteration,
                                index,
                                result: String::new(),
                                correct: None,
                            },
                        );
                    }
                    None => {}
                }
            }
        }
    }
    // ranks that left their last call with nobody waiting for them to make another finished
    // their work when they left it; a rank the import finds stopped, or still in a call, did not
    let mut left = vec![None; world as usize];
    let mut open = vec![0i64; world as usize];
    for (t, _, e) in &evs {
        match e {
            Event::Complete { rank, .. } | Event::Abort { rank, .. } => {
                if let Some(l) = left.get_mut(*rank as usize) {
                    *l = Some((*l).unwrap_or(0).max(*t));
                    open[*rank as usize] -= 1;
                }
            }
            Event::Call { rank, .. } => {
                if let Some(o) = open.get_mut(*rank as usize) {
                    *o += 1;
                }
            }
            _ => {}
        }
    }
    let causes = a.root_causes();
    let blocked = a.diagnosis.blocked_ranks();
    for r in 0..world {
        if a.dump_of.get(r as usize).copied().flatten().is_none() {
            continue;
        }
        if blocked.contains(&r)
            || open[r as usize] > 0
            || causes.contains(&crate::scenario::RootCause::Hung(crate::proto::Rank(r)))
        {
            continue;
        }
        let at = left[r as usize].unwrap_or(end);
        push(&mut evs, at, Event::WorkloadDone { rank: r });
    }
    // ranks without a dump die where the others wait for them (a victim of a divergence died
    // of it: it is left alive here, as the replay leaves it)
    let victims: Vec<u32> = a
        .divergences
        .iter()
        .flat_map(|d| d.victims.iter().copied())
        .collect();
    for d in &a.divergences {
        // the victim waits in the call the ranks that agree made
        let g = &a.groups.list[d.group as usize];
        let Some((c, index)) = d.agree.iter().find_map(|&o| {
            let c = *a.lane(o, d.group)?.calls.iter().find(|c| c.seq == d.seq)?;
            Some((c, replay.index_of(&c).unwrap_or(0)))
        }) else {
            continue;
        };
        let rec = lanes::head(dumps, &c);
        let Some(op) = rec.kind.op() else {
            continue;
        };
        for &m in &d.victims {
            let t = rel(c.time_ns);
            push(
                &mut evs,
                t,
                Event::Call {
                    rank: m,
                    iteration: 0,
                    index,
                    group: GroupId(g.id),
                    generation: Generation(0),
                    seq: SeqNo(d.seq),
                    op,
                    algorithm: op.default_algorithm(),
                    bytes: call_bytes(dumps, &c),
                    dtype: dtype(dumps[c.dump as usize].str(rec.in_dtypes)),
                    root: 0,
                    reduce: ReduceOp::Sum,
                    elements: replay.scenario.workload.elements,
                    members: g.members.len() as u32,
                    peer: None,
                },
            );
            push(
                &mut evs,
                t,
                Event::Step {
                    rank: m,
                    group: GroupId(g.id),
                    generation: Generation(0),
                    seq: SeqNo(d.seq),
                    step: 0,
                    steps: 1,
                    waiting_for: d.culprits.as_slice().into(),
                },
            );
        }
    }
    for (i, &m) in a
        .missing
        .iter()
        .filter(|m| !victims.contains(m))
        .enumerate()
    {
        let at = a
            .stuck
            .iter()
            .filter(|s| s.waiting_for().contains(&m))
            .map(|s| rel(s.call.time_ns))
            .min()
            .unwrap_or(a.span_ns);
        push(
            &mut evs,
            at,
            Event::Fault {
                index: i as u32,
                fault: crate::fault::FaultKind::Preempt,
                phase: FaultPhase::Begin,
                ranks: vec![m],
                sides: None,
                oneway: false,
                detail: format!("rank {m} left no Flight Recorder dump"),
            },
        );
        push(
            &mut evs,
            at,
            Event::ProcessDeath {
                rank: m,
                incarnation: 0,
            },
        );
    }
    push(
        &mut evs,
        end,
        Event::Diagnosis {
            blocked: a.diagnosis.blocked_ranks(),
            root_causes: a.root_causes(),
            stragglers: Vec::new(),
        },
    );
    evs.sort_by_key(|(t, o, _)| (*t, *o));
    let recorded: Vec<bool> = (0..world as usize)
        .map(|r| a.dump_of.get(r).copied().flatten().is_some())
        .collect();
    let evs = between_calls(evs.into_iter().map(|(t, _, e)| (t, e)).collect(), &recorded);
    Ok((evs, a.outcome))
}

/// The time a rank with a dump spends outside its recorded calls, from its start to its first
/// call and between a call it left and its next one, written as `compute`: its dump shows it
/// busy elsewhere (host code, kernels of other streams), not stopped. A rank that records no
/// later call is left idle after its last: if others wait for it, the diagnosis names it.
fn between_calls(evs: Vec<(u64, Event)>, recorded: &[bool]) -> Vec<(u64, Event)> {
    let n = recorded.len();
    // each rank's call times, in order; the next one is first
    let mut next_call: Vec<std::collections::VecDeque<u64>> = vec![Default::default(); n];
    for (t, e) in &evs {
        if let Event::Call { rank, .. } = e {
            if let Some(c) = next_call.get_mut(*rank as usize) {
                c.push_back(*t);
            }
        }
    }
    let mut open = vec![0u32; n];
    let mut computing = vec![false; n];
    let mut out = Vec::with_capacity(evs.len() + 2 * evs.len() / 3);
    for (t, e) in evs {
        let r = match &e {
            Event::Call { rank, .. }
            | Event::Complete { rank, .. }
            | Event::Abort { rank, .. }
            | Event::ProcessStart { rank, .. } => *rank as usize,
            _ => n,
        };
        if !recorded.get(r).copied().unwrap_or(false) {
            out.push((t, e));
            continue;
        }
        let rank = r as u32;
        if let Event::Call { .. } = e {
            next_call[r].pop_front();
            if std::mem::take(&mut computing[r]) {
                out.push((t, Event::ComputeDone { rank }));
            }
            open[r] += 1;
            out.push((t, e));
            continue;
        }
        if !matches!(e, Event::ProcessStart { .. }) {
            open[r] = open[r].saturating_sub(1);
        }
        out.push((t, e));
        match next_call[r].front() {
            Some(&next) if next > t && open[r] == 0 && !computing[r] => {
                computing[r] = true;
                out.push((
                    t,
                    Event::Compute {
                        rank,
                        iteration: 0,
                        duration_ns: next - t,
                    },
                ));
            }
            _ => {}
        }
    }
    out
}

/// Writes the trace of the job to `out`; `name` names its scenario.
pub fn write(name: &str, dumps: &[Dump], a: &Analysis, out: &Path) -> Result<(), String> {
    let (evs, outcome) = events(dumps, a)?;
    let mut sc = plan(name, dumps, a, false).scenario;
    sc.faults.clear();
    sc.expect = None;
    if sc.workload.ops.is_empty() {
        sc.workload.ops.push(OpSpec {
            op: OpKind::Barrier,
            bytes: Size(0),
            reduce: Default::default(),
            algorithm: None,
            root: None,
            group: None,
            peer: None,
            rendezvous: false,
            compute: None,
            site: None,
        });
    }
    let f = std::fs::File::create(out).map_err(|e| format!("cannot create: {e}"))?;
    let mut extra = serde_json::Map::new();
    extra.insert("real".into(), true.into());
    extra.insert("driver".into(), "flight-recorder".into());
    extra.insert("start_unix_ns".into(), a.t0_ns.into());
    extra.insert(
        "dumps".into(),
        dumps
            .iter()
            .map(|d| d.file.clone())
            .collect::<Vec<_>>()
            .into(),
    );
    // the readers of the trace know these ranks' calls are unknown, not absent
    extra.insert("missing".into(), a.missing.clone().into());
    let mut w = TraceWriter::with_header(f, &sc, 0, crate::trace::Level::Full, extra)
        .map_err(|e| e.to_string())?;
    for (t, e) in &evs {
        w.record(*t, e);
    }
    w.finish(outcome).map_err(|e| e.to_string())?;
    Ok(())
}
