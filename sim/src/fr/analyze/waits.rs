//! Where each rank is stuck, and whom it waits for there.
//!
//! A rank's calls are a queue (see [`Lanes`]): it is stuck in the first call it has not left
//! (its head), or in one it left without completing — one that failed, or one a backend that
//! cannot tell (gloo) retired although a member provably never took part. The calls behind the
//! head wait for it, so a rank waits only where its head is. There it waits for every
//! participant that keeps the call from completing ([`Obstacle`]): a member that has not issued
//! it (stuck in an earlier call of its own, or idle), issued it with other parameters, issued
//! it but whose kernel never started, or left no dump.

use super::lanes::{differs, Call, Lanes, Queued, QueuedCall, Status};
use super::p2p::{End, Messages};
use super::seqs::Ctx;
use super::GroupScan;
use crate::fr::groups::{Group, Groups};
use crate::scenario::RootCause;

/// Why a participant keeps a call from completing.
#[derive(Clone, Debug, PartialEq)]
pub enum Obstacle {
    /// It left no dump.
    NoDump,
    /// It issued the call with other parameters.
    Differs,
    /// A send and its recv move different sizes (the cause, and what happened).
    Sizes(RootCause, String),
    /// It has not issued the call, or issued it behind a call of its own it is stuck in.
    Behind,
    /// It issued the call, its kernel never started while the waiter's did.
    NotStarted,
    /// It has not issued the call and is in no call: stopped, or went past it.
    Idle,
    /// A receive from any source that no send matched.
    AnySource,
}

/// A rank stuck in a call.
#[derive(Clone, Debug, PartialEq)]
pub struct Stuck {
    pub rank: u32,
    pub group: u32,
    /// The call (for a batch of sends and recvs, its first one that waits).
    pub call: Call,
    /// Members it cannot complete without, and why.
    pub waits: Vec<(u32, Obstacle)>,
    /// The rank has left the call (the watchdog retired it), yet it cannot have succeeded.
    pub failed: bool,
    /// A point-to-point call.
    pub p2p: bool,
}

impl Stuck {
    /// Members it cannot complete without.
    pub fn waiting_for(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.waits.iter().map(|(m, _)| *m).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// The stuck call of `rank` (`stuck` is sorted by rank).
pub fn of_rank(stuck: &[Stuck], rank: u32) -> Option<&Stuck> {
    stuck
        .binary_search_by_key(&rank, |s| s.rank)
        .ok()
        .map(|i| &stuck[i])
}

/// Every rank's head, when it has one: the ranks stuck in calls, by rank.
pub fn stuck(ctx: &Ctx, groups: &Groups, scans: &[GroupScan], msgs: &Messages) -> Vec<Stuck> {
    let heads = super::par::map(ctx.dump_of.len(), |rank| {
        let d = ctx.dump_of[rank]?;
        head_of(ctx, groups, scans, msgs, rank as u32, d)
    });
    heads.into_iter().flatten().collect()
}

/// Where rank `rank` (dump `d`) is stuck.
fn head_of(
    ctx: &Ctx,
    groups: &Groups,
    scans: &[GroupScan],
    msgs: &Messages,
    rank: u32,
    d: u32,
) -> Option<Stuck> {
    let lanes = &ctx.lanes[d as usize];
    // with device states, every entry before the head is left and passed over below
    let from = if lanes.device { lanes.head()?.0 } else { 0 };
    for q in &lanes.queue[from as usize..] {
        match q.status {
            Status::Completed => continue,
            // a retired call is the rank's head only when it cannot have succeeded: checked
            // where it is the rank's last word in its group (what followed shows it passed)
            Status::Left if lanes.device || !last_of_group(lanes, q) => continue,
            _ => {}
        }
        let g = &groups.list[q.group as usize];
        let s = match q.what {
            QueuedCall::Collective(i) => {
                let c = lanes.groups[q.group as usize].calls[i as usize];
                collective(ctx, g, &scans[q.group as usize], rank, c)
            }
            QueuedCall::P2p(a, b) => p2p(ctx, msgs, g, rank, d, a, b),
        };
        if q.status == Status::Left && s.waits.is_empty() {
            continue;
        }
        return Some(Stuck {
            failed: q.status.closed(),
            ..s
        });
    }
    None
}

/// `q` is the last call of its group in its rank's queue.
fn last_of_group(lanes: &Lanes, q: &Queued) -> bool {
    let lane = &lanes.groups[q.group as usize];
    match q.what {
        QueuedCall::Collective(i) => i as usize + 1 == lane.calls.len(),
        QueuedCall::P2p(_, b) => b as usize + 1 == lane.p2p.len(),
    }
}

/// Rank `rank` in collective `c` of group `g`: the members that keep it from completing.
fn collective(ctx: &Ctx, g: &Group, scan: &GroupScan, rank: u32, c: Call) -> Stuck {
    let mut waits = Vec::new();
    // a member proved it complete: every member took part (a rank that still shows it open
    // dumped before it ended)
    // (not at the call where the group diverged: there some members can finish their part,
    // a broadcast's from another root, while the others wait for ever)
    let diverged_here = scan
        .divergence
        .as_ref()
        .is_some_and(|d| d.decided() && d.seq == c.seq);
    let passed = c.completed() || (scan.passed(c.seq) && !diverged_here);
    if !passed {
        for &m in g.members.iter().filter(|&&m| m != rank) {
            if let Some(o) = obstacle(ctx, g, rank, &c, m) {
                waits.push((m, o));
            }
        }
    }
    // every member is in the call, yet it cannot complete: the group diverged at or before it
    // (a call made from another site, with a root the dumps do not record), and whoever the
    // divergence names holds it
    if waits.is_empty() && !passed && c.status != Status::Left {
        if let Some(d) = scan
            .divergence
            .as_ref()
            .filter(|d| d.decided() && d.seq <= c.seq)
        {
            let others = if d.culprits.contains(&rank) {
                &d.agree
            } else {
                &d.culprits
            };
            waits.extend(
                others
                    .iter()
                    .filter(|&&m| m != rank)
                    .map(|&m| (m, Obstacle::Differs)),
            );
        }
    }
    Stuck {
        rank,
        group: g.id,
        call: c,
        waits,
        failed: false,
        p2p: false,
    }
}

/// Why member `m` keeps collective `c` of `rank` from completing, if it does.
fn obstacle(ctx: &Ctx, g: &Group, rank: u32, c: &Call, m: u32) -> Option<Obstacle> {
    let Some(dm) = ctx.dump(m) else {
        return Some(Obstacle::NoDump);
    };
    let lanes = &ctx.lanes[dm];
    let lane = &lanes.groups[g.id as usize];
    match lane.calls.binary_search_by_key(&c.seq, |x| x.seq) {
        Ok(i) => {
            let x = lane.calls[i];
            if differs(ctx.dumps, c, &x).is_some() {
                return Some(Obstacle::Differs);
            }
            in_call(lanes, c, &x)
        }
        Err(i) => {
            // a later call of the group (or `pg_status`) proves it was issued and left
            let issued = i < lane.calls.len() || lane.enqueued.is_some_and(|e| e >= c.seq as i64);
            // records that begin after the call was issued cannot tell
            let covers = ctx.oldest_ns[dm].is_some_and(|t| t <= c.time_ns);
            if issued || !covers {
                return None;
            }
            let _ = rank;
            Some(absent(ctx, dm))
        }
    }
}

/// A participant that made the matching call `x` of call `c`: in the way when it has not
/// left `x` and `x` waits behind its own head, or when its kernel never started while `c`'s
/// did.
fn in_call(lanes: &Lanes, c: &Call, x: &Call) -> Option<Obstacle> {
    if x.left() {
        return None;
    }
    match lanes.head() {
        Some((pos, _)) if pos < x.pos => Some(Obstacle::Behind),
        _ if lanes.held() && c.began => Some(Obstacle::NotStarted),
        _ => None,
    }
}

/// A participant (dump `dm`) that has not made the call: stuck in one of its own, or idle.
fn absent(ctx: &Ctx, dm: usize) -> Obstacle {
    if ctx.busy(dm) {
        Obstacle::Behind
    } else {
        Obstacle::Idle
    }
}

/// Rank `rank` in the batch `p2p[a..=b]` of group `g`: the other ends it waits for.
fn p2p(ctx: &Ctx, msgs: &Messages, g: &Group, rank: u32, d: u32, a: u32, b: u32) -> Stuck {
    let lane = &ctx.lanes[d as usize].groups[g.id as usize];
    let mut waits = Vec::new();
    let mut first: Option<Call> = None;
    for i in a..=b {
        let c = lane.p2p[i as usize];
        let Some(end) = msgs.end(d, g.id, i) else {
            continue;
        };
        if let Some(o) = end_obstacle(ctx, end, &c) {
            first.get_or_insert(c);
            match end.peer {
                Some(p) => waits.push((p, o)),
                // from any source: every other member could send it
                None => waits.extend(
                    g.members
                        .iter()
                        .filter(|&&m| m != rank)
                        .map(|&m| (m, o.clone())),
                ),
            }
        }
    }
    Stuck {
        rank,
        group: g.id,
        call: first.unwrap_or(lane.p2p[a as usize]),
        waits,
        failed: false,
        p2p: true,
    }
}

/// Why the other end of send or recv `c` keeps it from completing, if it does.
fn end_obstacle(ctx: &Ctx, end: &End, c: &Call) -> Option<Obstacle> {
    if let Some((cause, text)) = &end.mismatch {
        return Some(Obstacle::Sizes(cause.clone(), text.clone()));
    }
    let Some(peer) = end.peer else {
        return Some(Obstacle::AnySource);
    };
    let Some(dp) = ctx.dump(peer) else {
        return Some(Obstacle::NoDump);
    };
    let lanes = &ctx.lanes[dp];
    match &end.other {
        Some(x) => in_call(lanes, c, x),
        None => {
            let covers = ctx.oldest_ns[dp].is_some_and(|t| t <= c.time_ns);
            covers.then(|| absent(ctx, dp))
        }
    }
}
