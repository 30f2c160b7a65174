//! The calls of the tests: the `Collective`s of all p ranks of one call, run against each
//! other on the standalone executor (no engine), whose network is the alpha-beta model of the
//! engine.
//!
//! Time model (the executor's): a rank's sends leave in the order it issues them, when the step
//! that lists them starts, one at a time on its send port (each holds the port for bytes * b); a
//! message reaches the receiver `latency` after it left, and then holds the receiver's receive
//! port for bytes * b (messages take the port in order of arrival); it is delivered when that
//! is done. Without contention a message thus costs a + bytes * b. With latency and bandwidth
//! both zero, everything happens at time 0 and messages are delivered in the order they were
//! sent (FIFO).

use ringside_sim::proto::collective::{
    extract, input_len, plans_agree as contract, prepare, schedule_with, AnySchedule, Collective,
    Ctx, Members, PlanMismatch, Progress,
};
use ringside_sim::proto::process::Input;
use ringside_sim::proto::standalone::{Network, Node, Standalone};
use ringside_sim::proto::{Buffer, Fingerprint, Generation, GroupId, Msg, Outbox, Rank, SeqNo};
use ringside_sim::scenario::{Algorithm, Dtype, OpKind, ReduceOp};
use ringside_sim::units::Nanos;

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
pub type Net = Network;

/// What a run produced.
pub struct Outcome {
    /// What `extract` gave each rank.
    pub results: Vec<Option<Buffer>>,
    /// When the last rank completed.
    pub end_ns: Nanos,
    pub messages: usize,
    pub steps: u32,
}

/// One rank of the call: its collective, and when it completed.
struct Member {
    setup: Setup,
    me: u32,
    coll: Collective,
    done: Option<Nanos>,
}

impl Node for Member {
    fn wait_state(&self) -> Option<ringside_sim::proto::node::Waiting> {
        None
    }
    fn finished(&self) -> bool {
        false
    }
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        match input {
            Input::Start => {
                self.done = (self.coll.start(now, out) == Progress::Done).then_some(now);
            }
            Input::Message {
                from,
                msg: Msg::Coll(msg),
            } => {
                let step = msg.step;
                match self.coll.on_chunk(now, from.0, msg, out) {
                    Progress::Done => self.done = Some(now),
                    Progress::Waiting { .. } => {}
                    Progress::Rejected => panic!(
                        "{:?}: rank {} rejected the step-{step} chunk of rank {from}",
                        self.setup, self.me
                    ),
                }
            }
            // collectives send nothing else, and set no timer
            _ => {}
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
    let colls: Vec<Collective> = scheds
        .into_iter()
        .zip(0..p)
        .map(|(sched, me)| {
            let ctx = s.ctx(me);
            let buf = prepare(s.op, s.algorithm, ctx, s.elements, s.input(me));
            Collective::new(fp, members.clone(), ctx, sched, buf, 0)
        })
        .collect();
    let steps = colls.first().map_or(0, |c| c.steps());
    let ranks = colls
        .into_iter()
        .zip(0..p)
        .map(|(coll, me)| Member {
            setup: *s,
            me,
            coll,
            done: None,
        })
        .collect();
    let mut x = Standalone::new(ranks, net);
    x.run(u64::MAX);
    let messages = x.messages() as usize;
    let ranks: Vec<Member> = x.into_nodes().into_iter().flatten().collect();
    for m in &ranks {
        assert!(
            m.done.is_some(),
            "{s:?}: deadlock, rank {} stuck in {:?}",
            m.me,
            m.coll.wait_state()
        );
    }
    Outcome {
        end_ns: ranks.iter().filter_map(|m| m.done).max().unwrap_or(0),
        results: ranks
            .into_iter()
            .map(|m| extract(s.op, s.algorithm, s.ctx(m.me), m.coll.into_buffer()))
            .collect(),
        messages,
        steps,
    }
}

/// Checks statically that the plans of all ranks fit together (the library's contract
/// checker, on the schedules `s` names).
pub fn plans_agree(s: &Setup) -> Result<(), PlanMismatch> {
    let scheds: Vec<AnySchedule> = (0..s.p)
        .map(|me| {
            schedule_with(s.op, s.algorithm, s.ctx(me), s.per_host).expect("supported algorithm")
        })
        .collect();
    contract(s.op, s.elements, &scheds)
}
