//! The expected result of a collective, computed directly from the members' inputs (of a
//! recv, from its sender's), and the check of a rank's result against it. Every driver checks completed calls this way (through
//! [`crate::observe::Observer`]); so do the properties.

use crate::proto::collective::{block_elems, input_len, Ctx, Members};
use crate::proto::{Buffer, Fingerprint, Rank};
use crate::scenario::OpKind;
use std::borrow::Cow;
use std::sync::Arc;

/// Everything that determines a call's expected result: the fingerprint, and what its inputs
/// derive from (`WorkloadConfig::input_key`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallKey {
    pub fp: Fingerprint,
    pub iteration: u32,
    pub index: u32,
    pub seed: u64,
}

/// The data a recv of message `fp` (its `seq` the message's order) from world rank `from`
/// to `to` must hold: what the sender sends as that message.
pub fn message(fp: &Fingerprint, seed: u64, from: Rank, to: Rank) -> Buffer {
    Buffer::message(
        fp.dtype,
        fp.elements as usize,
        seed,
        fp.group.0,
        from.0,
        to.0,
        fp.seq.0,
    )
}

/// The full (unextracted) reference buffer of a call over `members` (in group order).
pub fn full_reference(key: &CallKey, members: &[Rank]) -> Option<Buffer> {
    let fp = &key.fp;
    let p = members.len() as u32;
    // a root past the group's end is its last member, as the group clamps it
    let root = (fp.root as usize).min(members.len().saturating_sub(1));
    // the input length of member `me`
    let len = |me: usize| {
        let ctx = Ctx {
            me: me as u32,
            p,
            root: root as u32,
        };
        input_len(fp.op, ctx, fp.elements)
    };
    // member `me` of the group, world rank `r`
    let input = |me: usize, r: Rank| {
        Buffer::input(
            fp.dtype,
            fp.reduce,
            len(me),
            key.seed,
            r.0,
            key.iteration,
            key.index,
        )
    };
    match fp.op {
        // a point-to-point message is checked against its sender's data, not a group result
        OpKind::Barrier | OpKind::Send | OpKind::Recv => None,
        OpKind::Broadcast | OpKind::Scatter => members.get(root).map(|&r| input(root, r)),
        // every member's input in turn (all_to_all: each one's p pieces)
        OpKind::Allgather | OpKind::Gather | OpKind::AllToAll => {
            let mut out = Buffer::empty(fp.dtype);
            for (me, &r) in members.iter().enumerate() {
                let b = input(me, r);
                let n = b.len();
                out.extend_from(&b, 0..n);
            }
            Some(out)
        }
        OpKind::Allreduce | OpKind::Reduce | OpKind::ReduceScatter => {
            let mut it = members.iter().enumerate();
            let (me, &first) = it.next()?;
            let mut acc = input(me, first);
            // each other member's input reduced in as it is made, not built first
            for (me, &r) in it {
                acc.reduce_input(fp.reduce, len(me), key.seed, r.0, key.iteration, key.index);
            }
            Some(acc)
        }
    }
}

/// What member `me` (group index) should hold after the call, from the full reference.
pub fn expected_for(
    op: OpKind,
    full: &Buffer,
    me: u32,
    p: u32,
    root: u32,
) -> Option<Cow<'_, Buffer>> {
    let ctx = Ctx { me, p, root };
    match op {
        OpKind::Barrier => None,
        OpKind::Reduce | OpKind::Gather if ctx.me != ctx.root => None,
        OpKind::ReduceScatter | OpKind::Scatter => {
            let mut out = Buffer::empty(full.dtype());
            out.extend_from(full, block_elems(me, me + 1, p, full.len()));
            Some(Cow::Owned(out))
        }
        // piece `me` of every member's p pieces
        OpKind::AllToAll => {
            let piece = full.len() / (p as usize * p as usize).max(1);
            let mut out = Buffer::empty(full.dtype());
            for from in 0..p as usize {
                let at = (from * p as usize + me as usize) * piece;
                out.extend_from(full, at..at + piece);
            }
            Some(Cow::Owned(out))
        }
        _ => Some(Cow::Borrowed(full)),
    }
}

/// Whether `rank`'s `result` of a call equals what the reference `full` (of that call over
/// `members`) says that rank must hold.
pub fn matches_reference(
    fp: &Fingerprint,
    full: Option<&Buffer>,
    members: &Members,
    rank: Rank,
    result: &Buffer,
) -> bool {
    let Some(me) = members.index(rank) else {
        return false;
    };
    let p = members.len() as u32;
    let root = fp.root.min(p.saturating_sub(1));
    match full.and_then(|f| expected_for(fp.op, f, me, p, root)) {
        None => result.is_empty(),
        Some(e) => e.approx_eq(result),
    }
}

/// The reference results of the calls checked last, so that the p ranks of one call compute it
/// once (few calls are in flight at once).
#[derive(Default)]
pub struct References {
    /// By call and members, most recent last.
    recent: Vec<(CallKey, Arc<Members>, Option<Buffer>)>,
}

impl References {
    /// How many calls are remembered.
    const KEPT: usize = 8;

    /// Whether `rank`'s `result` of the call `key` over `members` is right.
    pub fn check(
        &mut self,
        key: CallKey,
        members: &Arc<Members>,
        rank: Rank,
        result: &Buffer,
    ) -> bool {
        if members.index(rank).is_none() {
            return false;
        }
        let found = self
            .recent
            .iter()
            .position(|(k, m, _)| *k == key && (Arc::ptr_eq(m, members) || **m == **members));
        let at = match found {
            Some(at) => at,
            None => {
                let b = full_reference(&key, &members.ranks);
                if self.recent.len() >= Self::KEPT {
                    self.recent.remove(0);
                }
                self.recent.push((key.clone(), members.clone(), b));
                self.recent.len() - 1
            }
        };
        let full = self.recent[at].2.as_ref();
        matches_reference(&key.fp, full, members, rank, result)
    }
}

/// A collective's real inputs by group index, and how many members are still to be checked.
type MemberInputs = (Vec<Option<Buffer>>, usize);

/// The real inputs of an application's calls (`ringside torchrun`), which its results are
/// checked against: each member's input of each collective, and each send's data, kept until
/// every member has been checked.
#[derive(Default)]
pub struct RealInputs {
    groups: std::collections::BTreeMap<crate::proto::GroupId, Arc<Members>>,
    /// Inputs handed in with a call, until the call is issued: by (rank, call index).
    issued: std::collections::BTreeMap<(u32, u32), Buffer>,
    /// Each collective's inputs by member, and how many members have not been checked yet.
    calls: std::collections::BTreeMap<(u32, u32, u64), MemberInputs>,
    /// Each send's data by (group, from, to, order).
    sends: std::collections::BTreeMap<(u32, u32, u32, u64), Buffer>,
}

impl RealInputs {
    pub fn add_group(&mut self, id: crate::proto::GroupId, members: Arc<Members>) {
        self.groups.entry(id).or_insert(members);
    }

    /// `rank` handed in call `index` with `input`.
    pub fn issued(&mut self, rank: u32, index: u32, input: Buffer) {
        self.issued.insert((rank, index), input);
    }

    fn members(&self, fp: &Fingerprint, world: &Arc<Members>) -> Arc<Members> {
        self.groups
            .get(&fp.group)
            .cloned()
            .unwrap_or_else(|| world.clone())
    }

    /// `rank` issued its call `index` as `fp` (a send or recv with `peer`).
    pub fn called(&mut self, rank: u32, index: u32, fp: &Fingerprint, peer: Option<Rank>) {
        let Some(input) = self.issued.remove(&(rank, index)) else {
            return;
        };
        match (fp.op, peer) {
            (OpKind::Send, Some(to)) => {
                self.sends.insert((fp.group.0, rank, to.0, fp.seq.0), input);
            }
            (OpKind::Recv, _) => {}
            _ => {
                let key = (fp.group.0, fp.generation.0, fp.seq.0);
                let p = self.groups.get(&fp.group).map_or(usize::MAX, |m| m.len());
                let entry = self.calls.entry(key).or_insert_with(|| (Vec::new(), p));
                let me = self
                    .groups
                    .get(&fp.group)
                    .and_then(|m| m.index(Rank(rank)))
                    .unwrap_or(rank) as usize;
                if entry.0.len() <= me {
                    entry.0.resize(me + 1, None);
                }
                entry.0[me] = Some(input);
            }
        }
    }

    /// Whether `rank`'s `result` of collective `fp` is what its members' real inputs give.
    pub fn check(
        &mut self,
        fp: &Fingerprint,
        world: &Arc<Members>,
        rank: Rank,
        result: &Buffer,
    ) -> bool {
        let members = self.members(fp, world);
        let key = (fp.group.0, fp.generation.0, fp.seq.0);
        let Some((inputs, left)) = self.calls.get_mut(&key) else {
            return fp.op == OpKind::Barrier && result.is_empty();
        };
        let full = real_reference(fp, inputs, members.len());
        let ok = matches_reference(fp, full.as_ref(), &members, rank, result);
        *left = left.saturating_sub(1).min(members.len().saturating_sub(1));
        if *left == 0 {
            self.calls.remove(&key);
        }
        ok
    }

    /// Whether `to`'s `result` of recv `fp` from `from` is the data `from` sent.
    pub fn check_message(&self, fp: &Fingerprint, from: Rank, to: Rank, result: &Buffer) -> bool {
        match fp.op {
            OpKind::Recv => self
                .sends
                .get(&(fp.group.0, from.0, to.0, fp.seq.0))
                .is_some_and(|sent| sent.same_bits(result)),
            _ => result.is_empty(),
        }
    }
}

/// The full reference of collective `fp` from its `p` members' real inputs (None when one the
/// result depends on is missing).
fn real_reference(fp: &Fingerprint, inputs: &[Option<Buffer>], p: usize) -> Option<Buffer> {
    let root = (fp.root as usize).min(p.saturating_sub(1));
    let input = |me: usize| inputs.get(me).and_then(Option::as_ref);
    match fp.op {
        OpKind::Barrier | OpKind::Send | OpKind::Recv => None,
        OpKind::Broadcast | OpKind::Scatter => input(root).cloned(),
        OpKind::Allgather | OpKind::Gather | OpKind::AllToAll => {
            let mut out = Buffer::empty(fp.dtype);
            for me in 0..p {
                let b = input(me)?;
                out.extend_from(b, 0..b.len());
            }
            Some(out)
        }
        OpKind::Allreduce | OpKind::Reduce | OpKind::ReduceScatter => {
            let mut acc = input(0)?.clone();
            for me in 1..p {
                let b = input(me)?;
                if !acc.reduce_from(0, b, 0, b.len(), fp.reduce) {
                    return None;
                }
            }
            Some(acc)
        }
    }
}
