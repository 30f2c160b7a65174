//! Collective algorithms as schedules, and the executor that runs any schedule.
//!
//! An algorithm is a [`Schedule`]: for a rank (`me` of `p` in its group) and a step, it lists the
//! transfers of that step — which blocks of the working buffer go to which peer, and which blocks
//! arrive from which peer, to be reduced into or copied over the local buffer. Steps are computed
//! on demand, so a rank's memory does not grow with p.
//!
//! The [`Collective`] executor runs a schedule as a state machine: at each step it sends the
//! chunks the plan names (with the data the buffer holds when the step starts), then waits for
//! every chunk the plan expects; chunks that arrive early (for a later step) are kept. Timing
//! therefore emerges from dependencies, not from a global clock: a binomial tree's root receives
//! its k-th child only when that child has finished its own subtree.
//!
//! The working buffer of an op has `len` elements split into `nblocks` blocks; block `b` covers
//! elements `[b*len/nb, (b+1)*len/nb)` and modeled bytes `[b*n/nb, (b+1)*n/nb)`, so chunk sizes
//! are exact even when neither divides evenly.
//!
//! Steps are global rounds: a chunk sent in step k is received in step k of its destination,
//! so every rank of a call has the same number of steps, and a rank with nothing to do in a
//! round has an empty step (which passes at once). Within a step a rank sends to and receives
//! from each peer at most once. [`plans_agree`] holds the schedules of a call to this contract
//! without running them. Whenever several ranks end with the same result, either one
//! rank reduced it and the others copied it, or partners combined the same two operands (which
//! float reductions do bit-identically), so all of them hold the same bits.
//!
//! The algorithms, and their costs for a = latency, b = 1/bandwidth, n bytes, p a power of two:
//!
//! | op | algorithm | module | cost |
//! |---|---|---|---|
//! | allreduce | `ring` | [`ring`] | 2(p-1) a + 2n(p-1)/p b |
//! | allreduce | `recursive_doubling` | [`recursive_doubling`] | lg p a + n lg p b |
//! | allreduce | `rabenseifner` | [`rabenseifner`] | 2 lg p a + 2n(p-1)/p b |
//! | allreduce | `tree` | [`tree`] | 2 lg p (a + n b) |
//! | allreduce | `direct` | [`direct`] | 2a + 2n(p-1)/p b |
//! | allreduce | `hierarchical` | [`hierarchical`] | 2(l-1) a_l + 2(l-1)/l n b_l + 2(H-1) a + 2(H-1)/p n b |
//! | broadcast | `binomial` | [`binomial`] | lg p (a + n b) |
//! | broadcast | `scatter_allgather` | [`scatter_allgather`] | (lg p + p - 1) a + 2n(p-1)/p b |
//! | broadcast | `direct` | [`direct`] | a + (p-1) n b |
//! | reduce | `binomial` | [`binomial`] | lg p (a + n b) |
//! | reduce | `direct` | [`direct`] | a + (p-1) n b |
//! | allgather | `ring` | [`ring`] | (p-1) a + n(p-1)/p b |
//! | allgather | `recursive_doubling` | [`recursive_doubling`] | lg p a + n(p-1)/p b |
//! | allgather | `direct` | [`direct`] | a + n(p-1)/p b |
//! | reduce_scatter | `ring` | [`ring`] | (p-1) a + n(p-1)/p b |
//! | reduce_scatter | `recursive_halving` | [`recursive_halving`] | lg p a + n(p-1)/p b |
//! | reduce_scatter | `direct` | [`direct`] | a + n(p-1)/p b |
//! | barrier | `dissemination` | [`dissemination`] | ceil(lg p) a |
//! | barrier | `tree` | [`tree`] | 2 ceil(lg p) a |
//! | all_to_all | `pairwise` | [`all_to_all`] | (p-1)(a + n/p b) |
//! | all_to_all | `direct` | [`direct`] | a + n(p-1)/p b |
//! | all_to_all | `bruck` | [`all_to_all`] | lg p (a + n/2 b) |
//! | gather | `binomial` | [`gather`] | lg p a + n(p-1)/p b |
//! | gather | `direct` | [`direct`] | a + n(p-1)/p b |
//! | scatter | `binomial` | [`gather`] | lg p a + n(p-1)/p b |
//! | scatter | `direct` | [`direct`] | a + n(p-1)/p b |
//!
//! For all_to_all n is one rank's send buffer (n/p to each peer); for gather and scatter the
//! root's whole buffer (n/p per rank), as for allgather.
//!
//! Every algorithm runs on any p >= 1 (p = 1 takes no steps). Recursive doubling and halving
//! fold a non-power of two onto one ([`fold`]); trees are clipped at p, which makes their cost
//! an upper bound there. Rooted ops work on ranks relative to the root. `hierarchical` runs on
//! H hosts of l ranks each (a_l, b_l: the intra-host link); [`schedule_with`] is told how many
//! consecutive members of the group share a host, and [`schedule`] assumes one per host.

pub mod all_to_all;
mod any;
pub mod binomial;
mod blocks;
mod contract;
pub mod custom;
pub mod direct;
pub mod dissemination;
pub mod fold;
pub mod gather;
pub mod hierarchical;
mod members;
pub mod rabenseifner;
pub mod recursive_doubling;
pub mod recursive_halving;
pub mod ring;
pub mod scatter_allgather;
pub mod tree;

pub use any::AnySchedule;
pub use blocks::{block_bytes, block_elems, Blocks};
pub use contract::{plans_agree, PlanMismatch};
pub use members::Members;

use super::data::Buffer;
use super::event::{Outbox, ProtoEvent, StepEvent, Unexpected, WaitList};
use super::msg::{CollMsg, Fingerprint, Msg};
use super::wait::WaitState;
use crate::time::Nanos;
use crate::vocab::{Algorithm, OpKind};
use std::ops::Range;
use std::sync::Arc;

/// Above this many receives in a step, chunks find their receive through an index by peer
/// instead of a scan (a direct algorithm receives from every other rank at once).
const FEW_PEERS: usize = 8;

/// What a received chunk does to the local buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Combine with the local values using the op's reduction.
    Reduce,
    /// Overwrite the local values.
    Copy,
}

/// One chunk to send or receive in a step: blocks `plan.ranges[ranges]` with `peer`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub peer: u32,
    pub ranges: Range<usize>,
    pub action: Action,
}

/// The transfers of one step for one rank; reused across steps, so that after the first steps
/// planning a step allocates nothing (and a push is a bounds check and a store).
#[derive(Clone, Debug, Default)]
pub struct StepPlan {
    pub sends: Vec<Transfer>,
    pub recvs: Vec<Transfer>,
    /// Block ranges `[lo, hi)` referenced by the transfers.
    pub ranges: Vec<(u32, u32)>,
}

impl StepPlan {
    #[inline]
    pub fn clear(&mut self) {
        self.sends.clear();
        self.recvs.clear();
        self.ranges.clear();
    }

    #[inline]
    fn push_ranges(&mut self, blocks: &[(u32, u32)]) -> Range<usize> {
        let start = self.ranges.len();
        for &(lo, hi) in blocks {
            if lo < hi {
                self.ranges.push((lo, hi));
            }
        }
        start..self.ranges.len()
    }

    /// Send blocks `[lo, hi)` (several ranges allowed, in order) to `peer`.
    #[inline]
    pub fn send(&mut self, peer: u32, blocks: &[(u32, u32)]) {
        let ranges = self.push_ranges(blocks);
        self.sends.push(Transfer {
            peer,
            ranges,
            action: Action::Copy,
        });
    }

    /// Receive blocks from `peer` and apply `action` to them.
    #[inline]
    pub fn recv(&mut self, peer: u32, blocks: &[(u32, u32)], action: Action) {
        let ranges = self.push_ranges(blocks);
        self.recvs.push(Transfer {
            peer,
            ranges,
            action,
        });
    }
}

/// A receive of one run of blocks from one peer, resolved to elements and bytes. A step whose
/// only receive is one (most steps of most algorithms) keeps it from the start of the step, so
/// that its chunk is applied without going back to the plan.
#[derive(Clone, Copy, Debug)]
struct OneRecv {
    peer: u32,
    at: usize,
    len: usize,
    bytes: u64,
    action: Action,
}

impl OneRecv {
    #[inline]
    fn new(peer: u32, elems: Range<usize>, bytes: u64, action: Action) -> OneRecv {
        OneRecv {
            peer,
            at: elems.start,
            len: elems.len(),
            bytes,
            action,
        }
    }
}

/// A step that sends one block to one peer and receives one block from one peer: every step
/// of the ring algorithms. A schedule that can say so for a step ([`Schedule::pair`]) spares the
/// executor its [`StepPlan`]: this runs for every message of a ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairStep {
    pub send_to: u32,
    pub send_block: u32,
    pub recv_from: u32,
    pub recv_block: u32,
    pub action: Action,
}

impl PairStep {
    /// The same step as a plan.
    #[inline]
    pub fn plan(self, plan: &mut StepPlan) {
        plan.send(self.send_to, &[(self.send_block, self.send_block + 1)]);
        plan.recv(
            self.recv_from,
            &[(self.recv_block, self.recv_block + 1)],
            self.action,
        );
    }
}

/// An algorithm's plan for one rank of one call.
pub trait Schedule: Send + Sync {
    /// Number of steps (may be 0, e.g. for p = 1).
    fn steps(&self) -> u32;
    /// Number of blocks the working buffer is split into.
    fn nblocks(&self) -> u32;
    /// The modeled bytes of the whole working buffer, for an op of `bytes`: more than `bytes`
    /// when the buffer holds more than the op's data (all_to_all's separate receive buffer).
    fn modeled(&self, bytes: u64) -> u64 {
        bytes
    }
    /// Fills `plan` (already cleared) with the transfers of `step`.
    fn plan(&self, step: u32, plan: &mut StepPlan);
    /// `step` as a [`PairStep`], when it is one and the schedule knows it cheaply; the executor
    /// then does not ask for [`Schedule::plan`]. Must agree with `plan`.
    fn pair(&self, _step: u32) -> Option<PairStep> {
        None
    }
}

/// Who runs a collective: `me` is this rank's index in the group of `p`; `root` an index too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ctx {
    pub me: u32,
    pub p: u32,
    pub root: u32,
}

/// Why a schedule cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{op} has no algorithm `{algorithm}`")]
pub struct UnsupportedAlgorithm {
    pub op: OpKind,
    pub algorithm: Algorithm,
}

/// The schedule of `op` with `algorithm` for the rank described by `ctx`, every member on its
/// own host.
pub fn schedule(
    op: OpKind,
    algorithm: Algorithm,
    ctx: Ctx,
) -> Result<AnySchedule, UnsupportedAlgorithm> {
    schedule_with(op, algorithm, ctx, 1)
}

/// [`schedule`] for a group whose members sit `per_host` to a host, in order (see
/// [`hierarchical::local_size`]); only `hierarchical` looks at it.
pub fn schedule_with(
    op: OpKind,
    algorithm: Algorithm,
    ctx: Ctx,
    per_host: u32,
) -> Result<AnySchedule, UnsupportedAlgorithm> {
    use Algorithm as A;
    use OpKind as O;
    let sched: AnySchedule = match (op, algorithm) {
        (O::Allreduce, A::Ring) => ring::RingAllreduce::new(ctx).into(),
        (O::Allreduce, A::RecursiveDoubling) => {
            recursive_doubling::RecursiveDoublingAllreduce::new(ctx).into()
        }
        (O::Allreduce, A::Rabenseifner) => rabenseifner::Rabenseifner::new(ctx).into(),
        (O::Allreduce, A::Tree) => tree::Tree::allreduce(ctx).into(),
        (O::Allreduce, A::Hierarchical) => hierarchical::Hierarchical::new(ctx, per_host).into(),
        (O::Broadcast, A::Binomial) => binomial::BinomialBroadcast::new(ctx).into(),
        (O::Broadcast, A::ScatterAllgather) => scatter_allgather::ScatterAllgather::new(ctx).into(),
        (O::Reduce, A::Binomial) => binomial::BinomialReduce::new(ctx).into(),
        (O::Allgather, A::Ring) => ring::RingAllgather::new(ctx).into(),
        (O::Allgather, A::RecursiveDoubling) => {
            recursive_doubling::RecursiveDoublingAllgather::new(ctx).into()
        }
        (O::ReduceScatter, A::Ring) => ring::RingReduceScatter::new(ctx).into(),
        (O::ReduceScatter, A::RecursiveHalving) => {
            recursive_halving::RecursiveHalvingReduceScatter::new(ctx).into()
        }
        (O::Barrier, A::Dissemination) => dissemination::Dissemination::new(ctx).into(),
        (O::Barrier, A::Tree) => tree::Tree::barrier(ctx).into(),
        (O::AllToAll, A::Pairwise) => all_to_all::Pairwise::new(ctx).into(),
        (O::AllToAll, A::Bruck) => all_to_all::Bruck::new(ctx).into(),
        (O::Gather, A::Binomial) => gather::BinomialGather::new(ctx).into(),
        (O::Scatter, A::Binomial) => gather::BinomialScatter::new(ctx).into(),
        (_, A::Custom(c)) if c.factory().ops().contains(&op) => {
            let g = custom::GroupCtx { op, ctx, per_host };
            AnySchedule::Other(c.factory().build(&g))
        }
        (_, A::Direct) => match direct::Direct::new(op, ctx) {
            Some(d) => d.into(),
            None => return Err(UnsupportedAlgorithm { op, algorithm }),
        },
        _ => return Err(UnsupportedAlgorithm { op, algorithm }),
    };
    Ok(sched)
}

/// Whether `schedule` knows `(op, algorithm)`.
pub fn supported(op: OpKind, algorithm: Algorithm) -> bool {
    schedule(
        op,
        algorithm,
        Ctx {
            me: 0,
            p: 1,
            root: 0,
        },
    )
    .is_ok()
}

/// Length in elements of rank `ctx.me`'s input to `op` with `elements` per piece: one piece
/// per peer for all_to_all and at the root of a scatter, one piece otherwise.
pub fn input_len(op: OpKind, ctx: Ctx, elements: u32) -> usize {
    let (e, p) = (elements as usize, ctx.p as usize);
    match op {
        OpKind::AllToAll => e * p,
        OpKind::Scatter if ctx.me == ctx.root => e * p,
        _ => e,
    }
}

/// What a call to the executor led to.
#[derive(Debug, PartialEq, Eq)]
pub enum Progress {
    /// Still waiting; `stepped` says whether the step changed during this call.
    Waiting { stepped: bool },
    /// Every step is done; the result can be taken.
    Done,
    /// The chunk received was not one the schedule expects: it was dropped, and told as a
    /// [`ProtoEvent::Unexpected`].
    Rejected,
}

/// One running collective on one rank.
/// Laid out in declaration order, the fields a chunk touches first: with thousands of ranks
/// each rank's state is cold when its next chunk arrives, and every cache line counts.
#[repr(C)]
pub struct Collective {
    pub fp: Fingerprint,
    step: u32,
    steps: u32,
    missing: usize,
    /// The step's only receive, when it is a single run of blocks (then `got` is unused and
    /// `missing` says whether it arrived).
    one: Option<OneRecv>,
    buf: Buffer,
    /// The last chunk applied, kept to carry the next chunk sent: a ring step receives one
    /// message and sends one, so a running call allocates no messages.
    spare: Option<Box<CollMsg>>,
    pub step_since_ns: Nanos,
    blocks: Blocks,
    members: Arc<Members>,
    sched: AnySchedule,
    early: Vec<(u32, Box<CollMsg>)>,
    /// `plan`, `got` and `by_peer` describe the step (its transfers came from
    /// [`Schedule::plan`]); a [`PairStep`] leaves them empty and untouched.
    planned: bool,
    plan: StepPlan,
    /// Which of `plan.recvs` have arrived.
    got: Vec<bool>,
    /// Index in `plan.recvs` of each group member's receive (`u32::MAX`: none), when a step
    /// receives from many peers; empty otherwise.
    by_peer: Vec<u32>,
    ctx: Ctx,
    pub started_ns: Nanos,
}

impl Collective {
    /// Prepares a call; `buf` is the working buffer with this rank's input already placed.
    pub fn new(
        fp: Fingerprint,
        members: Arc<Members>,
        ctx: Ctx,
        sched: impl Into<AnySchedule>,
        buf: Buffer,
        now: Nanos,
    ) -> Collective {
        let sched = sched.into();
        let steps = sched.steps();
        let blocks = Blocks::new(sched.nblocks(), buf.len(), sched.modeled(fp.bytes));
        Collective {
            fp,
            members,
            ctx,
            sched,
            blocks,
            buf,
            step: 0,
            steps,
            planned: false,
            plan: StepPlan::default(),
            one: None,
            got: Vec::new(),
            by_peer: Vec::new(),
            missing: 0,
            early: Vec::new(),
            spare: None,
            started_ns: now,
            step_since_ns: now,
        }
    }

    pub fn step(&self) -> u32 {
        self.step
    }
    pub fn steps(&self) -> u32 {
        self.steps
    }
    pub fn ctx(&self) -> Ctx {
        self.ctx
    }
    pub fn members(&self) -> &Arc<Members> {
        &self.members
    }

    /// Starts step 0 and runs as far as the messages at hand allow.
    pub fn start(&mut self, now: Nanos, out: &mut Outbox) -> Progress {
        self.enter_step(now, out);
        self.advance(now, out, true)
    }

    /// A chunk of this call from group member `from`. A chunk the schedule does not expect
    /// (from a peer the step it names does not receive from, a second one from a peer, one
    /// that does not fit the blocks expected, or one of a step the call does not have or has
    /// left) is dropped, and told as a [`ProtoEvent::Unexpected`].
    #[inline(always)]
    pub fn on_chunk(
        &mut self,
        now: Nanos,
        from: u32,
        msg: Box<CollMsg>,
        out: &mut Outbox,
    ) -> Progress {
        if msg.step < self.step || msg.step >= self.steps {
            self.unexpected(from, &msg, out);
            return Progress::Rejected;
        }
        if msg.step > self.step {
            self.early.push((from, msg));
            return Progress::Waiting { stepped: false };
        }
        match self.apply(from, &msg.data, out) {
            Some(true) => {
                self.keep(msg);
                self.advance(now, out, false)
            }
            Some(false) => {
                self.keep(msg);
                Progress::Waiting { stepped: false }
            }
            None => {
                self.unexpected(from, &msg, out);
                Progress::Rejected
            }
        }
    }

    /// Tells the chunk `msg` from group member `from`, which the step it names does not take.
    #[cold]
    #[inline(never)]
    fn unexpected(&self, from: u32, msg: &CollMsg, out: &mut Outbox) {
        let why = if msg.step >= self.steps {
            Unexpected::NoSuchStep
        } else if msg.step < self.step {
            Unexpected::StepOver
        } else if self.expects_from(from) {
            Unexpected::DoesNotFit
        } else if self.expected_from(from) {
            Unexpected::Twice
        } else {
            Unexpected::NotFromPeer
        };
        out.event(ProtoEvent::Unexpected {
            group: self.fp.group,
            generation: self.fp.generation,
            seq: self.fp.seq,
            op: self.fp.op,
            algorithm: self.fp.algorithm,
            step: msg.step,
            steps: self.steps,
            from: self.members.ranks[from as usize],
            elements: msg.data.len() as u64,
            why,
        });
    }

    /// Tells and drops the chunks of the step being left that arrived early and were not
    /// taken: the step got what it expects without them.
    #[cold]
    #[inline(never)]
    fn refuse_left_over(&mut self, out: &mut Outbox) {
        let step = self.step;
        let (over, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.early)
            .into_iter()
            .partition(|(_, m)| m.step == step);
        self.early = kept;
        for (from, msg) in over {
            self.unexpected(from, &msg, out);
        }
    }

    /// Whether the current step still expects a chunk from group member `from`.
    fn expects_from(&self, from: u32) -> bool {
        match self.one {
            Some(one) => one.peer == from && self.missing > 0,
            None => self.missing_from(from).is_some(),
        }
    }

    /// Whether the current step receives from group member `from` at all.
    fn expected_from(&self, from: u32) -> bool {
        match self.one {
            Some(one) => one.peer == from,
            None => self.plan.recvs.iter().any(|t| t.peer == from),
        }
    }

    /// The peers whose chunks of the current step are still missing (world ranks). A step of
    /// one peer, the usual one, is told inline (a recording driver asks at every chunk).
    #[inline(always)]
    pub fn waiting_for(&self) -> WaitList {
        if let Some(one) = self.one {
            let peer = self.members.ranks[one.peer as usize];
            let len = usize::from(self.missing > 0);
            return WaitList::from_buf_and_len([peer; 4], len);
        }
        self.waiting_for_planned()
    }

    #[inline(never)]
    fn waiting_for_planned(&self) -> WaitList {
        self.plan
            .recvs
            .iter()
            .zip(&self.got)
            .filter(|(_, got)| !**got)
            .map(|(t, _)| self.members.ranks[t.peer as usize])
            .collect()
    }

    pub fn wait_state(&self) -> WaitState {
        WaitState {
            group: self.fp.group,
            generation: self.fp.generation,
            seq: self.fp.seq,
            op: self.fp.op,
            algorithm: self.fp.algorithm,
            step: self.step,
            steps: self.steps,
            waiting_for: self.waiting_for().into_vec(),
            since_ns: self.step_since_ns,
            peer: None,
        }
    }

    /// The event of the step the collective is in (inlined, so that its wait list is built
    /// where it is sent off rather than copied there).
    #[inline]
    pub fn step_event(&self) -> StepEvent {
        StepEvent {
            group: self.fp.group,
            generation: self.fp.generation,
            seq: self.fp.seq,
            step: self.step,
            steps: self.steps,
            waiting_for: self.waiting_for(),
        }
    }

    /// The finished working buffer.
    pub fn into_buffer(self) -> Buffer {
        self.buf
    }

    /// Keeps an applied chunk's message to carry the next chunk sent (one is enough).
    #[inline(always)]
    fn keep(&mut self, msg: Box<CollMsg>) {
        if self.spare.is_none() {
            self.spare = Some(msg);
        }
    }

    /// A message of the current step to fill: the spare one when there is one.
    #[inline]
    fn chunk_msg(&mut self) -> Box<CollMsg> {
        match self.spare.take() {
            Some(mut m) => {
                m.fp = self.fp;
                m.step = self.step;
                m
            }
            None => Box::new(CollMsg {
                fp: self.fp,
                step: self.step,
                data: Buffer::empty(self.buf.dtype()),
            }),
        }
    }

    #[inline]
    fn enter_step(&mut self, now: Nanos, out: &mut Outbox) {
        self.step_since_ns = now;
        if self.planned {
            self.plan.clear();
            self.got.clear();
            self.by_peer.clear();
            self.planned = false;
        }
        self.one = None;
        self.missing = 0;
        if self.step >= self.steps {
            return;
        }
        if let Some(pair) = self.sched.pair(self.step) {
            return self.enter_pair(pair, out);
        }
        self.planned = true;
        self.sched.plan(self.step, &mut self.plan);
        let blocks = self.blocks;
        for k in 0..self.plan.sends.len() {
            let mut msg = self.chunk_msg();
            let t = &self.plan.sends[k];
            let ranges = &self.plan.ranges[t.ranges.clone()];
            let bytes = match ranges {
                // one run of blocks, the usual case: one exact copy
                &[(lo, hi)] => {
                    msg.data.assign_from(&self.buf, blocks.elems(lo, hi));
                    blocks.bytes(lo, hi)
                }
                _ => {
                    msg.data.clear_as(self.buf.dtype());
                    let mut bytes = 0;
                    for &(lo, hi) in ranges {
                        msg.data.extend_from(&self.buf, blocks.elems(lo, hi));
                        bytes += blocks.bytes(lo, hi);
                    }
                    bytes
                }
            };
            out.send(self.members.ranks[t.peer as usize], Msg::Coll(msg), bytes);
        }
        self.missing = self.plan.recvs.len();
        self.one = match &self.plan.recvs[..] {
            [t] => match self.plan.ranges[t.ranges.clone()] {
                [(lo, hi)] => {
                    let r = blocks.elems(lo, hi);
                    Some(OneRecv::new(t.peer, r, blocks.bytes(lo, hi), t.action))
                }
                _ => None,
            },
            _ => None,
        };
        if self.one.is_some() {
            return;
        }
        self.got.resize(self.plan.recvs.len(), false);
        if self.plan.recvs.len() > FEW_PEERS {
            self.by_peer.resize(self.members.len(), u32::MAX);
            // in reverse, so that a peer named twice maps to its first receive
            for (i, t) in self.plan.recvs.iter().enumerate().rev() {
                if let Some(slot) = self.by_peer.get_mut(t.peer as usize) {
                    *slot = i as u32;
                }
            }
        }
    }

    /// Enters a step of one send and one receive (see [`PairStep`]), without a plan.
    #[inline]
    fn enter_pair(&mut self, pair: PairStep, out: &mut Outbox) {
        let mut msg = self.chunk_msg();
        let (elems, bytes) = self.blocks.one(pair.send_block);
        msg.data.assign_from(&self.buf, elems);
        out.send(
            self.members.ranks[pair.send_to as usize],
            Msg::Coll(msg),
            bytes,
        );
        let (r, bytes) = self.blocks.one(pair.recv_block);
        self.one = Some(OneRecv::new(pair.recv_from, r, bytes, pair.action));
        self.missing = 1;
    }

    /// Where the chunk of the step's only receive will be reduced or copied into: the address
    /// of its first element (see [`crate::process::RankProcess::landing`]).
    #[inline(always)]
    pub fn landing(&self) -> Option<*const u8> {
        let one = self.one.as_ref()?;
        Some(self.buf.element_addr(one.at))
    }

    /// The first receive of the current step from group member `from` still missing.
    fn missing_from(&self, from: u32) -> Option<usize> {
        if let Some(&i) = self.by_peer.get(from as usize) {
            let i = i as usize;
            if i < self.got.len() && !self.got[i] {
                return Some(i);
            }
        }
        (0..self.plan.recvs.len()).find(|&i| self.plan.recvs[i].peer == from && !self.got[i])
    }

    /// Applies a chunk of the current step: Some(all of the step arrived?), or None if the
    /// chunk does not fit what the plan expects from that peer.
    #[inline(always)]
    fn apply(&mut self, from: u32, data: &Buffer, out: &mut Outbox) -> Option<bool> {
        if let Some(one) = self.one {
            if one.peer != from || self.missing == 0 || !self.take_run(one, data, out) {
                return None;
            }
            self.missing = 0;
            return Some(true);
        }
        let i = self.missing_from(from)?;
        let blocks = self.blocks;
        let t = &self.plan.recvs[i];
        let ranges = &self.plan.ranges[t.ranges.clone()];
        if let &[(lo, hi)] = ranges {
            let r = blocks.elems(lo, hi);
            let run = OneRecv::new(t.peer, r, blocks.bytes(lo, hi), t.action);
            if !self.take_run(run, data, out) {
                return None;
            }
            self.got[i] = true;
            self.missing -= 1;
            return Some(self.missing == 0);
        }
        let expected: usize = ranges
            .iter()
            .map(|&(lo, hi)| blocks.elems(lo, hi).len())
            .sum();
        if expected != data.len() || data.dtype() != self.buf.dtype() {
            return None;
        }
        let mut off = 0;
        let mut bytes = 0;
        for &(lo, hi) in ranges {
            let r = blocks.elems(lo, hi);
            let ok = match t.action {
                Action::Copy => self.buf.copy_from(r.start, data, off, r.len()),
                Action::Reduce => {
                    bytes += blocks.bytes(lo, hi);
                    self.buf
                        .reduce_from(r.start, data, off, r.len(), self.fp.reduce)
                }
            };
            if !ok {
                return None;
            }
            off += r.len();
        }
        if bytes > 0 {
            out.work(bytes);
        }
        self.got[i] = true;
        self.missing -= 1;
        Some(self.missing == 0)
    }

    /// Applies `data`, a chunk of exactly one run of blocks, as `run` says; false (and nothing
    /// written, whatever the mismatch: length or dtype) when it does not fit.
    #[inline(always)]
    fn take_run(&mut self, run: OneRecv, data: &Buffer, out: &mut Outbox) -> bool {
        if run.len != data.len() {
            return false;
        }
        let ok = match run.action {
            Action::Copy => self.buf.copy_from(run.at, data, 0, run.len),
            Action::Reduce => self
                .buf
                .reduce_from(run.at, data, 0, run.len, self.fp.reduce),
        };
        if ok && run.action == Action::Reduce && run.bytes > 0 {
            out.work(run.bytes);
        }
        ok
    }

    /// Moves through every step whose chunks have all arrived.
    #[inline(always)]
    fn advance(&mut self, now: Nanos, out: &mut Outbox, mut stepped: bool) -> Progress {
        loop {
            if self.step >= self.steps {
                return Progress::Done;
            }
            if self.missing > 0 {
                let step = self.step;
                let mut k = 0;
                while k < self.early.len() && self.missing > 0 {
                    if self.early[k].1.step == step {
                        let (from, msg) = self.early.swap_remove(k);
                        if self.apply(from, &msg.data, out).is_none() {
                            self.unexpected(from, &msg, out);
                            continue;
                        }
                        self.keep(msg);
                    } else {
                        k += 1;
                    }
                }
                if self.missing > 0 {
                    return Progress::Waiting { stepped };
                }
            }
            if !self.early.is_empty() {
                self.refuse_left_over(out);
            }
            self.step += 1;
            stepped = true;
            self.enter_step(now, out);
        }
    }
}

/// The working buffer of `op` run with `algorithm` for this rank, with `input` (of
/// [`input_len`] values) placed: allgather and gather put it in block `me` of p; broadcast and
/// scatter keep it only at the root; all_to_all keeps a receive buffer beside it, holding
/// already the block this rank sends itself (or, for `bruck`, rotates it).
pub fn prepare(op: OpKind, algorithm: Algorithm, ctx: Ctx, elements: u32, input: Buffer) -> Buffer {
    let (e, p) = (elements as usize, ctx.p as usize);
    let me = ctx.me as usize;
    match op {
        OpKind::Allgather | OpKind::Gather => {
            let mut buf = Buffer::zeros(input.dtype(), e * p);
            buf.copy_from(me * e, &input, 0, input.len().min(e));
            buf
        }
        OpKind::Broadcast if ctx.me != ctx.root => Buffer::zeros(input.dtype(), input.len()),
        OpKind::Scatter if ctx.me != ctx.root => Buffer::zeros(input.dtype(), e * p),
        OpKind::Barrier => Buffer::empty(input.dtype()),
        OpKind::AllToAll if algorithm == Algorithm::Bruck => {
            let mut buf = Buffer::zeros(input.dtype(), e * p);
            for block in 0..ctx.p {
                let at = all_to_all::bruck_position(ctx.me, ctx.p, block, false) as usize;
                buf.copy_from(at * e, &input, block as usize * e, e);
            }
            buf
        }
        OpKind::AllToAll => {
            let mut buf = Buffer::zeros(input.dtype(), 2 * e * p);
            buf.copy_from(0, &input, 0, input.len().min(e * p));
            buf.copy_from((p + me) * e, &input, me * e, e);
            buf
        }
        _ => input,
    }
}

/// The result this rank holds when `op` completes: the whole buffer, the root's reduction or
/// gathered buffer, this rank's block of a reduce-scatter or scatter, the receive buffer of an
/// all_to_all (block i from rank i), or nothing (reduce and gather on a non-root, barrier).
pub fn extract(op: OpKind, algorithm: Algorithm, ctx: Ctx, buf: Buffer) -> Option<Buffer> {
    let own_block = |buf: &Buffer| {
        let r = block_elems(ctx.me, ctx.me + 1, ctx.p, buf.len());
        let mut out = Buffer::empty(buf.dtype());
        out.extend_from(buf, r);
        out
    };
    match op {
        OpKind::Reduce | OpKind::Gather if ctx.me != ctx.root => None,
        OpKind::Barrier => None,
        OpKind::ReduceScatter | OpKind::Scatter => Some(own_block(&buf)),
        OpKind::AllToAll if algorithm == Algorithm::Bruck => {
            let e = buf.len() / ctx.p.max(1) as usize;
            let mut out = Buffer::empty(buf.dtype());
            for from in 0..ctx.p {
                let at = all_to_all::bruck_position(ctx.me, ctx.p, from, true) as usize * e;
                out.extend_from(&buf, at..at + e);
            }
            Some(out)
        }
        OpKind::AllToAll => {
            let half = buf.len() / 2;
            let mut out = Buffer::empty(buf.dtype());
            out.extend_from(&buf, half..buf.len());
            Some(out)
        }
        _ => Some(buf),
    }
}

#[cfg(test)]
mod tests;
