//! Point-to-point calls, matched by (group, peer pair, order): the k-th send from A to B in a
//! group pairs with the k-th receive of B from A. `p2p_seq_id` counts per group, not per pair,
//! so it cannot pair them; profiling names carry group ranks (`nccl:send 0->1`), turned into
//! global ranks through the group's members. A receive from any source (`recv 1<-?`) takes the
//! first send to its rank that no receive from that sender takes.

use super::lanes::{Call, Lanes, Status};
use crate::fr::groups::{Group, Groups};
use crate::fr::model::{dtype_bytes, numel, Dump, Record};
use crate::proto::vocab::OpKind;
use crate::proto::Rank;
use crate::scenario::RootCause;
use std::collections::BTreeMap;

/// A send or recv and what became of its other end.
#[derive(Clone, Debug, PartialEq)]
pub struct End {
    /// The rank that holds this end, and its other end's rank (None: a recv from any source
    /// that no send matched).
    pub rank: u32,
    pub peer: Option<u32>,
    pub send: bool,
    /// Which message between the two it is, from 0.
    pub order: u32,
    /// The other end, when its rank recorded it.
    pub other: Option<Call>,
    /// The two ends move different sizes: the root cause (the end whose size the group's other
    /// messages do not move, or `undecided`) and what happened.
    pub mismatch: Option<(RootCause, String)>,
}

/// The sends and recvs of the job that may keep a call from completing, by (dump, group, index
/// in the lane's `p2p`): every one but those matched, with the same size, to an other end that
/// has left its call (nothing of a message both of whose ends are done holds anyone up, and a
/// job's pipelines leave millions of them).
#[derive(Clone, Debug, Default)]
pub struct Messages {
    ends: BTreeMap<(u32, u32, u32), End>,
}

impl Messages {
    pub fn end(&self, dump: u32, group: u32, i: u32) -> Option<&End> {
        self.ends.get(&(dump, group, i))
    }

    /// The ends whose other end is missing, and that wait for `rank`: sends toward it nobody
    /// received, recvs from it nobody sent. (For misdirected calls.)
    pub fn unmatched(&self) -> impl Iterator<Item = &End> {
        self.ends.values().filter(|e| e.other.is_none())
    }
}

/// What a send or recv says of its message: which way it goes, its peer (a rank of its group;
/// None: a recv from any source) and the bytes it moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    pub send: bool,
    pub peer: Option<u32>,
    pub bytes: u64,
}

impl Message {
    /// The message of record `r` of dump `d`, if it is a send or recv that names its peer.
    pub fn of(d: &Dump, r: &Record) -> Option<Message> {
        let p = r.peer?;
        let send = match r.kind.op() {
            Some(OpKind::Send) => true,
            Some(OpKind::Recv) => false,
            _ => return None,
        };
        Some(Message {
            send,
            peer: p.peer,
            bytes: size(d, r),
        })
    }
}

/// One end before matching: its rank, its call, its index in the lane and the bytes it moves.
struct Raw {
    rank: u32,
    call: Call,
    index: u32,
    bytes: u64,
}

/// Matches every send and recv of the job.
pub fn match_all(
    dumps: &[Dump],
    groups: &Groups,
    lanes: &[Lanes],
    dump_of: &[Option<u32>],
) -> Messages {
    // groups are matched apart, on every core: each group's ends are keyed by the group
    let parts = super::par::map(groups.list.len(), |g| {
        let g = &groups.list[g];
        let mut out = Messages::default();
        let (mut sends, mut recvs) = collect(dumps, g, lanes, dump_of);
        if sends.is_empty() && recvs.is_empty() {
            return out;
        }
        align_windows(dumps, &mut sends, &mut recvs);
        match_group(dumps, g, &sends, &recvs, &mut out);
        misdirected(&sends, &recvs, &mut out, g);
        out
    });
    let mut out = Messages::default();
    for p in parts {
        out.ends.extend(p.ends);
    }
    out
}

/// The dump's ring buffer dropped older records.
fn truncated(dumps: &[Dump], dump: u32) -> bool {
    dumps[dump as usize].first_id.is_some_and(|id| id > 0)
}

/// Ring buffers start at different places per rank: where one end of a pair lost older
/// messages the other end still holds, those are not counted in the pair's order. Each end's
/// messages that both ends have ended come first (a send completes with its recv), so the end
/// with more of them is cut to the other's count; ends whose records go back to their
/// process's first call are taken whole.
fn align_windows(dumps: &[Dump], sends: &mut ByPair, recvs: &mut ByPair) {
    for (&(from, to), ss) in sends.iter_mut() {
        let Some(to) = to else { continue };
        let Some(rs) = recvs.get_mut(&(to, Some(from))) else {
            continue;
        };
        let (Some(s0), Some(r0)) = (ss.first(), rs.first()) else {
            continue;
        };
        if !truncated(dumps, s0.call.dump) && !truncated(dumps, r0.call.dump) {
            continue;
        }
        let ended = |v: &[Raw]| {
            v.iter()
                .take_while(|r| matches!(r.call.status, Status::Completed | Status::Left))
                .count()
        };
        let (es, er) = (ended(ss), ended(rs));
        if es > er && truncated(dumps, r0.call.dump) {
            ss.drain(..es - er);
        } else if er > es && truncated(dumps, s0.call.dump) {
            rs.drain(..er - es);
        }
    }
}

/// The group's sends and recvs by (sender, receiver), in the order each rank issued them.
type ByPair = BTreeMap<(u32, Option<u32>), Vec<Raw>>;

/// A send (true) or recv toward (or from) a peer.
type Direction = (bool, Option<u32>);

fn collect(
    dumps: &[Dump],
    g: &Group,
    lanes: &[Lanes],
    dump_of: &[Option<u32>],
) -> (ByPair, ByPair) {
    let mut sends: ByPair = BTreeMap::new();
    let mut recvs: ByPair = BTreeMap::new();
    // a member's calls by (send, peer): a rank of a pipeline has a few peers and thousands of
    // calls
    let mut mine: Vec<(Direction, Vec<Raw>)> = Vec::new();
    for &m in &g.members {
        let Some(d) = dump_of.get(m as usize).copied().flatten() else {
            continue;
        };
        let (dump, lanes) = (&dumps[d as usize], &lanes[d as usize]);
        for (i, c) in lanes.groups[g.id as usize].p2p.iter().enumerate() {
            let Some(msg) = lanes.message(dump, c) else {
                continue;
            };
            let peer = match msg.peer {
                Some(local) => match g.members.get(local as usize) {
                    Some(&x) => Some(x),
                    None => continue,
                },
                None => None,
            };
            let raw = Raw {
                rank: m,
                call: *c,
                index: i as u32,
                bytes: msg.bytes,
            };
            let key = (msg.send, peer);
            match mine.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(raw),
                None => mine.push((key, vec![raw])),
            }
        }
        for ((send, peer), v) in mine.drain(..) {
            let to = if send { &mut sends } else { &mut recvs };
            match to.entry((m, peer)) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(v);
                }
                std::collections::btree_map::Entry::Occupied(mut e) => e.get_mut().extend(v),
            }
        }
    }
    (sends, recvs)
}

/// Bytes a send or recv (record `r` of dump `d`) moves.
fn size(d: &Dump, r: &Record) -> u64 {
    let t = dtype_bytes(d.str(r.in_dtypes).split(',').next().unwrap_or(""));
    numel(d.shapes(r.input)).saturating_mul(t)
}

fn match_group(dumps: &[Dump], grp: &Group, sends: &ByPair, recvs: &ByPair, out: &mut Messages) {
    let g = grp.id;
    // how many of the group's messages move each size, to judge a send and a recv that
    // disagree: the end whose size the others do not move is wrong (counted when two do)
    let mut sizes: Option<BTreeMap<u64, usize>> = None;
    // sends taken by a recv, per (sender, receiver)
    let mut taken: BTreeMap<(u32, u32), usize> = BTreeMap::new();
    for (&(to, from), rs) in recvs {
        let Some(from) = from else { continue };
        let ss = sends.get(&(from, Some(to))).map_or(&[][..], Vec::as_slice);
        taken.insert((from, to), rs.len().min(ss.len()));
        for (k, r) in rs.iter().enumerate() {
            let s = ss.get(k);
            let mismatch = s
                .filter(|s| s.bytes != r.bytes)
                .map(|s| judge_sizes(dumps, grp, s, r, k, counts(&mut sizes, sends, recvs)));
            if mismatch.is_none() && s.is_some_and(|s| s.call.left()) && r.call.left() {
                continue;
            }
            out.ends.insert(
                (r.call.dump, g, r.index),
                End {
                    rank: to,
                    peer: Some(from),
                    send: false,
                    order: k as u32,
                    other: s.map(|s| s.call),
                    mismatch: mismatch.clone(),
                },
            );
            if let Some(s) = s {
                out.ends.insert(
                    (s.call.dump, g, s.index),
                    End {
                        rank: from,
                        peer: Some(to),
                        send: true,
                        order: k as u32,
                        other: Some(r.call),
                        mismatch,
                    },
                );
            }
        }
    }
    // recvs from any source take the first sends toward them that no recv took
    for (&(to, _), rs) in recvs.iter().filter(|((_, f), _)| f.is_none()) {
        let mut free: Vec<(u64, u32, &Raw)> = sends
            .iter()
            .filter(|((_, t), _)| *t == Some(to))
            .flat_map(|(&(from, _), ss)| {
                let skip = taken.get(&(from, to)).copied().unwrap_or(0);
                ss.iter().skip(skip).map(move |s| (s.call.time_ns, from, s))
            })
            .collect();
        free.sort_by_key(|&(t, from, _)| (t, from));
        for (k, r) in rs.iter().enumerate() {
            let s = free.get(k);
            out.ends.insert(
                (r.call.dump, g, r.index),
                End {
                    rank: to,
                    peer: s.map(|&(_, f, _)| f),
                    send: false,
                    order: k as u32,
                    other: s.map(|&(_, _, s)| s.call),
                    mismatch: None,
                },
            );
            if let Some(&(_, from, s)) = s {
                *taken.entry((from, to)).or_default() += 1;
                out.ends.insert(
                    (s.call.dump, g, s.index),
                    End {
                        rank: from,
                        peer: Some(to),
                        send: true,
                        order: k as u32,
                        other: Some(r.call),
                        mismatch: None,
                    },
                );
            }
        }
    }
    // sends no recv took
    for (&(from, to), ss) in sends {
        let Some(to) = to else { continue };
        let skip = taken.get(&(from, to)).copied().unwrap_or(0);
        for (k, s) in ss.iter().enumerate().skip(skip) {
            out.ends
                .entry((s.call.dump, g, s.index))
                .or_insert_with(|| End {
                    rank: from,
                    peer: Some(to),
                    send: true,
                    order: k as u32,
                    other: None,
                    mismatch: None,
                });
        }
    }
}

/// A call of one dump: the dump, the group and the call's index in its lane.
type CallAt = (u32, u32, u32);

/// A send or recv that names a peer that never takes part in a message with its rank, while
/// another member's message toward (or from) that rank waits: the call names the wrong peer
/// (a stage receiving from the wrong stage, a send to the wrong rank). Its rank is at fault.
fn misdirected(sends: &ByPair, recvs: &ByPair, out: &mut Messages, g: &Group) {
    let mut found: Vec<(CallAt, (RootCause, String))> = Vec::new();
    wrong_peer(recvs, sends, g, &mut found, |me, peer, g, waiting| {
        format!(
            "rank {me} posted a recv from rank {peer} in {g}, which never sends to it, while \
             the send of {waiting} toward rank {me} waits: rank {me}'s recv names the wrong peer"
        )
    });
    wrong_peer(sends, recvs, g, &mut found, |me, peer, g, waiting| {
        format!(
            "rank {me} sent to rank {peer} in {g}, which never receives from it, while the recv \
             of {waiting} from rank {me} waits: rank {me}'s send names the wrong peer"
        )
    });
    for (k, m) in found {
        if let Some(e) = out.ends.get_mut(&k) {
            if e.other.is_none() && e.mismatch.is_none() {
                e.mismatch = Some(m);
            }
        }
    }
}

/// The open calls of `mine` (by rank and peer) toward a peer that has no call of `theirs`
/// toward the rank, while calls of `theirs` of other ranks toward the rank wait: each with its
/// rank's `mismatch` and `text(rank, peer, group, waiting ranks)`.
fn wrong_peer(
    mine: &ByPair,
    theirs: &ByPair,
    g: &Group,
    found: &mut Vec<(CallAt, (RootCause, String))>,
    text: impl Fn(u32, u32, &str, &str) -> String,
) {
    let open = |r: &&Raw| !r.call.left() || r.call.status == Status::Failed;
    for (&(me, peer), calls) in mine {
        let Some(peer) = peer else { continue };
        let never = theirs.get(&(peer, Some(me))).is_none_or(|v| v.is_empty());
        let waiting: Vec<u32> = theirs
            .iter()
            .filter(|((x, p), v)| *p == Some(me) && *x != peer && v.iter().any(|r| open(&r)))
            .map(|((x, _), _)| *x)
            .collect();
        if !never || waiting.is_empty() {
            continue;
        }
        let said = text(
            me,
            peer,
            &g.label(),
            &crate::diagnose::ranks_phrase(&waiting),
        );
        for r in calls.iter().filter(open) {
            found.push((
                (r.call.dump, g.id, r.index),
                (RootCause::Mismatch(Rank(me)), said.clone()),
            ));
        }
    }
}

/// How many of the messages of `sends` and `recvs` move each size, counted once (in `cache`).
fn counts<'a>(
    cache: &'a mut Option<BTreeMap<u64, usize>>,
    sends: &ByPair,
    recvs: &ByPair,
) -> &'a BTreeMap<u64, usize> {
    cache.get_or_insert_with(|| {
        let mut n: BTreeMap<u64, usize> = BTreeMap::new();
        for r in sends.values().chain(recvs.values()).flatten() {
            *n.entry(r.bytes).or_default() += 1;
        }
        n
    })
}

/// A send and the recv it pairs with that move different sizes (`sizes`: how many of the
/// group's messages move each): the end whose size the group's other messages do not move is
/// wrong.
fn judge_sizes(
    dumps: &[Dump],
    g: &Group,
    s: &Raw,
    r: &Raw,
    k: usize,
    sizes: &BTreeMap<u64, usize>,
) -> (RootCause, String) {
    let (a, b) = (s.bytes, r.bytes);
    let (na, nb) = (sizes[&a], sizes[&b]);
    let d = &dumps[r.call.dump as usize];
    let what = format!(
        "rank {}'s {} (message {} from rank {} in {}) takes {b} B where rank {} sends {a} B",
        r.rank,
        d.profiling_name(&d.records.get(r.call.first as usize)),
        k + 1,
        s.rank,
        g.label(),
        s.rank,
    );
    if na == nb {
        (
            RootCause::Undecided,
            format!(
                "{what}: as many of the group's messages move either size, so the dumps cannot \
                 tell which end is wrong"
            ),
        )
    } else {
        let (culprit, right) = if na > nb { (r.rank, a) } else { (s.rank, b) };
        (
            RootCause::Mismatch(Rank(culprit)),
            format!("{what}: rank {culprit} is wrong, the group's other messages move {right} B"),
        )
    }
}
