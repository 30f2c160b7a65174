//! Where each rank is stuck, and whom it waits for there.
//!
//! A rank's calls are a queue (see [`Lanes`]): it is stuck in the first call it has not left
//! (its head), or in one it left without completing — one that failed, or one a backend that
//! cannot tell (gloo) retired although a member provably never took part. The calls behind the
//! head wait for it, so a rank waits only where its head is. There it waits for every
//! participant that keeps the call from completing ([`Obstacle`]): a member that has not issued
//! it (stuck in an earlier call of its own, or idle), issued it with other parameters, issued
//! it but whose kernel never started, or left no dump.

use super::lanes::{differs, sig, Call, Lanes, Queued, QueuedCall, Status};
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
///
/// What a member shows of a collective is the same for every rank stuck in it, so it is found
/// once a group and seq ([`Shown`]), not once a pair of members: a group of 4,096 members all
/// but one of them stuck in its last call would otherwise be looked at 16 million times.
pub fn stuck(ctx: &Ctx, groups: &Groups, scans: &[GroupScan], msgs: &Messages) -> Vec<Stuck> {
    let heads = super::par::map(ctx.dump_of.len(), |rank| {
        let d = ctx.dump_of[rank]?;
        head_of(ctx, groups, scans, msgs, rank as u32, d)
    });
    // the collectives ranks are stuck in, by group and seq
    let mut open: Vec<(u32, u64, u32)> = heads
        .iter()
        .flatten()
        .filter_map(|h| match h {
            Head::Open(s) => Some((s.group, s.call.seq, s.rank)),
            Head::Done(_) => None,
        })
        .collect();
    open.sort_unstable();
    let runs: Vec<&[(u32, u64, u32)]> = open.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)).collect();
    let found = super::par::map(runs.len(), |k| {
        let (g, seq, _) = runs[k][0];
        let g = &groups.list[g as usize];
        let shown = shown(ctx, g, seq);
        let scan = &scans[g.id as usize];
        let waits = |rank: u32| match &heads[rank as usize] {
            Some(Head::Open(s)) => collective(ctx, g, scan, s, &shown),
            _ => Vec::new(),
        };
        runs[k]
            .iter()
            .map(|&(_, _, rank)| (rank, waits(rank)))
            .collect::<Vec<_>>()
    });
    let mut waits: Vec<Vec<(u32, Obstacle)>> = vec![Vec::new(); heads.len()];
    for (rank, w) in found.into_iter().flatten() {
        waits[rank as usize] = w;
    }
    (heads.into_iter().zip(waits))
        .filter_map(|(h, waits)| match h? {
            Head::Done(s) => Some(s),
            Head::Open(s) => Some(Stuck { waits, ..s }),
        })
        .collect()
}

/// A rank's head: its waits found (a point-to-point batch, or a call it left), or a
/// collective whose waits are found with the other ranks stuck in it.
enum Head {
    Done(Stuck),
    Open(Stuck),
}

/// Where rank `rank` (dump `d`) is stuck.
fn head_of(
    ctx: &Ctx,
    groups: &Groups,
    scans: &[GroupScan],
    msgs: &Messages,
    rank: u32,
    d: u32,
) -> Option<Head> {
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
        let failed = q.status.closed();
        let s = match q.what {
            QueuedCall::Collective(i) => {
                let s = Stuck {
                    rank,
                    group: g.id,
                    call: lanes.groups[q.group as usize].calls[i as usize],
                    waits: Vec::new(),
                    failed,
                    p2p: false,
                };
                if q.status != Status::Left {
                    return Some(Head::Open(s));
                }
                let shown = shown(ctx, g, s.call.seq);
                Stuck {
                    waits: collective(ctx, g, &scans[q.group as usize], &s, &shown),
                    ..s
                }
            }
            QueuedCall::P2p(a, b) => Stuck {
                failed,
                ..p2p(ctx, msgs, g, rank, d, a, b)
            },
        };
        if q.status == Status::Left && s.waits.is_empty() {
            continue;
        }
        return Some(Head::Done(s));
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

/// Rank `s.rank` stuck in collective `s.call` of group `g`, whose members show `shown` of
/// it: the members that keep it from completing.
fn collective(
    ctx: &Ctx,
    g: &Group,
    scan: &GroupScan,
    s: &Stuck,
    shown: &[Shown],
) -> Vec<(u32, Obstacle)> {
    let (rank, c) = (s.rank, &s.call);
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
        // one record called like the member's: alike without reading either
        let sig = (c.first == c.last).then(|| sig(ctx.dumps, c));
        for (&m, x) in g.members.iter().zip(shown) {
            if m != rank {
                if let Some(o) = x.obstacle(ctx, c, sig) {
                    waits.push((m, o));
                }
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
    waits
}

/// What a member shows of one collective seq of its group, whichever member is stuck in it.
#[derive(Clone, Copy)]
enum Shown {
    NoDump,
    /// It made the call `x`; `sig` when `x` is one record.
    Made {
        x: Call,
        sig: Option<u64>,
        standing: Standing,
    },
    /// It has not made the call: `issued` when a later call of the group (or `pg_status`)
    /// proves it made and left it; else how far back its dump reaches, and whether it is in a
    /// call of its own.
    NotMade {
        issued: bool,
        oldest_ns: Option<u64>,
        busy: bool,
    },
}

/// What the members of group `g` (in the order of `g.members`) show of its collective `seq`.
fn shown(ctx: &Ctx, g: &Group, seq: u64) -> Vec<Shown> {
    g.members
        .iter()
        .map(|&m| {
            let Some(dm) = ctx.dump(m) else {
                return Shown::NoDump;
            };
            let lanes = &ctx.lanes[dm];
            let lane = &lanes.groups[g.id as usize];
            match lane.calls.binary_search_by_key(&seq, |x| x.seq) {
                Ok(i) => {
                    let x = lane.calls[i];
                    Shown::Made {
                        x,
                        sig: (x.first == x.last).then(|| sig(ctx.dumps, &x)),
                        standing: Standing::of(lanes, &x),
                    }
                }
                Err(i) => {
                    let issued =
                        i < lane.calls.len() || lane.enqueued.is_some_and(|e| e >= seq as i64);
                    Shown::NotMade {
                        issued,
                        oldest_ns: ctx.oldest_ns[dm],
                        busy: !issued && ctx.busy(dm),
                    }
                }
            }
        })
        .collect()
}

impl Shown {
    /// Why this member keeps collective `c` (with signature `sig` when it is one record)
    /// from completing, if it does.
    fn obstacle(&self, ctx: &Ctx, c: &Call, sig: Option<u64>) -> Option<Obstacle> {
        match *self {
            Shown::NoDump => Some(Obstacle::NoDump),
            Shown::Made {
                x,
                sig: sx,
                standing,
            } => {
                let alike = sig.is_some() && sig == sx;
                if !alike && differs(ctx.dumps, c, &x).is_some() {
                    return Some(Obstacle::Differs);
                }
                standing.obstacle(c)
            }
            Shown::NotMade {
                issued,
                oldest_ns,
                busy,
            } => {
                // records that begin after the call was issued cannot tell
                let covers = oldest_ns.is_some_and(|t| t <= c.time_ns);
                (!issued && covers).then(|| absent(busy))
            }
        }
    }
}

/// Where a participant stands in its matching call `x`: left it, waits behind its own head,
/// or its stream is held.
#[derive(Clone, Copy)]
struct Standing {
    left: bool,
    behind: bool,
    held: bool,
}

impl Standing {
    fn of(lanes: &Lanes, x: &Call) -> Standing {
        Standing {
            left: x.left(),
            behind: lanes.head().is_some_and(|(pos, _)| pos < x.pos),
            held: lanes.held(),
        }
    }

    /// In the way of call `c`: when it has not left its call and that call waits behind its
    /// own head, or when its kernel never started while `c`'s did.
    fn obstacle(self, c: &Call) -> Option<Obstacle> {
        if self.left {
            None
        } else if self.behind {
            Some(Obstacle::Behind)
        } else if self.held && c.began {
            Some(Obstacle::NotStarted)
        } else {
            None
        }
    }
}

/// A participant that has not made the call: stuck in one of its own (`busy`), or idle.
fn absent(busy: bool) -> Obstacle {
    if busy {
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
        Some(x) => Standing::of(lanes, x).obstacle(c),
        None => {
            let covers = ctx.oldest_ns[dp].is_some_and(|t| t <= c.time_ns);
            covers.then(|| absent(ctx.busy(dp)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fr::model::Dump;

    /// A JSON dump of rank `rank` in a world of 4: all_reduces of group 0, `(size, state)`
    /// each, by seq from 1.
    fn dump(rank: u32, calls: &[(u32, &str)]) -> Dump {
        let entries: Vec<String> = calls
            .iter()
            .enumerate()
            .map(|(i, (size, state))| {
                format!(
                    r#"{{"record_id":{i},"pg_id":0,"process_group":["0","default_pg"],
                    "collective_seq_id":{},"p2p_seq_id":0,"profiling_name":"nccl:all_reduce",
                    "time_created_ns":{},"input_sizes":[[{size}]],"input_dtypes":["Float"],
                    "output_sizes":[[{size}]],"output_dtypes":["Float"],"state":"{state}",
                    "retired":false,"is_p2p":false}}"#,
                    i + 1,
                    1000 + i,
                )
            })
            .collect();
        let text = format!(
            r#"{{"version":"2.10","pg_config":{{"0":{{"name":"0","desc":"default_pg","ranks":"[0, 1, 2, 3]"}}}},"entries":[{}]}}"#,
            entries.join(",")
        );
        let file = format!("rank_{rank}.json");
        crate::fr::read::read_bytes(text.as_bytes(), &file, rank).expect("a dump")
    }

    /// Ranks stuck in one call each learn what every other member shows of it, judged
    /// against their own call: what the members show is found once for all of them, yet
    /// the rank whose sizes differ waits for the others as they wait for it.
    #[test]
    fn each_rank_in_a_call_is_judged_by_its_own_call() {
        let (done, open) = ((4, "completed"), (4, "started"));
        let dumps = [
            dump(0, &[done, done, open]),
            dump(1, &[done, done, open]),
            dump(2, &[done, done, (8, "started")]),
            dump(3, &[done, done]),
        ];
        let a = super::super::analyze(&dumps);
        let waits: Vec<_> = (a.stuck.iter())
            .map(|s| (s.rank, s.call.seq, s.waits.clone()))
            .collect();
        use Obstacle::{Differs, Idle};
        assert_eq!(
            waits,
            [
                (0, 3, vec![(2, Differs), (3, Idle)]),
                (1, 3, vec![(2, Differs), (3, Idle)]),
                (2, 3, vec![(0, Differs), (1, Differs), (3, Idle)]),
            ]
        );
    }
}
