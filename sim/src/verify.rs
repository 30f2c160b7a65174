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
