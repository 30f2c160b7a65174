//! What the dumps of one job say: one [`Dump`] per rank, its records, groups and progress.
//!
//! Strings and tensor shapes repeat in every record, so each dump keeps them once in its own
//! tables ([`Table`]) and records refer to them by index; dumps are read independently (on
//! several threads) and compared by value.

use crate::diagnose::CallOp;
use crate::proto::vocab::{Dtype, OpKind};
use std::collections::BTreeMap;

/// Interned values of one dump: index 0 is always the empty value.
#[derive(Clone, Debug)]
pub struct Table<T: Ord + Clone> {
    list: Vec<T>,
    index: BTreeMap<T, u32>,
}

impl<T: Ord + Clone + Default> Default for Table<T> {
    fn default() -> Self {
        let empty = T::default();
        Table {
            list: vec![empty.clone()],
            index: BTreeMap::from([(empty, 0)]),
        }
    }
}

impl<T: Ord + Clone + Default> Table<T> {
    /// The index of `v`, added if new.
    pub fn intern<Q>(&mut self, v: &Q) -> u32
    where
        T: std::borrow::Borrow<Q> + for<'q> From<&'q Q>,
        Q: Ord + ?Sized,
    {
        if let Some(&i) = self.index.get(v) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(T::from(v));
        self.index.insert(T::from(v), i);
        i
    }

    /// The index of `v`, if it is in the table.
    pub fn find<Q>(&self, v: &Q) -> Option<u32>
    where
        T: std::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.index.get(v).copied()
    }

    pub fn get(&self, i: u32) -> &T {
        &self.list[i as usize]
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.len() <= 1
    }
}

/// Tensor shapes of one record, flattened: the number of tensors, then for each tensor its
/// number of dimensions and its dimensions (`[[4], [2, 3]]` is `[2, 1, 4, 2, 2, 3]`).
pub type Shapes = Vec<u64>;

/// Iterates the tensors of flattened shapes.
pub fn tensors(s: &[u64]) -> impl Iterator<Item = &[u64]> {
    let mut i = 1usize;
    let n = s.first().copied().unwrap_or(0);
    (0..n).map_while(move |_| {
        let d = *s.get(i)? as usize;
        let t = s.get(i + 1..i + 1 + d)?;
        i += 1 + d;
        Some(t)
    })
}

/// Elements of each tensor, summed.
pub fn numel(s: &[u64]) -> u64 {
    tensors(s)
        .map(|t| t.iter().fold(1u64, |a, &d| a.saturating_mul(d)))
        .fold(0u64, |a, n| a.saturating_add(n))
}

/// `[[4], [2, 3]]`.
pub fn fmt_shapes(s: &[u64]) -> String {
    let ts: Vec<String> = tensors(s)
        .map(|t| {
            let d: Vec<String> = t.iter().map(|x| x.to_string()).collect();
            format!("[{}]", d.join(", "))
        })
        .collect();
    format!("[{}]", ts.join(", "))
}

/// What a record is, from its profiling name (`nccl:all_reduce`): one of ringside's ops, the
/// record that closes a coalesced block, or an op ringside does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RecordKind {
    Op(OpKind),
    /// The record that closes a coalesced block (`nccl:coalesced`, `ALLGATHER_coalesced`...).
    Coalesced,
    Other,
}

impl RecordKind {
    /// The kind of an op name (the part after `backend:`).
    pub fn of(op: &str) -> RecordKind {
        let k = match op {
            "all_reduce" | "allreduce" | "allreduce_coalesced" | "all_reduce_coalesced" => {
                OpKind::Allreduce
            }
            "broadcast" | "_broadcast_oop" | "broadcast_coalesced" => OpKind::Broadcast,
            "reduce" | "_reduce_oop" => OpKind::Reduce,
            // torch's `_all_gather_base` is ProcessGroupNCCL's `_allgather_base`: both are
            // `all_gather_into_tensor` (one output tensor of every member's input)
            "all_gather"
            | "allgather"
            | "_all_gather_base"
            | "_allgather_base"
            | "allgather_base"
            | "all_gather_into_tensor"
            | "allgather_into_tensor"
            | "all_gather_into_tensor_coalesced"
            | "allgather_coalesced"
            | "allgather_into_tensor_coalesced" => OpKind::Allgather,
            "reduce_scatter"
            | "_reduce_scatter_base"
            | "reduce_scatter_base"
            | "reduce_scatter_tensor"
            | "reduce_scatter_tensor_coalesced" => OpKind::ReduceScatter,
            "all_to_all" | "all_to_all_single" | "alltoall" | "alltoall_base" => OpKind::AllToAll,
            "gather" => OpKind::Gather,
            "scatter" => OpKind::Scatter,
            "barrier" | "all_reduce_barrier" => OpKind::Barrier,
            "send" => OpKind::Send,
            "recv" => OpKind::Recv,
            "coalesced" | "ALLGATHER_coalesced" | "REDUCE_SCATTER_coalesced" => {
                return RecordKind::Coalesced
            }
            _ => return RecordKind::Other,
        };
        RecordKind::Op(k)
    }

    /// ringside's op, when the record is one.
    pub fn op(self) -> Option<OpKind> {
        match self {
            RecordKind::Op(k) => Some(k),
            _ => None,
        }
    }

    pub fn is(self, k: OpKind) -> bool {
        self == RecordKind::Op(k)
    }

    pub fn is_p2p(self) -> bool {
        self.is(OpKind::Send) || self.is(OpKind::Recv)
    }

    /// The op as the diagnosis names it; `recorded` is the op name as the dump wrote it.
    pub fn call_op(self, recorded: &str) -> CallOp {
        match self {
            RecordKind::Op(k) => CallOp::Op(k),
            _ => CallOp::Recorded(recorded.into()),
        }
    }
}

/// One name for the spellings of one op that torch and its backends write: torch's
/// `_all_gather_base` and ProcessGroupNCCL's `_allgather_base` are both
/// `all_gather_into_tensor`, and `_reduce_scatter_base` is `reduce_scatter_tensor`, so that
/// ranks recorded by different versions agree and reports name the op as users call it.
pub fn canonical_op(op: &str) -> &str {
    match op {
        "_all_gather_base" | "_allgather_base" | "allgather_base" | "allgather_into_tensor" => {
            "all_gather_into_tensor"
        }
        "_reduce_scatter_base" | "reduce_scatter_base" => "reduce_scatter_tensor",
        other => other,
    }
}

/// torch's name of an op (`all_reduce`), as a profiling name writes it after the backend.
pub fn torch_name(op: OpKind) -> &'static str {
    match op {
        OpKind::Allreduce => "all_reduce",
        OpKind::Broadcast => "broadcast",
        OpKind::Reduce => "reduce",
        OpKind::Allgather => "all_gather",
        OpKind::ReduceScatter => "reduce_scatter",
        OpKind::Barrier => "barrier",
        OpKind::AllToAll => "all_to_all",
        OpKind::Gather => "gather",
        OpKind::Scatter => "scatter",
        OpKind::Send => "send",
        OpKind::Recv => "recv",
    }
}

/// Bytes of one element of a torch dtype name (`Float`, `BFloat16`; or its Python spelling).
pub fn dtype_bytes(name: &str) -> u64 {
    match name {
        "Double" | "Long" | "ComplexFloat" | "float64" | "int64" => 8,
        "Half" | "BFloat16" | "Short" | "float16" | "bfloat16" => 2,
        "Byte" | "Char" | "Bool" | "Float8_e4m3fn" | "Float8_e5m2" | "uint8" | "int8" => 1,
        "ComplexDouble" => 16,
        _ => 4,
    }
}

/// The ringside dtype of a record's comma-separated torch dtype names (the real buffers only:
/// modeled bytes carry the size).
pub fn dtype(names: &str) -> Dtype {
    match names.split(',').next().unwrap_or("") {
        "Double" | "float64" => Dtype::F64,
        "Long" | "int64" => Dtype::I64,
        _ => Dtype::F32,
    }
}

/// torch's name of a ringside dtype and the bytes of one element.
pub fn torch_dtype(d: Dtype) -> (&'static str, u64) {
    match d {
        Dtype::F32 => ("Float", 4),
        Dtype::F64 => ("Double", 8),
        Dtype::I64 => ("Long", 8),
    }
}

/// A record's state at its rank's dump time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    Scheduled,
    Started,
    Completed,
    /// A state string of a newer torch.
    Other,
}

/// The peer of a point-to-point record, in group ranks (`send 0->1`, `recv 1<-?`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Peer {
    pub me: u32,
    /// None: any source.
    pub peer: Option<u32>,
}

/// An optional count or id of a record (a seq, a timeout) in 8 bytes where `Option<u64>`
/// takes 16: a job's dumps hold millions of records. Values read from dumps are at most
/// `i64::MAX`, so `u64::MAX` is free to mean none.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct OptU64(u64);

impl OptU64 {
    pub fn new(v: Option<u64>) -> OptU64 {
        OptU64(v.filter(|&v| v != u64::MAX).unwrap_or(u64::MAX))
    }

    pub fn get(self) -> Option<u64> {
        (self.0 != u64::MAX).then_some(self.0)
    }
}

impl std::fmt::Debug for OptU64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// One Flight Recorder record.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Position in the dump, oldest first.
    pub index: u32,
    pub pg_id: Option<i64>,
    /// Group name and description (`process_group`), interned in the dump's strings.
    pub group_name: u32,
    pub group_desc: u32,
    /// Its (`group_name`, `group_desc`) in the dump's `groups`.
    pub group: u32,
    /// `collective_seq_id` (`seq_id` before 2.0).
    pub seq: OptU64,
    pub p2p_seq: OptU64,
    /// The backend prefix of the profiling name (`nccl`, `gloo`...), interned.
    pub backend: u32,
    /// The op name after the backend, without point-to-point peers, interned.
    pub op: u32,
    pub kind: RecordKind,
    pub peer: Option<Peer>,
    /// Wall-clock (Unix epoch) ns of the call on its rank's host.
    pub time_ns: u64,
    /// When the rank noticed the completion (0: unknown).
    pub completed_ns: u64,
    /// Interned in the dump's shapes.
    pub input: u32,
    pub output: u32,
    /// Comma-separated dtype names, interned in the dump's strings.
    pub in_dtypes: u32,
    pub out_dtypes: u32,
    pub state: State,
    pub retired: Option<bool>,
    pub timeout_ms: OptU64,
    pub is_p2p: bool,
    /// The innermost stack frame outside torch (`train.py:86`), interned; 0 without frames.
    pub site: u32,
    /// A hash of the op, sizes and dtypes: records with equal hashes called alike (records
    /// with different hashes are compared in full).
    pub sig: u64,
}

impl Record {
    /// The rank has left the call: it completed, or the watchdog retired it (gloo retires a
    /// call that failed as one that succeeded).
    pub fn left(&self) -> bool {
        self.state == State::Completed || self.retired == Some(true)
    }
}

/// What records of one call share (everything but their seqs, times and state), kept once per
/// dump: a dump of 2,000 records holds a few dozen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Proto {
    pg_id: Option<i64>,
    group_name: u32,
    group_desc: u32,
    group: u32,
    backend: u32,
    op: u32,
    kind: RecordKind,
    peer: Option<Peer>,
    input: u32,
    output: u32,
    in_dtypes: u32,
    out_dtypes: u32,
    timeout_ms: OptU64,
    is_p2p: bool,
    site: u32,
    sig: u64,
}

/// A record as a dump keeps it: its own values, and its [`Proto`].
#[derive(Clone, Copy, Debug, PartialEq)]
struct Entry {
    seq: OptU64,
    p2p_seq: OptU64,
    time_ns: u64,
    completed_ns: u64,
    proto: u32,
    state: State,
    retired: Option<bool>,
}

/// The records of one dump, oldest first, in about 40 bytes each (a job of 4,096 ranks holds
/// 8 million): each is read back whole as a [`Record`].
#[derive(Clone, Debug, Default)]
pub struct Records {
    entries: Vec<Entry>,
    /// In the order of their first records (what [`Records::first_sites`] relies on).
    protos: Vec<Proto>,
    /// While the dump is read: each proto's index, and the protos used last by their
    /// signatures, tried first.
    index: BTreeMap<Proto, u32>,
    recent: [u32; 32],
}

impl Records {
    pub fn with_capacity(n: usize) -> Records {
        Records {
            entries: Vec::with_capacity(n),
            ..Records::default()
        }
    }

    /// Adds `r` (its `index` is its position).
    pub fn push(&mut self, r: &Record) {
        let p = Proto {
            pg_id: r.pg_id,
            group_name: r.group_name,
            group_desc: r.group_desc,
            group: r.group,
            backend: r.backend,
            op: r.op,
            kind: r.kind,
            peer: r.peer,
            input: r.input,
            output: r.output,
            in_dtypes: r.in_dtypes,
            out_dtypes: r.out_dtypes,
            timeout_ms: r.timeout_ms,
            is_p2p: r.is_p2p,
            site: r.site,
            sig: r.sig,
        };
        let slot = (p.sig ^ u64::from(p.group) ^ u64::from(p.site) << 7) as usize % 32;
        let cached = self.recent[slot];
        let proto = match self.protos.get(cached.wrapping_sub(1) as usize) {
            Some(q) if *q == p => cached - 1,
            _ => {
                let protos = &mut self.protos;
                let i = *self.index.entry(p).or_insert_with(|| {
                    protos.push(p);
                    protos.len() as u32 - 1
                });
                self.recent[slot] = i + 1;
                i
            }
        };
        self.entries.push(Entry {
            seq: r.seq,
            p2p_seq: r.p2p_seq,
            time_ns: r.time_ns,
            completed_ns: r.completed_ns,
            proto,
            state: r.state,
            retired: r.retired,
        });
    }

    /// Done adding: the index is dropped.
    pub fn finish(&mut self) {
        self.index = Default::default();
        self.entries.shrink_to_fit();
    }

    /// Record `i`; panics when there is none, as indexing does.
    pub fn get(&self, i: usize) -> Record {
        let e = self.entries[i];
        let p = self.protos[e.proto as usize];
        Record {
            index: i as u32,
            pg_id: p.pg_id,
            group_name: p.group_name,
            group_desc: p.group_desc,
            group: p.group,
            seq: e.seq,
            p2p_seq: e.p2p_seq,
            backend: p.backend,
            op: p.op,
            kind: p.kind,
            peer: p.peer,
            time_ns: e.time_ns,
            completed_ns: e.completed_ns,
            input: p.input,
            output: p.output,
            in_dtypes: p.in_dtypes,
            out_dtypes: p.out_dtypes,
            state: e.state,
            retired: e.retired,
            timeout_ms: p.timeout_ms,
            is_p2p: p.is_p2p,
            site: p.site,
            sig: p.sig,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn first(&self) -> Option<Record> {
        (!self.is_empty()).then(|| self.get(0))
    }

    pub fn last(&self) -> Option<Record> {
        self.len().checked_sub(1).map(|i| self.get(i))
    }

    /// Every record, oldest first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Record> + DoubleEndedIterator + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Record `i`'s hash of op, sizes and dtypes ([`Record::sig`]).
    pub fn sig(&self, i: usize) -> u64 {
        self.protos[self.entries[i].proto as usize].sig
    }

    /// The records' call sites in the order of the records that first show them, without
    /// reading every record: each [`Proto`] comes in the order of its first record, so a site
    /// comes first where its first record's proto does (a site may come again, later).
    pub fn first_sites(&self) -> impl Iterator<Item = u32> + '_ {
        self.protos.iter().map(|p| p.site)
    }

    /// The records' times only (what scanning every record most often needs).
    pub fn times(&self) -> impl Iterator<Item = u64> + '_ {
        self.entries.iter().map(|e| e.time_ns)
    }
}

impl FromIterator<Record> for Records {
    fn from_iter<I: IntoIterator<Item = Record>>(it: I) -> Records {
        let mut out = Records::default();
        for r in it {
            out.push(&r);
        }
        out.finish();
        out
    }
}

/// A `pg_config` entry: a group as the dumping rank registered it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgConfig {
    pub name: String,
    pub desc: String,
    /// Global ranks; None when the string could not be read as a list of ranks. Shared: the
    /// dumps of a job list the same groups, and a world of thousands of ranks is listed once.
    pub ranks: Option<std::sync::Arc<[u32]>>,
}

/// A `pg_status` entry: progress per group, keyed by the rank's own `pg_id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgStatus {
    pub pg_id: String,
    pub enqueued: Option<i64>,
    pub started: Option<i64>,
    pub completed: Option<i64>,
}

/// How a dump was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Format {
    Pickle,
    Json,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Pickle => "pickle",
            Format::Json => "json",
        }
    }
}

/// One rank's dump.
#[derive(Clone, Debug)]
pub struct Dump {
    pub file: String,
    pub rank: u32,
    pub format: Format,
    pub version: Option<String>,
    pub lib_version: Option<String>,
    pub pg_config: Vec<PgConfig>,
    pub pg_status: Vec<PgStatus>,
    pub records: Records,
    pub strings: Table<Box<str>>,
    pub shapes: Table<Shapes>,
    /// The dump's records carry stack frames (pickle dumps of torch do, JSON never).
    pub has_frames: bool,
    /// The first record's `record_id`: above 0, the ring buffer has dropped older records
    /// (`record_id` counts every record of the process).
    pub first_id: Option<u64>,
    /// The distinct groups its records name, as (`group_name`, `group_desc`), in the order
    /// they first appear.
    pub groups: Vec<(u32, u32)>,
}

impl Dump {
    pub fn str(&self, i: u32) -> &str {
        self.strings.get(i)
    }

    pub fn shapes(&self, i: u32) -> &[u64] {
        self.shapes.get(i)
    }

    /// The profiling name as recorded (`gloo:all_reduce`).
    pub fn profiling_name(&self, r: &Record) -> String {
        let b = self.str(r.backend);
        let op = self.str(r.op);
        let peer = match (r.kind.op(), r.peer) {
            (Some(OpKind::Send), Some(p)) => format!(" {}->{}", p.me, fmt_peer(p.peer)),
            (Some(OpKind::Recv), Some(p)) => format!(" {}<-{}", p.me, fmt_peer(p.peer)),
            _ => String::new(),
        };
        if b.is_empty() {
            format!("{op}{peer}")
        } else {
            format!("{b}:{op}{peer}")
        }
    }

    /// The progress the dump's `pg_status` reports for `pg_id`.
    pub fn status(&self, pg_id: i64) -> Option<&PgStatus> {
        let key = pg_id.to_string();
        self.pg_status.iter().find(|s| s.pg_id == key)
    }
}

fn fmt_peer(p: Option<u32>) -> String {
    p.map_or("?".to_string(), |p| p.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_flattened_and_read_back() {
        let s: Shapes = vec![2, 1, 4, 2, 2, 3];
        let t: Vec<&[u64]> = tensors(&s).collect();
        assert_eq!(t, [&[4u64][..], &[2, 3][..]]);
        assert_eq!(numel(&s), 10);
        assert_eq!(fmt_shapes(&s), "[[4], [2, 3]]");
        assert_eq!(fmt_shapes(&[0]), "[]");
        assert_eq!(numel(&[5, 1]), 0, "a malformed encoding stops early");
    }

    #[test]
    fn spellings_of_one_op_read_alike() {
        for op in [
            "_allgather_base",
            "_all_gather_base",
            "all_gather_into_tensor",
        ] {
            assert_eq!(canonical_op(op), "all_gather_into_tensor");
            assert!(RecordKind::of(op).is(OpKind::Allgather), "{op}");
        }
        assert_eq!(
            canonical_op("_reduce_scatter_base"),
            "reduce_scatter_tensor"
        );
        assert!(RecordKind::of("_reduce_scatter_base").is(OpKind::ReduceScatter));
        assert_eq!(canonical_op("all_gather"), "all_gather");
    }

    #[test]
    fn optional_counts_keep_none_apart() {
        assert_eq!(OptU64::new(None).get(), None);
        assert_eq!(OptU64::new(Some(0)).get(), Some(0));
        assert_eq!(
            OptU64::new(Some(i64::MAX as u64)).get(),
            Some(i64::MAX as u64)
        );
        // a job's dumps hold millions of records: each is kept small
        assert!(std::mem::size_of::<Record>() <= 128);
        assert!(std::mem::size_of::<Entry>() <= 40);
    }

    #[test]
    fn first_sites_keep_the_order_of_the_records() {
        let record = |site: u32, sig: u64| Record {
            index: 0,
            pg_id: None,
            group_name: 0,
            group_desc: 0,
            group: 0,
            seq: OptU64::new(None),
            p2p_seq: OptU64::new(None),
            backend: 0,
            op: 0,
            kind: RecordKind::Other,
            peer: None,
            time_ns: 0,
            completed_ns: 0,
            input: 0,
            output: 0,
            in_dtypes: 0,
            out_dtypes: 0,
            state: State::Scheduled,
            retired: None,
            timeout_ms: OptU64::new(None),
            is_p2p: false,
            site,
            sig,
        };
        let sites = [5, 0, 3, 5, 7, 3, 9, 7];
        let records: Records = sites
            .iter()
            .enumerate()
            .map(|(i, &site)| record(site, i as u64 % 3))
            .collect();
        let once = |it: &mut dyn Iterator<Item = u32>| {
            let mut v: Vec<u32> = Vec::new();
            for s in it {
                if !v.contains(&s) {
                    v.push(s);
                }
            }
            v
        };
        assert_eq!(
            once(&mut records.first_sites()),
            once(&mut records.iter().map(|r| r.site))
        );
    }

    #[test]
    fn tables_intern_once() {
        let mut t: Table<Box<str>> = Table::default();
        let a = t.intern("a");
        assert_eq!(t.intern("a"), a);
        assert_eq!(t.intern(""), 0);
        assert_eq!(&**t.get(a), "a");
    }
}
