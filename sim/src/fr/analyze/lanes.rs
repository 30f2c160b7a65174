//! Each rank's calls per group ("lanes") and in the order it issued them (its queue), what its
//! dump says of each, and how two calls compare.

use super::p2p::Message;
use crate::diagnose::order::CallKey;
use crate::fr::groups::Groups;
use crate::fr::model::{fmt_shapes, numel, Dump, Record, RecordKind, State};
use crate::proto::vocab::OpKind;
use std::collections::BTreeMap;

/// What a rank's dump says of one of its calls, at the time the rank dumped. A record's `state`
/// and `retired` are evidence, read by what the backend reports:
/// - a backend with device events (NCCL and its kin) says `completed` when the call is done,
///   `started` when its kernel runs and waits for peers, `scheduled` while an earlier kernel on
///   the stream holds it back; a call retired by the watchdog without completing failed;
/// - gloo and hook recorders write `scheduled` for every call and retire a call when it ends,
///   whether it succeeded or failed: a retired call is [`Status::Left`], and whether it can
///   have succeeded is for its group's other members to tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// The rank has not left the call and nothing says it began (or the backend cannot say).
    Scheduled,
    /// Its kernel runs and waits for peers.
    Started,
    /// Retired without completing: timed out or aborted.
    Failed,
    /// Retired by a backend that does not tell success from failure (or reported complete by
    /// `pg_status`, whose records say otherwise).
    Left,
    /// Completed on the device: every member took part.
    Completed,
}

impl Status {
    /// The rank is no longer in the call.
    pub fn closed(self) -> bool {
        matches!(self, Status::Failed | Status::Left | Status::Completed)
    }

    /// The state of record `r` of a dump with (`device`) or without device states.
    pub fn of(r: &Record, device: bool) -> Status {
        match (r.state, r.retired) {
            (State::Completed, _) => Status::Completed,
            (_, Some(true)) if device => Status::Failed,
            (_, Some(true)) => Status::Left,
            (State::Started, _) => Status::Started,
            _ => Status::Scheduled,
        }
    }
}

/// One rank's call in one group: one record, or a coalesced block of records sharing a
/// `collective_seq_id` (its last record closes the block and carries its state), or one send
/// or recv of a point-to-point batch (whose closing record carries the batch's state).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// Index of the dump.
    pub dump: u32,
    /// Records `first..=last` of that dump.
    pub first: u32,
    pub last: u32,
    /// `collective_seq_id`; for a send or recv, `p2p_seq_id` (one value per batch).
    pub seq: u64,
    pub time_ns: u64,
    pub status: Status,
    /// Its kernel started (`started` or `completed`, retired or not).
    pub began: bool,
    /// The call site, numbered across all dumps (equal numbers, equal sites); 0 without one.
    pub site: u32,
    /// Its place in its rank's queue (see [`Lanes::queue`]).
    pub pos: u32,
    /// A send or recv: its message in its dump's [`Lanes::messages`] ([`NO_MESSAGE`] for a
    /// collective, or where the dump has more kinds of messages than that table keeps).
    pub message: u16,
}

/// A [`Call`] whose message is not in [`Lanes::messages`] (see [`Lanes::message`]).
pub const NO_MESSAGE: u16 = u16::MAX;

impl Call {
    /// The rank has left the call (completed, or retired by the watchdog).
    pub fn left(&self) -> bool {
        self.status.closed()
    }

    /// The call completed on the device: every member took part.
    pub fn completed(&self) -> bool {
        self.status == Status::Completed
    }
}

/// The calls of one rank in one group, by increasing seq; point-to-point calls apart, in the
/// order the rank issued them.
#[derive(Clone, Debug, Default)]
pub struct Lane {
    pub calls: Vec<Call>,
    pub p2p: Vec<Call>,
    /// `pg_status` of the rank for this group: last enqueued and completed seq.
    pub enqueued: Option<i64>,
    pub completed: Option<i64>,
}

/// One entry of a rank's queue: a collective call, or a point-to-point batch (its sends and
/// recvs, `p2p[first..=last]` of the group's lane).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued {
    pub group: u32,
    pub what: QueuedCall,
    pub status: Status,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueuedCall {
    /// `calls[i]` of the group's lane.
    Collective(u32),
    /// `p2p[first..=last]` of the group's lane.
    P2p(u32, u32),
}

/// A rank's calls: per group, and in the one order it issued them. A rank's calls are a queue
/// (each group's calls run on one stream, and a rank blocked in one call issues nothing it
/// needs to get past it): the first call it has not left is where it is, and the calls
/// behind it wait for it.
/// A rank's lanes, by group id: a job of thousands of groups, each rank in a few, keeps only
/// the lanes of the groups the rank's records name; any other group's lane reads empty.
#[derive(Clone, Debug, Default)]
pub struct ByGroup {
    /// Sorted by group.
    lanes: Vec<(u32, Lane)>,
    /// Groups of the job.
    n: usize,
}

static EMPTY: Lane = Lane {
    calls: Vec::new(),
    p2p: Vec::new(),
    enqueued: None,
    completed: None,
};

impl ByGroup {
    /// The lane of group `g`, if the job has that group.
    pub fn get(&self, g: usize) -> Option<&Lane> {
        (g < self.n).then(|| &self[g])
    }

    /// The groups the rank has calls or progress in, with their lanes.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &Lane)> {
        self.lanes.iter().map(|(g, l)| (*g, l))
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Lane> {
        self.lanes.iter_mut().map(|(_, l)| l)
    }
}

impl std::ops::Index<usize> for ByGroup {
    type Output = Lane;

    fn index(&self, g: usize) -> &Lane {
        match self.lanes.binary_search_by_key(&g, |(x, _)| *x as usize) {
            Ok(i) => &self.lanes[i].1,
            Err(_) => &EMPTY,
        }
    }
}

impl std::ops::IndexMut<usize> for ByGroup {
    fn index_mut(&mut self, g: usize) -> &mut Lane {
        let i = match self.lanes.binary_search_by_key(&g, |(x, _)| *x as usize) {
            Ok(i) => i,
            Err(i) => {
                self.lanes.insert(i, (g as u32, Lane::default()));
                i
            }
        };
        &mut self.lanes[i].1
    }
}

#[derive(Clone, Debug, Default)]
pub struct Lanes {
    pub groups: ByGroup,
    pub queue: Vec<Queued>,
    /// The dump reports device states (see [`Status`]).
    pub device: bool,
    /// Its calls say when their kernels start (NCCL's timing is on: a record is `started`, or
    /// `pg_status` reports a started seq): a call `scheduled` behind no stuck call of its rank
    /// then proves the rank's stream is held by something the dumps do not record.
    pub timing: bool,
    /// The dump's oldest record time (None: no records; 0: none has a time) and its newest
    /// (0: none).
    pub oldest_ns: Option<u64>,
    pub newest_ns: u64,
    /// Where [`Lanes::head`] is, found once the queue is built (ranks are asked many times).
    head: Option<u32>,
    /// A call of the queue failed (see [`Lanes::failed`]).
    failed: bool,
    /// The kinds of messages its sends and recvs move, each once: the matching of a job's
    /// millions of sends and recvs reads them here, not in records spread over the dumps.
    pub messages: Vec<Option<Message>>,
}

impl Lanes {
    /// The first entry of the queue the rank has not left: where it is stuck, if anywhere; a
    /// call that failed counts, as the rank was stuck in it until the watchdog retired it.
    pub fn head(&self) -> Option<(u32, &Queued)> {
        let i = self.head?;
        Some((i, self.queue.get(i as usize)?))
    }

    /// Whether a call of the rank was retired by the watchdog without completing: its dump
    /// was taken after that call timed out.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Whether the rank has a call it has not left, or one that failed.
    pub fn busy(&self) -> bool {
        self.head().is_some()
    }

    /// The message of send or recv `c` of dump `d` (these lanes'), if it names its peer.
    pub fn message(&self, d: &Dump, c: &Call) -> Option<Message> {
        match self.messages.get(c.message as usize) {
            Some(m) => *m,
            None => Message::of(d, &d.records.get(c.first as usize)),
        }
    }

    /// The call queue entry `i` is.
    pub fn call(&self, i: usize) -> Call {
        let q = &self.queue[i];
        let lane = &self.groups[q.group as usize];
        match q.what {
            QueuedCall::Collective(c) => lane.calls[c as usize],
            QueuedCall::P2p(a, _) => lane.p2p[a as usize],
        }
    }

    /// Queue entry `i` as call orders compare it: its group, op, sizes and dtypes (not its
    /// call site: a call made out of order often comes from another line).
    pub fn key(&self, dumps: &[Dump], i: usize) -> CallKey {
        CallKey {
            group: self.queue[i].group,
            like: sig(dumps, &self.call(i)),
        }
    }

    /// The rank's stream is held before its head: the head's kernel never started, yet every
    /// call before it has ended, and the dump reports when kernels start.
    pub fn held(&self) -> bool {
        self.timing
            && self
                .head()
                .is_some_and(|(_, q)| q.status == Status::Scheduled)
    }
}

/// Backends that record no device events: every call stays `scheduled` and is retired when
/// it ends, failed or not.
fn retires_only(backend: &str) -> bool {
    matches!(backend, "gloo" | "nccl2" | "c10d")
}

/// Whether dump `d` reports device states: a record says `started` or `completed`, or its
/// backend has device events.
fn reports_device_states(d: &Dump) -> bool {
    d.records
        .iter()
        .any(|r| matches!(r.state, State::Started | State::Completed))
        || d.records.iter().any(|r| !retires_only(d.str(r.backend)))
}

/// Lanes of every dump, `lanes[d].groups[g]`.
pub fn build(dumps: &[Dump], groups: &Groups) -> Vec<Lanes> {
    let sites = number_sites(dumps);
    let mut lanes = super::par::map(dumps.len(), |di| {
        build_one(di as u32, &dumps[di], groups, &sites[di])
    });
    // timing is a setting of the job (TORCH_NCCL_ENABLE_TIMING), the same on every rank: a dump
    // whose calls all completed, or never started, shows it only through the others
    if lanes.iter().any(|l| l.timing) {
        for l in &mut lanes {
            l.timing = true;
        }
    }
    lanes
}

/// The call sites of every dump numbered across dumps (by their text): each new site, in the
/// order of dumps and of their records, the next number from 1. Per dump, the number of each
/// of its strings that is a site (0 for the others).
fn number_sites(dumps: &[Dump]) -> Vec<Vec<u32>> {
    let mut sites: BTreeMap<&str, u32> = BTreeMap::new();
    dumps
        .iter()
        .map(|d| {
            let mut site_of: Vec<u32> = vec![0; d.strings.len()];
            for local in d.records.first_sites() {
                let slot = &mut site_of[local as usize];
                if local != 0 && *slot == 0 {
                    let next = sites.len() as u32 + 1;
                    *slot = *sites.entry(d.str(local)).or_insert(next);
                }
            }
            site_of
        })
        .collect()
}

/// The lanes of dump `d` (index `di`), the number of each of its strings that is a call site
/// in `site_of`.
fn build_one(di: u32, d: &Dump, groups: &Groups, site_of: &[u32]) -> Lanes {
    let device = reports_device_states(d);
    let of = &groups.of_dump_group[di as usize];
    // the lanes of the groups the records name, made up front: a record finds its own by its
    // group's place in the dump's `groups`
    let mut named: Vec<u32> = of.clone();
    named.sort_unstable();
    named.dedup();
    let slot_of: Vec<usize> = of
        .iter()
        .map(|g| named.binary_search(g).unwrap_or(0))
        .collect();
    let mut spare = SPARE.with(|s| std::mem::take(&mut *s.borrow_mut()));
    let mut b = Build {
        out: Lanes {
            groups: ByGroup {
                lanes: (named.iter())
                    .map(|&g| {
                        let calls = spare.calls.pop().unwrap_or_default();
                        let p2p = spare.calls.pop().unwrap_or_default();
                        (
                            g,
                            Lane {
                                calls,
                                p2p,
                                ..Lane::default()
                            },
                        )
                    })
                    .collect(),
                n: groups.list.len(),
            },
            queue: std::mem::take(&mut spare.queue),
            device,
            timing: false,
            oldest_ns: None,
            newest_ns: 0,
            head: None,
            failed: false,
            messages: Vec::new(),
        },
        last_batch: None,
        renumber: false,
        messages: BTreeMap::new(),
        recent: Vec::new(),
    };
    // each group's `pg_id`: its first record's that has one
    let mut pg_of: Vec<Option<i64>> = vec![None; named.len()];
    let (mut oldest, mut newest, mut started) = (u64::MAX, 0u64, false);
    for (i, r) in d.records.iter().enumerate() {
        if r.time_ns > 0 {
            oldest = oldest.min(r.time_ns);
        }
        newest = newest.max(r.time_ns);
        started |= r.state == State::Started;
        let slot = slot_of.get(r.group as usize).copied().unwrap_or(0);
        let g = named.get(slot).copied().unwrap_or(0);
        if pg_of[slot].is_none() {
            pg_of[slot] = r.pg_id;
        }
        let call = Call {
            dump: di,
            first: i as u32,
            last: i as u32,
            seq: r.seq.get().unwrap_or(0),
            time_ns: r.time_ns,
            status: Status::of(&r, device),
            began: matches!(r.state, State::Started | State::Completed),
            site: site_of[r.site as usize],
            pos: 0,
            message: NO_MESSAGE,
        };
        if r.is_p2p || r.kind.is_p2p() {
            let call = Call {
                message: b.message(d, &r),
                ..call
            };
            b.add_p2p(slot, g, r.p2p_seq.get(), call);
        } else if r.kind == RecordKind::Coalesced && b.batch_open(g) {
            b.close_batch(slot, &call);
        } else if r.seq.get().is_some() {
            b.add_collective(slot, g, r.kind == RecordKind::Coalesced, call);
        }
    }
    let mut out = b.out;
    out.oldest_ns = (!d.records.is_empty()).then_some(if oldest == u64::MAX { 0 } else { oldest });
    out.newest_ns = newest;
    out.timing = started
        || d.pg_status
            .iter()
            .any(|s| s.started.is_some_and(|x| x >= 0));
    for ((_, lane), pg) in out.groups.lanes.iter_mut().zip(&pg_of) {
        if let Some(st) = pg.and_then(|p| d.status(p)) {
            lane.enqueued = st.enqueued.filter(|&x| x >= 0);
            lane.completed = st.completed.filter(|&x| x >= 0);
        }
    }
    if b.renumber {
        number_positions(&mut out);
    }
    apply_pg_status(&mut out);
    out.head = (out.queue.iter())
        .position(|q| !q.status.closed() || q.status == Status::Failed)
        .map(|i| i as u32);
    out.failed = out.queue.iter().any(|q| q.status == Status::Failed);
    // a job's lanes hold a call per record of every dump: each is copied out at its size, and
    // the vectors it was built in are kept for the thread's next dump
    let queue = out.queue.to_vec();
    spare.queue = std::mem::replace(&mut out.queue, queue);
    spare.queue.clear();
    for l in out.groups.iter_mut() {
        for v in [&mut l.calls, &mut l.p2p] {
            let exact = v.to_vec();
            let mut built = std::mem::replace(v, exact);
            built.clear();
            spare.calls.push(built);
        }
    }
    SPARE.with(|s| *s.borrow_mut() = spare);
    out
}

/// The vectors a thread builds lanes in. Built in place, the calls of a job's lanes grew by
/// doubling and were copied at each step (a fifth of the analysis's time at 4,096 ranks);
/// these grow once per thread, and each lane is copied out once, at its size.
#[derive(Default)]
struct Spare {
    calls: Vec<Vec<Call>>,
    queue: Vec<Queued>,
}

thread_local! {
    static SPARE: std::cell::RefCell<Spare> = std::cell::RefCell::new(Spare::default());
}

/// A dump's lanes while they are built, record by record. A call's place in the queue is
/// the length of the queue when the call is added.
struct Build {
    out: Lanes,
    /// The batch (`p2p_seq_id`) of the last send or recv added: when the last entry of the
    /// queue is a batch, the batch of its last call.
    last_batch: Option<u64>,
    /// Entries were dropped from the queue: places are counted again at the end.
    renumber: bool,
    /// Each kind of message in [`Lanes::messages`], and the last few found (a rank's sends and
    /// recvs move a few kinds, most often the one before).
    messages: BTreeMap<MessageKey, u16>,
    recent: Vec<(MessageKey, u16)>,
}

/// What a record's message is read from: its op, peer, sizes and dtypes.
type MessageKey = (RecordKind, Option<crate::fr::model::Peer>, u32, u32);

impl Build {
    /// The message of send or recv `r` of dump `d` in [`Lanes::messages`], added if new.
    fn message(&mut self, d: &Dump, r: &Record) -> u16 {
        let key = (r.kind, r.peer, r.input, r.in_dtypes);
        if let Some(&(_, i)) = self.recent.iter().rev().find(|(k, _)| *k == key) {
            return i;
        }
        let table = &mut self.out.messages;
        let i = match self.messages.get(&key) {
            Some(&i) => i,
            None if table.len() < NO_MESSAGE as usize => {
                let i = table.len() as u16;
                table.push(Message::of(d, r));
                self.messages.insert(key, i);
                i
            }
            None => return NO_MESSAGE,
        };
        if self.recent.len() == 8 {
            self.recent.remove(0);
        }
        self.recent.push((key, i));
        i
    }

    /// The lane at `slot` of the lanes, and the queue.
    fn lane(&mut self, slot: usize) -> (&mut Lane, &mut Vec<Queued>) {
        (&mut self.out.groups.lanes[slot].1, &mut self.out.queue)
    }

    /// A send or recv of group `g` in batch `batch`: its own entry of the queue, or one more
    /// of the batch the last entry is.
    fn add_p2p(&mut self, slot: usize, g: u32, batch: Option<u64>, mut call: Call) {
        let same_batch = batch.is_some() && self.batch_open(g) && self.last_batch == batch;
        self.last_batch = batch;
        let (lane, queue) = self.lane(slot);
        call.seq = batch.unwrap_or(0);
        let i = lane.p2p.len() as u32;
        if same_batch {
            let q = queue.last_mut().expect("a batch has an entry");
            if let QueuedCall::P2p(_, last) = &mut q.what {
                *last = i;
            }
            q.status = q.status.min(call.status);
            call.pos = queue.len() as u32 - 1;
        } else {
            call.pos = queue.len() as u32;
            queue.push(Queued {
                group: g,
                what: QueuedCall::P2p(i, i),
                status: call.status,
            });
        }
        lane.p2p.push(call);
    }

    /// The last entry of the queue is a batch of sends and recvs of group `g` (whose closing
    /// record is not flagged p2p).
    fn batch_open(&self, g: u32) -> bool {
        self.out
            .queue
            .last()
            .is_some_and(|q| q.group == g && matches!(q.what, QueuedCall::P2p(..)))
    }

    /// The record that closes a batch carries its state: the batch's own records stay
    /// `scheduled`.
    fn close_batch(&mut self, slot: usize, closing: &Call) {
        let (lane, queue) = self.lane(slot);
        let q = queue.last_mut().expect("an open batch");
        let QueuedCall::P2p(first, last) = q.what else {
            return;
        };
        q.status = closing.status;
        for p in &mut lane.p2p[first as usize..=last as usize] {
            p.status = closing.status;
            p.began = closing.began;
        }
    }

    /// A collective of group `g` (`closing`: the record that closes a coalesced block): its
    /// own entry, or one more record of the coalesced block it continues.
    fn add_collective(&mut self, slot: usize, g: u32, closing: bool, call: Call) {
        let (lane, queue) = self.lane(slot);
        let last = lane.calls.len().checked_sub(1);
        match last.map(|i| lane.calls[i].seq) {
            Some(seq) if seq == call.seq => {
                // one coalesced block: the closing record's state is the block's
                let c = lane.calls.last_mut().expect("a last call");
                c.last = call.last;
                if closing {
                    c.status = call.status;
                    c.began = call.began;
                } else {
                    c.status = c.status.min(call.status);
                    c.began &= call.began;
                }
                let (status, block) = (c.status, last.unwrap_or(0) as u32);
                if let Some(q) = queue
                    .iter_mut()
                    .rev()
                    .find(|q| q.group == g && q.what == QueuedCall::Collective(block))
                {
                    q.status = status;
                }
            }
            Some(seq) if seq > call.seq => {
                // seq ids going back: a new recording epoch (the recorder was reset); the older
                // records cannot be matched with the newer ones
                lane.calls.clear();
                queue.retain(|q| !(q.group == g && matches!(q.what, QueuedCall::Collective(_))));
                self.renumber = true;
                self.push_collective(slot, g, call);
            }
            _ => self.push_collective(slot, g, call),
        }
    }

    fn push_collective(&mut self, slot: usize, g: u32, mut call: Call) {
        let (lane, queue) = self.lane(slot);
        call.pos = queue.len() as u32;
        queue.push(Queued {
            group: g,
            what: QueuedCall::Collective(lane.calls.len() as u32),
            status: call.status,
        });
        lane.calls.push(call);
    }
}

/// Each call's place in the queue.
fn number_positions(out: &mut Lanes) {
    for (i, q) in out.queue.iter().enumerate() {
        let lane = &mut out.groups[q.group as usize];
        match q.what {
            QueuedCall::Collective(c) => lane.calls[c as usize].pos = i as u32,
            QueuedCall::P2p(a, b) => {
                for p in &mut lane.p2p[a as usize..=b as usize] {
                    p.pos = i as u32;
                }
            }
        }
    }
}

/// A call `pg_status` reports completed was left, whatever its record says (a record can lag
/// behind the group's progress).
fn apply_pg_status(out: &mut Lanes) {
    for lane in out.groups.iter_mut() {
        let Some(done) = lane.completed else { continue };
        for c in lane.calls.iter_mut().rev() {
            if c.seq as i64 > done {
                continue;
            }
            if c.left() {
                break;
            }
            c.status = Status::Left;
            if let Some(q) = out.queue.get_mut(c.pos as usize) {
                q.status = Status::Left;
            }
        }
    }
}

/// The records of a call that describe its tensors (without a block's closing record).
pub fn parts<'d>(dumps: &'d [Dump], c: &Call) -> impl Iterator<Item = Record> + 'd {
    let d = &dumps[c.dump as usize];
    let (first, last) = (c.first as usize, c.last as usize);
    (first..=last).map(|i| d.records.get(i)).filter(move |r| {
        !(last > first && r.index as usize == last && r.kind == RecordKind::Coalesced)
    })
}

/// The hash of op, sizes and dtypes of a call's first record.
pub fn sig(dumps: &[Dump], c: &Call) -> u64 {
    dumps[c.dump as usize].records.sig(c.first as usize)
}

/// The first record of a call.
pub fn head(dumps: &[Dump], c: &Call) -> Record {
    dumps[c.dump as usize].records.get(c.first as usize)
}

/// The call site of a call (`file:line`), if its dump has stack frames.
pub fn site<'d>(dumps: &'d [Dump], c: &Call) -> Option<&'d str> {
    let r = head(dumps, c);
    (r.site != 0).then(|| dumps[c.dump as usize].str(r.site))
}

/// The op name of a call (`all_reduce`).
pub fn op_name<'d>(dumps: &'d [Dump], c: &Call) -> &'d str {
    let r = head(dumps, c);
    dumps[c.dump as usize].str(r.op)
}

/// How call `b` differs from call `a`, or None when they agree: op, sizes (as the op's
/// rules compare them) and dtypes.
pub fn differs(dumps: &[Dump], a: &Call, b: &Call) -> Option<String> {
    let (da, db) = (&dumps[a.dump as usize], &dumps[b.dump as usize]);
    // the common case, one record each called alike, without reading the records
    if a.first == a.last && b.first == b.last && sig(dumps, a) == sig(dumps, b) {
        return None;
    }
    let (na, nb) = (parts(dumps, a).count(), parts(dumps, b).count());
    if na != nb {
        return Some(format!("{nb} calls in one block instead of {na}"));
    }
    for (ra, rb) in parts(dumps, a).zip(parts(dumps, b)) {
        if ra.sig == rb.sig {
            continue;
        }
        let (oa, ob) = (da.str(ra.op), db.str(rb.op));
        if oa != ob {
            return Some(format!("{ob} instead of {oa}"));
        }
        // uneven all_to_all splits are legal: per-peer sizes are not recorded
        let sizes = !ra.kind.is(OpKind::AllToAll);
        let (ia, ib) = (da.shapes(ra.input), db.shapes(rb.input));
        let (xa, xb) = (da.shapes(ra.output), db.shapes(rb.output));
        if sizes && !ra.kind.is(OpKind::Scatter) && ia != ib {
            return Some(format!(
                "input sizes {} instead of {}",
                fmt_shapes(ib),
                fmt_shapes(ia)
            ));
        }
        if sizes && !ra.kind.is(OpKind::Gather) && xa != xb && numel(xa) != numel(xb) {
            return Some(format!(
                "output sizes {} instead of {}",
                fmt_shapes(xb),
                fmt_shapes(xa)
            ));
        }
        let (ta, tb) = (da.str(ra.in_dtypes), db.str(rb.in_dtypes));
        if ta != tb && !ta.is_empty() && !tb.is_empty() {
            return Some(format!("dtype {tb} instead of {ta}"));
        }
        let (ta, tb) = (da.str(ra.out_dtypes), db.str(rb.out_dtypes));
        if ta != tb && !ta.is_empty() && !tb.is_empty() {
            return Some(format!("output dtype {tb} instead of {ta}"));
        }
    }
    None
}

/// The sizes of a call for sentences: `[[4]] Float`.
pub fn describe(dumps: &[Dump], c: &Call) -> String {
    let d = &dumps[c.dump as usize];
    let parts: Vec<String> = parts(dumps, c)
        .map(|r| {
            let t = d.str(r.in_dtypes);
            let s = fmt_shapes(d.shapes(r.input));
            if t.is_empty() {
                s
            } else {
                format!("{s} {t}")
            }
        })
        .collect();
    parts.join(" + ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fr::groups;

    /// A JSON dump of rank `rank`: `(group, seq, op, state)` per record, a `p2p_seq_id` for
    /// sends, recvs and the `coalesced` record after them.
    fn dump(rank: u32, entries: &[(&str, u64, &str, &str)]) -> Dump {
        let entries: Vec<String> = entries
            .iter()
            .enumerate()
            .map(|(i, (g, seq, op, state))| {
                let p2p = matches!(*op, "send 0->1" | "recv 0<-1" | "coalesced");
                format!(
                    r#"{{"record_id":{i},"pg_id":{g},"process_group":["{g}",""],
                    "collective_seq_id":{},"p2p_seq_id":{},"profiling_name":"nccl:{op}",
                    "time_created_ns":{},"input_sizes":[[4]],"input_dtypes":["Float"],
                    "output_sizes":[[4]],"output_dtypes":["Float"],"state":"{state}",
                    "retired":false,"is_p2p":{}}}"#,
                    if p2p { 0 } else { *seq },
                    if p2p { *seq } else { 0 },
                    1000 + i,
                    *op != "coalesced" && p2p,
                )
            })
            .collect();
        let text = format!(
            r#"{{"version":"2.10","pg_config":{{"0":{{"name":"0","desc":"default_pg","ranks":"[0, 1]"}},"1":{{"name":"1","desc":"","ranks":"[0, 1]"}}}},"entries":[{}]}}"#,
            entries.join(",")
        );
        crate::fr::read::read_bytes(text.as_bytes(), "rank_0.json", rank).expect("a dump")
    }

    #[test]
    fn messages_are_read_once_per_kind_and_as_their_records_say() {
        let d = dump(
            0,
            &[
                ("1", 1, "send 0->1", "completed"),
                ("1", 1, "recv 0<-1", "completed"),
                ("1", 1, "coalesced", "completed"),
                ("1", 2, "send 0->1", "completed"),
                ("1", 3, "recv 0<-1", "scheduled"),
                ("0", 1, "all_reduce", "completed"),
            ],
        );
        let dumps = [d];
        let g = groups::infer(&dumps, None);
        let lanes = build(&dumps, &g);
        let l = &lanes[0];
        assert_eq!(l.messages.len(), 2, "a send and a recv: {:?}", l.messages);
        let p2p = &l.groups[g.list[1].id as usize].p2p;
        assert_eq!(p2p.len(), 4);
        for c in p2p {
            assert_ne!(c.message, NO_MESSAGE);
            let rec = dumps[0].records.get(c.first as usize);
            assert_eq!(l.message(&dumps[0], c), Message::of(&dumps[0], &rec));
        }
        let sends: Vec<bool> = p2p
            .iter()
            .map(|c| l.message(&dumps[0], c).is_some_and(|m| m.send))
            .collect();
        assert_eq!(sends, [true, false, true, false]);
        // a call outside the table is read from its record
        let outside = Call {
            message: NO_MESSAGE,
            ..p2p[1]
        };
        assert_eq!(
            l.message(&dumps[0], &outside),
            l.message(&dumps[0], &p2p[1])
        );
    }

    #[test]
    fn places_in_the_queue_are_those_counted_afresh() {
        let d = dump(
            0,
            &[
                ("0", 1, "all_reduce", "completed"),
                ("1", 1, "all_reduce", "completed"),
                ("1", 3, "send 0->1", "scheduled"),
                ("1", 3, "recv 0<-1", "scheduled"),
                ("1", 3, "coalesced", "completed"),
                ("0", 2, "all_reduce", "completed"),
                ("0", 2, "all_reduce", "completed"),
                ("1", 2, "all_reduce", "started"),
                ("1", 4, "send 0->1", "scheduled"),
                // the recorder starts again: group 0's earlier calls are dropped
                ("0", 1, "broadcast", "scheduled"),
                ("1", 5, "recv 0<-1", "scheduled"),
                ("0", 2, "broadcast", "scheduled"),
            ],
        );
        let dumps = [d];
        let g = groups::infer(&dumps, None);
        let lanes = build(&dumps, &g);
        let l = &lanes[0];
        let mut again = l.clone();
        number_positions(&mut again);
        assert_eq!(format!("{l:?}"), format!("{again:?}"));
        let ops: Vec<(u32, QueuedCall)> = l.queue.iter().map(|q| (q.group, q.what)).collect();
        let (g0, g1) = (g.list[0].id, g.list[1].id);
        assert_eq!(
            ops,
            [
                (g1, QueuedCall::Collective(0)),
                (g1, QueuedCall::P2p(0, 1)),
                (g1, QueuedCall::Collective(1)),
                (g1, QueuedCall::P2p(2, 2)),
                (g0, QueuedCall::Collective(0)),
                (g1, QueuedCall::P2p(3, 3)),
                (g0, QueuedCall::Collective(1)),
            ]
        );
        assert_eq!(l.groups[g0 as usize].calls[0].pos, 4);
        assert_eq!(l.groups[g1 as usize].p2p[3].pos, 5);
    }
}
