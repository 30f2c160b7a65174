//! A tiny driver for the tests: runs the `Collective`s of all p ranks of one call against each
//! other, under the alpha-beta model of the engine, with no engine.
//!
//! Time model: a rank's sends leave in the order it issues them, when the step that lists them
//! starts, one at a time on its send port (each holds the port for bytes * b); a message reaches
//! the receiver `latency` after it left, and then holds the receiver's receive port for bytes * b
//! (messages take the port in order of arrival); it is delivered when that is done. Without
//! contention a message thus costs a + bytes * b. With latency and bandwidth both zero,
//! everything happens at time 0 and messages are delivered in the order they were sent (FIFO).

use ringside_sim::proto::collective::{
    extract, input_len, prepare, schedule_with, AnySchedule, Blocks, Collective, Ctx, Members,
    Progress, Schedule, StepPlan, Transfer,
};
use ringside_sim::proto::{
    Buffer, CollMsg, Fingerprint, Generation, GroupId, Msg, Outbox, Output, Rank, SeqNo,
};
use ringside_sim::scenario::{Algorithm, Dtype, OpKind, ReduceOp};
use ringside_sim::units::Nanos;
use std::collections::BTreeMap;

/// Every (op, algorithm) that `schedule` implements.
pub const ALGORITHMS: &[(OpKind, Algorithm)] = &[
    (OpKind::Allreduce, Algorithm::Ring),
    (OpKind::Allreduce, Algorithm::RecursiveDoubling),
    (OpKind::Allreduce, Algorithm::Rabenseifner),
    (OpKind::Allreduce, Algorithm::Tree),
    (OpKind::Allreduce, Algorithm::Direct),
    (OpKind::Allreduce, Algorithm::Hierarchical),
    (OpKind::Broadcast, Algorithm::Binomial),
    (OpKind::Broadcast, Algorithm::ScatterAllgather),
    (OpKind::Broadcast, Algorithm::Direct),
    (OpKind::Reduce, Algorithm::Binomial),
    (OpKind::Reduce, Algorithm::Direct),
    (OpKind::Allgather, Algorithm::Ring),
    (OpKind::Allgather, Algorithm::RecursiveDoubling),
    (OpKind::Allgather, Algorithm::Direct),
    (OpKind::ReduceScatter, Algorithm::Ring),
    (OpKind::ReduceScatter, Algorithm::RecursiveHalving),
    (OpKind::ReduceScatter, Algorithm::Direct),
    (OpKind::Barrier, Algorithm::Dissemination),
    (OpKind::Barrier, Algorithm::Tree),
    (OpKind::AllToAll, Algorithm::Pairwise),
    (OpKind::AllToAll, Algorithm::Direct),
    (OpKind::AllToAll, Algorithm::Bruck),
    (OpKind::Gather, Algorithm::Binomial),
    (OpKind::Gather, Algorithm::Direct),
    (OpKind::Scatter, Algorithm::Binomial),
    (OpKind::Scatter, Algorithm::Direct),
];

pub const DTYPES: [Dtype; 3] = [Dtype::F32, Dtype::F64, Dtype::I64];
pub const REDUCES: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod];

/// One call of a collective on p ranks.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub op: OpKind,
    pub algorithm: Algorithm,
    pub p: u32,
    pub root: u32,
    pub elements: u32,
    pub dtype: Dtype,
    pub reduce: ReduceOp,
    pub seed: u64,
    /// Modeled size n.
    pub bytes: u64,
    /// Consecutive ranks per host (for `hierarchical`).
    pub per_host: u32,
}

impl Setup {
    pub fn new(op: OpKind, algorithm: Algorithm, p: u32) -> Setup {
        Setup {
            op,
            algorithm,
            p,
            root: 0,
            elements: 7,
            dtype: Dtype::F64,
            reduce: ReduceOp::Sum,
            seed: 1,
            bytes: 1 << 20,
            per_host: 1,
        }
    }

    pub fn ctx(&self, me: u32) -> Ctx {
        Ctx {
            me,
            p: self.p,
            root: self.root,
        }
    }

    /// The input of `rank`, as the workload makes it.
    pub fn input(&self, rank: u32) -> Buffer {
        let len = input_len(self.op, self.ctx(rank), self.elements);
        Buffer::input(self.dtype, self.reduce, len, self.seed, rank, 0, 0)
    }

    fn fingerprint(&self) -> Fingerprint {
        Fingerprint {
            group: GroupId(0),
            generation: Generation(0),
            seq: SeqNo(1),
            op: self.op,
            algorithm: self.algorithm,
            bytes: self.bytes,
            dtype: self.dtype,
            root: self.root,
            reduce: self.reduce,
            elements: self.elements,
        }
    }
}

/// The network: latency a in ns, and bandwidth 1/b in bytes per ns (0: infinite).
#[derive(Clone, Copy, Debug)]
pub struct Net {
    pub latency: Nanos,
    pub bytes_per_ns: u64,
}

impl Net {
    /// Everything at time 0, delivered in the order sent.
    pub const FIFO: Net = Net {
        latency: 0,
        bytes_per_ns: 0,
    };

    fn wire(&self, bytes: u64) -> Nanos {
        if self.bytes_per_ns == 0 {
            0
        } else {
            bytes.div_ceil(self.bytes_per_ns)
        }
    }
}

/// What a run produced.
pub struct Outcome {
    /// What `extract` gave each rank.
    pub results: Vec<Option<Buffer>>,
    /// When the last rank completed.
    pub end_ns: Nanos,
    pub messages: usize,
    pub steps: u32,
}

enum Event {
    /// The message's first byte reaches the receiver, which starts taking it in.
    Arrive {
        from: u32,
        to: u32,
        msg: Box<CollMsg>,
        bytes: u64,
    },
    /// The receiver has all of it.
    Deliver {
        from: u32,
        to: u32,
        msg: Box<CollMsg>,
    },
}

struct World {
    net: Net,
    members: std::sync::Arc<Members>,
    queue: BTreeMap<(Nanos, u64), Event>,
    seq: u64,
    send_free: Vec<Nanos>,
    recv_free: Vec<Nanos>,
    messages: usize,
}

impl World {
    fn push(&mut self, at: Nanos, ev: Event) {
        self.queue.insert((at, self.seq), ev);
        self.seq += 1;
    }

    fn outputs(&mut self, me: u32, now: Nanos, out: &mut Outbox) {
        for o in out.drain() {
            if let Output::Send { to, msg, bytes, .. } = o {
                let Msg::Coll(msg) = msg else {
                    continue; // collectives send nothing else
                };
                let to = self.members.index(to).expect("sent to a member");
                let port = &mut self.send_free[me as usize];
                let depart = now.max(*port);
                *port = depart + self.net.wire(bytes);
                self.messages += 1;
                let ev = Event::Arrive {
                    from: me,
                    to,
                    msg,
                    bytes,
                };
                self.push(depart + self.net.latency, ev);
            }
        }
    }
}

/// Runs one call on all ranks; panics on a rejected chunk or a deadlock, naming the setup.
pub fn run(s: &Setup, net: Net) -> Outcome {
    let scheds = (0..s.p)
        .map(|me| {
            schedule_with(s.op, s.algorithm, s.ctx(me), s.per_host).expect("supported algorithm")
        })
        .collect();
    run_schedules(s, net, scheds)
}

/// `run` with the given schedule for each rank.
pub fn run_schedules(s: &Setup, net: Net, scheds: Vec<impl Into<AnySchedule>>) -> Outcome {
    let p = s.p;
    let members = Members::new((0..p).map(Rank).collect());
    let fp = s.fingerprint();
    let mut colls: Vec<Collective> = scheds
        .into_iter()
        .zip(0..p)
        .map(|(sched, me)| {
            let ctx = s.ctx(me);
            let buf = prepare(s.op, s.algorithm, ctx, s.elements, s.input(me));
            Collective::new(fp, members.clone(), ctx, sched, buf, 0)
        })
        .collect();
    let steps = colls.first().map_or(0, |c| c.steps());
    let mut world = World {
        net,
        members,
        queue: BTreeMap::new(),
        seq: 0,
        send_free: vec![0; p as usize],
        recv_free: vec![0; p as usize],
        messages: 0,
    };
    let mut done: Vec<Option<Nanos>> = vec![None; p as usize];
    let mut out = Outbox::new();
    for me in 0..p {
        if colls[me as usize].start(0, &mut out) == Progress::Done {
            done[me as usize] = Some(0);
        }
        world.outputs(me, 0, &mut out);
    }
    while let Some(((now, _), ev)) = world.queue.pop_first() {
        match ev {
            Event::Arrive {
                from,
                to,
                msg,
                bytes,
            } => {
                let port = &mut world.recv_free[to as usize];
                *port = now.max(*port) + net.wire(bytes);
                let at = *port;
                world.push(at, Event::Deliver { from, to, msg });
            }
            Event::Deliver { from, to, msg } => {
                let step = msg.step;
                let coll = &mut colls[to as usize];
                match coll.on_chunk(now, from, msg, &mut out) {
                    Ok(Progress::Done) => done[to as usize] = Some(now),
                    Ok(Progress::Waiting { .. }) => {}
                    Ok(Progress::Rejected) | Err(_) => {
                        panic!("{s:?}: rank {to} rejected the step-{step} chunk of rank {from}")
                    }
                }
                world.outputs(to, now, &mut out);
            }
        }
    }
    for (me, c) in colls.iter().enumerate() {
        assert!(
            done[me].is_some(),
            "{s:?}: deadlock, rank {me} stuck in {:?}",
            c.wait_state()
        );
    }
    let results = colls
        .into_iter()
        .enumerate()
        .map(|(me, c)| extract(s.op, s.algorithm, s.ctx(me as u32), c.into_buffer()))
        .collect();
    Outcome {
        results,
        end_ns: done.iter().flatten().copied().max().unwrap_or(0),
        messages: world.messages,
        steps,
    }
}

/// Checks statically that the plans of all ranks fit together: the same number of steps and
/// blocks everywhere, at most one send and one receive per peer per step, and every send of a
/// step matched by a receive of the same blocks in the same step of its destination.
pub fn plans_agree(s: &Setup) -> Result<(), String> {
    let scheds: Vec<_> = (0..s.p)
        .map(|me| {
            schedule_with(s.op, s.algorithm, s.ctx(me), s.per_host).expect("supported algorithm")
        })
        .collect();
    let (steps, nb) = (scheds[0].steps(), scheds[0].nblocks());
    if scheds
        .iter()
        .any(|x| x.steps() != steps || x.nblocks() != nb)
    {
        return Err("ranks disagree on the number of steps or blocks".into());
    }
    let blocks = |plan: &StepPlan, t: &Transfer| plan.ranges[t.ranges.clone()].to_vec();
    let len = input_len(s.op, s.ctx(0), s.elements) * 2;
    let layout = Blocks::new(nb, len, 0);
    let size = |runs: &[(u32, u32)]| -> usize {
        runs.iter()
            .map(|&(lo, hi)| layout.elems(lo, hi).len())
            .sum()
    };
    let mut plans = vec![StepPlan::default(); s.p as usize];
    for step in 0..steps {
        for (me, sched) in scheds.iter().enumerate() {
            plans[me].clear();
            sched.plan(step, &mut plans[me]);
        }
        for (me, plan) in plans.iter().enumerate() {
            for list in [&plan.sends, &plan.recvs] {
                let mut peers: Vec<u32> = list.iter().map(|t| t.peer).collect();
                peers.sort_unstable();
                if peers.windows(2).any(|w| w[0] == w[1]) || peers.contains(&(me as u32)) {
                    return Err(format!(
                        "step {step}: rank {me} has a repeated peer or itself"
                    ));
                }
                if peers.iter().any(|&q| q >= s.p) {
                    return Err(format!("step {step}: rank {me} names a peer >= p"));
                }
            }
            if plan.ranges.iter().any(|&(lo, hi)| lo >= hi || hi > nb) {
                return Err(format!(
                    "step {step}: rank {me} names blocks outside 0..{nb}"
                ));
            }
            for t in &plan.sends {
                let theirs = &plans[t.peer as usize];
                let matched = theirs
                    .recvs
                    .iter()
                    .find(|r| r.peer == me as u32)
                    .map(|r| blocks(theirs, r));
                // all_to_all receives into another buffer than it sends from: there the
                // pieces must only hold as many elements (their modeled bytes differ by one
                // when p does not divide n: the sender's count is the one that travels);
                // everywhere else the very same blocks
                let fits = match &matched {
                    Some(m) if s.op == OpKind::AllToAll => size(m) == size(&blocks(plan, t)),
                    Some(m) => *m == blocks(plan, t),
                    None => false,
                };
                if !fits {
                    return Err(format!(
                        "step {step}: rank {me} sends {:?} to {}, which expects {matched:?}",
                        blocks(plan, t),
                        t.peer
                    ));
                }
            }
            for t in &plan.recvs {
                if !plans[t.peer as usize]
                    .sends
                    .iter()
                    .any(|x| x.peer == me as u32)
                {
                    return Err(format!(
                        "step {step}: rank {me} waits for {} in vain",
                        t.peer
                    ));
                }
            }
        }
    }
    Ok(())
}
