//! Upper bounds from the cost model: how long an op, an iteration and a run may take, and
//! whether a fault schedule heals in time for the liveness property to demand completion.
//!
//! The bounds are deliberately generous (each step is charged for everything any rank sends
//! and receives in it, one after the other, plus latency and jitter), because a property that
//! fails on correct code is worse than one that is a little slack: they exist to catch runs
//! that hang, not runs that are a few percent slow.

use crate::fault::Trigger;
use crate::proto::collective::{self, block_bytes, Ctx, Schedule, StepPlan};
use crate::scenario::{Algorithm, Fault, NetModel, OpKind, OpSpec, Scenario};
use crate::units::Nanos;

/// Ranks whose schedules are walked for one op: all of them in small worlds, a sample in big
/// ones (the algorithms are symmetric up to the root, which is always sampled).
fn sampled_ranks(p: u32, root: u32) -> Vec<u32> {
    if p <= 64 {
        return (0..p).collect();
    }
    let mut v: Vec<u32> = (0..32).chain(p - 32..p).collect();
    v.push(root.min(p - 1));
    v.sort_unstable();
    v.dedup();
    v
}

/// The algorithm a call of `op` runs with in `s`.
pub fn algorithm_of(s: &Scenario, op: &OpSpec) -> Algorithm {
    op.algorithm
        .or(match op.op {
            OpKind::Allreduce => s.group.algorithm,
            _ => None,
        })
        .unwrap_or(op.op.default_algorithm())
}

/// Per step: the most bytes any rank sends, receives and reduces, and the most messages it
/// sends and receives.
#[derive(Clone, Copy, Debug, Default)]
struct StepLoad {
    send_bytes: u64,
    recv_bytes: u64,
    reduce_bytes: u64,
    sends: u64,
    recvs: u64,
}

fn step_loads(s: &Scenario, op: &OpSpec) -> Vec<StepLoad> {
    let p = s.world.size.max(1);
    let root = op.root.unwrap_or(0).min(p - 1);
    let algorithm = algorithm_of(s, op);
    let mut loads: Vec<StepLoad> = Vec::new();
    let mut plan = StepPlan::default();
    for me in sampled_ranks(p, root) {
        let Ok(sched) = collective::schedule(op.op, algorithm, Ctx { me, p, root }) else {
            continue;
        };
        let (nb, modeled) = (sched.nblocks(), sched.modeled(op.bytes.0));
        let steps = sched.steps() as usize;
        if loads.len() < steps {
            loads.resize(steps, StepLoad::default());
        }
        for (k, load) in loads.iter_mut().enumerate().take(steps) {
            plan.clear();
            sched.plan(k as u32, &mut plan);
            let bytes = |t: &collective::Transfer| -> u64 {
                plan.ranges[t.ranges.clone()]
                    .iter()
                    .map(|&(lo, hi)| block_bytes(lo, hi, nb, modeled))
                    .sum()
            };
            let sent: u64 = plan.sends.iter().map(bytes).sum();
            let received: u64 = plan.recvs.iter().map(bytes).sum();
            let reduced: u64 = plan
                .recvs
                .iter()
                .filter(|t| t.action == collective::Action::Reduce)
                .map(bytes)
                .sum();
            load.send_bytes = load.send_bytes.max(sent);
            load.recv_bytes = load.recv_bytes.max(received);
            load.reduce_bytes = load.reduce_bytes.max(reduced);
            load.sends = load.sends.max(plan.sends.len() as u64);
            load.recvs = load.recvs.max(plan.recvs.len() as u64);
        }
    }
    loads
}

/// An upper bound of the time one call of `op` takes once every rank has issued it, with no
/// faults: the sum over its steps of latency, jitter, and every byte any rank moves through its
/// ports and reduces in that step.
///
/// A send or recv is charged one message per rank of the world, and a rendezvous send twice
/// that: a chain of sends to the next rank, each waiting for its receiver, is that long.
pub fn op_cost(s: &Scenario, op: &OpSpec) -> Nanos {
    if op.op.point_to_point() {
        let chain = Nanos::from(s.world.size.max(1)) * if op.rendezvous { 2 } else { 1 };
        return chain.saturating_mul(message_cost(s, op.bytes.0));
    }
    loads_cost(s, &step_loads(s, op))
}

/// An upper bound of one message of `bytes` from issue to arrival, charged as a step that
/// sends and receives it.
fn message_cost(s: &Scenario, bytes: u64) -> Nanos {
    let load = StepLoad {
        send_bytes: bytes,
        recv_bytes: bytes,
        reduce_bytes: 0,
        sends: 1,
        recvs: 1,
    };
    loads_cost(s, &[load])
}

fn loads_cost(s: &Scenario, loads: &[StepLoad]) -> Nanos {
    let n = &s.network;
    let reduce = |b: u64| n.reduce_bandwidth.map_or(0, |bw| bw.transfer_ns(b));
    let jitter = n.jitter.0;
    loads
        .iter()
        .map(|l| match n.model {
            NetModel::AlphaBeta => {
                let (latency, bandwidth) = match n.intra_host {
                    Some(intra) if s.world.ranks_per_host > 1 => (
                        n.latency.0.max(intra.latency.0),
                        n.bandwidth.min(intra.bandwidth),
                    ),
                    _ => (n.latency.0, n.bandwidth),
                };
                [
                    jitter,
                    bandwidth.transfer_ns(l.send_bytes),
                    bandwidth.transfer_ns(l.recv_bytes),
                    reduce(l.reduce_bytes),
                ]
                .into_iter()
                .fold(latency, Nanos::saturating_add)
            }
            NetModel::Loggp => {
                let d = |x: Option<crate::units::Duration>| x.map_or(0, |d| d.0);
                let (lat, o, g) = (d(n.loggp_l), d(n.loggp_o), d(n.loggp_g));
                let gb = n.loggp_gb.unwrap_or_default();
                [
                    jitter,
                    l.sends.saturating_mul(o.saturating_add(g)),
                    l.recvs.saturating_mul(o),
                    gb.ns_for(l.send_bytes.saturating_add(l.recv_bytes)),
                    reduce(l.reduce_bytes),
                ]
                .into_iter()
                .fold(lat, Nanos::saturating_add)
            }
        })
        .fold(0, Nanos::saturating_add)
}

/// An upper bound of one iteration with no faults: its compute, then every op in order.
pub fn iteration_cost(s: &Scenario) -> Nanos {
    let (compute, comm) = steps_cost(s);
    s.workload
        .compute
        .0
        .saturating_add(compute)
        .saturating_add(comm)
}

/// Upper bounds of one iteration's compute between calls and of its calls, beyond the
/// iteration's own compute: every list of ops (the shared one and each program's) one after
/// the other, as if each rank waited for every other's; and a pipeline's two passes over
/// its stages and microbatches, each step charged the longer compute and a message.
fn steps_cost(s: &Scenario) -> (Nanos, Nanos) {
    let w = &s.workload;
    let ops = w.ops.iter().chain(w.programs.iter().flat_map(|p| &p.ops));
    let mut compute: Nanos = ops
        .clone()
        .map(|o| o.compute.map_or(0, |d| d.0))
        .fold(0, Nanos::saturating_add);
    let mut comm: Nanos = ops.map(|o| op_cost(s, o)).fold(0, Nanos::saturating_add);
    if let Some(pipe) = &w.pipeline {
        let stages = pipe
            .group
            .as_deref()
            .and_then(|g| crate::scenario::groups::subgroups(s, g))
            .map_or(s.world.size, |gs| {
                gs.iter().map(|g| g.len() as u32).max().unwrap_or(1)
            });
        let passes = 2 * (Nanos::from(stages) + Nanos::from(pipe.microbatches));
        compute =
            compute.saturating_add(passes.saturating_mul(pipe.forward.0.max(pipe.backward.0)));
        comm = comm.saturating_add(passes.saturating_mul(message_cost(s, pipe.bytes.0)));
    }
    (compute, comm)
}

/// Whether the collective timeout of `s` may run out before a call finishes even without a
/// fault: it is not twice the cost bound of one of its calls (with the compute before it),
/// of the iteration's compute, or of a pipeline stage's pass. The factor 2 is the slack the
/// liveness property gives the faults ([`healing`]): ranks that call at different times (as
/// after a rebuild) stretch a call past its bound. A watchdog that fires then is the
/// scenario's own timing (`watchdog_timeout`), not a fault's doing.
pub fn timeout_too_short(s: &Scenario) -> bool {
    let w = &s.workload;
    let timeout = s.group.timeout.0;
    let ops = w.ops.iter().chain(w.programs.iter().flat_map(|p| &p.ops));
    let call = ops
        .map(|o| {
            o.compute
                .map_or(0, |d| d.0)
                .saturating_add(w.compute.0)
                .saturating_add(op_cost(s, o))
        })
        .max()
        .unwrap_or(w.compute.0);
    let stage = w.pipeline.as_ref().map_or(0, |p| {
        p.forward
            .0
            .max(p.backward.0)
            .saturating_add(message_cost(s, p.bytes.0))
    });
    timeout < call.max(stage).saturating_mul(2)
}

/// Whether the elastic group of `s` cannot rebuild, even with every fault over: a rendezvous
/// waits `heartbeat_interval x heartbeat_misses` for answers, and when that is not twice a
/// round trip of a small message on the slowest link, the answers come too late and no
/// generation can form (and heartbeats arrive after their sender is taken for dead). The
/// reason, when it cannot.
pub fn rebuild_impossible(s: &Scenario) -> Option<String> {
    let e = s.group.elastic.as_ref()?;
    let window = e
        .heartbeat_interval
        .0
        .saturating_mul(Nanos::from(e.heartbeat_misses.max(1)));
    let round_trip = message_cost(s, 4096).saturating_mul(2);
    (window < round_trip.saturating_mul(2)).then(|| {
        format!(
            "the failure detector's window ({} = heartbeat_interval x heartbeat_misses) is not \
             twice a round trip on this network ({}): a rendezvous cannot hear its answers in time",
            crate::units::fmt_time(window),
            crate::units::fmt_time(round_trip)
        )
    })
}

/// Whether the scenario's own timeouts are too tight for its network and workload
/// ([`timeout_too_short`], [`rebuild_impossible`]): a run of it need not finish, faults or
/// not.
pub fn own_timing_too_tight(s: &Scenario) -> bool {
    timeout_too_short(s) || rebuild_impossible(s).is_some()
}

/// The largest message of the workload on the slowest link, with its latency.
fn largest_message(s: &Scenario) -> Nanos {
    let n = &s.network;
    let w = &s.workload;
    let bytes = w
        .ops
        .iter()
        .chain(w.programs.iter().flat_map(|p| &p.ops))
        .map(|o| o.bytes.0)
        .chain(w.pipeline.as_ref().map(|p| p.bytes.0))
        .max()
        .unwrap_or(0);
    match n.model {
        NetModel::AlphaBeta => {
            let bw = match n.intra_host {
                Some(i) if s.world.ranks_per_host > 1 => n.bandwidth.min(i.bandwidth),
                _ => n.bandwidth,
            };
            let lat = n.intra_host.map_or(0, |i| i.latency.0).max(n.latency.0);
            lat.saturating_add(n.jitter.0)
                .saturating_add(bw.transfer_ns(bytes))
        }
        NetModel::Loggp => {
            let d = |x: Option<crate::units::Duration>| x.map_or(0, |d| d.0);
            let gb = n.loggp_gb.unwrap_or_default();
            [d(n.loggp_o), d(n.loggp_o), gb.ns_for(bytes), n.jitter.0]
                .into_iter()
                .fold(d(n.loggp_l), Nanos::saturating_add)
        }
    }
}

/// What the liveness property may demand of a scenario's fault schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Healing {
    /// Every fault ends, and even stacked on one another they cannot hold a single call back
    /// for as long as the collective timeout (with a factor 2 to spare): the run must complete.
    pub heals: bool,
    /// Why not, when it does not.
    pub why_not: Option<String>,
    /// When the last fault ends (0 without timed faults).
    pub last_end: Nanos,
    /// How much the faults together can hold a call back.
    pub hold_back: Nanos,
    /// When `heals`, the run must have completed by this virtual time.
    pub deadline: Nanos,
}

/// Classifies the fault schedule of `s` for the liveness property.
///
/// A fault holds a call back by at most: a pause, its duration; a partition or a loss, its
/// duration plus one retransmit timeout plus the largest message (a message blocked at the
/// end is resent once after the timeout); a delay, its duration plus its extra delay and
/// jitter. A slow rank arrives late by `compute x (factor - 1)` each iteration. Preemptions,
/// faults without an end, and application bugs never heal.
///
/// The deadline is the end of the last fault, plus every hold-back, plus twice the fault-free
/// workload with compute stretched by every slowdown at once (the run may restart the
/// workload's remaining iterations from any point), plus a retransmit timeout; and no earlier
/// than the last registry step plus every hold-back and a retransmit timeout.
pub fn healing(s: &Scenario) -> Healing {
    let compute = s.workload.compute.0;
    let rto = s.network.retransmit_timeout.0;
    let message = largest_message(s);
    let mut slow = 1.0f64;
    let mut hold_back: Nanos = 0;
    let mut last_end: Nanos = 0;
    let mut why_not = None;
    for (i, f) in s.faults.iter().enumerate() {
        let (Some(at), Some(d)) = (f.at(), f.duration()) else {
            why_not.get_or_insert_with(|| match f.trigger().and_then(Trigger::call) {
                Some(_) => format!(
                    "faults[{i}] ({}) begins at a call, at no known time",
                    f.kind()
                ),
                None => format!("faults[{i}] ({}) never ends", f.kind()),
            });
            continue;
        };
        last_end = last_end.max(at.0.saturating_add(d.0));
        hold_back = hold_back.saturating_add(match f {
            Fault::Pause { .. } => d.0,
            Fault::Partition { .. } | Fault::Loss { .. } => {
                d.0.saturating_add(rto).saturating_add(message)
            }
            Fault::Delay { extra, jitter, .. } => {
                d.0.saturating_add(extra.0)
                    .saturating_add(jitter.map_or(0, |j| j.0))
            }
            Fault::Slow { factor, .. } => {
                slow *= factor.max(1.0);
                0
            }
            _ => 0,
        });
    }
    if why_not.is_none() && !s.faults.is_empty() {
        why_not = rebuild_impossible(s);
    }
    let (between, ops) = steps_cost(s);
    // (a float past u64::MAX converts to u64::MAX)
    let stretched = (compute.saturating_add(between) as f64 * slow).ceil() as Nanos;
    let own = stretched.saturating_add(ops.saturating_mul(2));
    // a call waits for the latest rank to arrive (its compute, and the ops before it) and for
    // its own steps, plus whatever the faults add
    let per_call = own.saturating_add(hold_back);
    if why_not.is_none() && per_call.saturating_mul(2) > s.group.timeout.0 {
        why_not = Some(format!(
            "the faults may hold a call back for {} (with the workload's own {}), more than \
             half the collective timeout {}",
            crate::units::fmt_time(hold_back),
            crate::units::fmt_time(own),
            s.group.timeout
        ));
    }
    let iterations = Nanos::from(s.workload.iterations);
    let collectives_end = [
        hold_back,
        iterations
            .saturating_mul(2)
            .saturating_mul(stretched.saturating_add(ops)),
        rto,
        message,
    ]
    .into_iter()
    .fold(last_end, Nanos::saturating_add);
    // registry steps run at their own times (later only when their node was frozen)
    let steps_end = s
        .workload
        .registry
        .iter()
        .map(|r| r.at.0)
        .max()
        .unwrap_or(0);
    let deadline = collectives_end.max(
        [hold_back, rto, message]
            .into_iter()
            .fold(steps_end, Nanos::saturating_add),
    );
    Healing {
        heals: why_not.is_none(),
        why_not,
        last_end,
        hold_back,
        deadline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse;

    #[test]
    fn ring_allreduce_bound_covers_the_textbook_cost() {
        let s = parse(
            "name = \"b\"\n[world]\nsize = 4\n[network]\nlatency = \"1us\"\nbandwidth = \"1GB/s\"\n\
             [workload]\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"4000B\"\n",
            "b.toml",
        )
        .unwrap();
        // 2(p-1) a + 2(p-1)/p n b = 6us + 6us; the bound charges send and receive separately
        let textbook = 6_000 + 6_000;
        let bound = op_cost(&s, &s.workload.ops[0]);
        assert!(bound >= textbook, "{bound} < {textbook}");
        assert!(bound <= 2 * textbook, "{bound} is far above {textbook}");
    }

    #[test]
    fn the_deadline_waits_for_the_last_registry_step() {
        let s = parse(
            "name = \"r\"\n[world]\nsize = 2\n[workload]\n[[workload.registry]]\nat = \"700ms\"\n\
             rank = 0\naction = \"join\"\ngroup = \"g\"\n",
            "r.toml",
        )
        .unwrap();
        let h = healing(&s);
        assert!(h.heals);
        assert!(h.deadline >= 700_000_000, "{}", h.deadline);
    }

    #[test]
    fn permanent_faults_and_bugs_never_heal() {
        let base = "name = \"h\"\n[world]\nsize = 3\n[group]\ntimeout = \"1s\"\n[workload]\n\
                    [[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KB\"\n";
        let h = |faults: &str| healing(&parse(&format!("{base}{faults}"), "h.toml").unwrap());
        assert!(h("").heals);
        assert!(
            h("[[faults]]\nkind = \"pause\"\nrank = 1\nat = \"1ms\"\nduration = \"10ms\"\n").heals
        );
        assert!(!h("[[faults]]\nkind = \"preempt\"\nrank = 1\nat = \"1ms\"\n").heals);
        assert!(!h("[[faults]]\nkind = \"hang\"\nrank = 1\niteration = 0\n").heals);
        assert!(
            !h("[[faults]]\nkind = \"delay\"\nrank = 1\nat = \"1ms\"\nextra = \"1ms\"\n").heals
        );
        let long =
            h("[[faults]]\nkind = \"pause\"\nrank = 1\nat = \"1ms\"\nduration = \"900ms\"\n");
        assert!(
            !long.heals,
            "a pause near the timeout may trip the watchdog"
        );
        assert!(long
            .why_not
            .is_some_and(|w| w.contains("half the collective timeout")));
    }
}
