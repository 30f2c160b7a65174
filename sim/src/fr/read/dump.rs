//! From a decoded tree to a [`Dump`], by the keys present rather than by the version string:
//! every layout from the bare list of PyTorch 2.2 to FR 2.10+ (see the table in the module
//! doc of `fr`). Known keys must have their known types; unknown keys are ignored.

use super::tree::{Node, NodeId, Tree};
use crate::fr::model::{
    Dump, Format, OptU64, Peer, PgConfig, PgStatus, Record, RecordKind, State, Table,
};
use crate::proto::vocab::OpKind;
use std::sync::Arc;

/// At most this many records per dump (torch's default buffer holds 2,000).
pub const MAX_ENTRIES: usize = 1_000_000;
/// At most this many tensors per record, and dimensions per tensor.
const MAX_TENSORS: usize = 65_536;
const MAX_DIMS: usize = 64;
/// Stack frames looked at for the call site.
const MAX_FRAMES: usize = 64;
/// At most this many groups in `pg_config` and `pg_status`.
const MAX_GROUPS: usize = 100_000;

/// The per-node tables of a conversion, which a reader keeps from one dump to the next.
#[derive(Debug, Default)]
pub struct Memo {
    sid: Vec<u32>,
    slot: Vec<u8>,
    frame: Vec<u32>,
    /// The rank lists read last from strings, and what they gave, newest first.
    ranks: Vec<(Box<str>, Arc<[u32]>)>,
}

/// How many rank lists a reader remembers: a dump lists the world and the few groups its rank
/// is in, and the next dump of the job lists the same world.
const REMEMBERED_LISTS: usize = 16;

/// Reads one dump's tree. `file` and `rank` come from the file name.
pub fn to_dump(
    t: &Tree,
    file: &str,
    rank: u32,
    format: Format,
    memo: &mut Memo,
) -> Result<Dump, String> {
    let mut c = Conv {
        t,
        strings: Table::default(),
        shapes: Table::default(),
        scratch: Vec::new(),
        text: String::new(),
        // a record visits a few dozen nodes; shared nodes may be visited once per reference,
        // which is what this bounds
        budget: 64 * t.len() as u64 + 1_000_000,
        has_frames: false,
        first_id: None,
        sid: refill(&mut memo.sid, t.strings(), NONE),
        slot: refill(&mut memo.slot, t.strings(), UNSEEN),
        frame: refill(&mut memo.frame, t.len(), NONE),
        ranks: std::mem::take(&mut memo.ranks),
        prof: Vec::new(),
        sigs: [None; SIGS],
        recent_shapes: [0; 2],
        last_state: (NONE, State::Other),
    };
    let (top, entries) = match t.get(t.root) {
        Node::Dict(d) => (Some(d), t.field(d, "entries")),
        // PyTorch <= 2.2 wrote the list of entries alone
        Node::List(_) => (None, Some(t.root)),
        other => {
            return Err(format!(
                "not a Flight Recorder dump: the document is {}, not a dict",
                other.kind()
            ))
        }
    };
    if let Some(d) = top {
        let known = ["entries", "version", "pg_config", "pg_status"];
        if !known.iter().any(|k| t.field(d, k).is_some()) {
            return Err(
                "not a Flight Recorder dump: none of the keys `entries`, `version`, `pg_config`, \
                 `pg_status`"
                    .into(),
            );
        }
    }
    let get = |k: &str| top.and_then(|d| t.field(d, k));
    let version = get("version")
        .map(|v| c.string(v, "`version`"))
        .transpose()?;
    let lib_version = get("comm_lib_version")
        .or_else(|| get("nccl_version"))
        .map(|v| c.string(v, "`comm_lib_version`"))
        .transpose()?;
    let pg_config = match get("pg_config") {
        Some(v) => c.pg_config(v)?,
        None => Vec::new(),
    };
    let pg_status = match get("pg_status") {
        Some(v) => c.pg_status(v)?,
        None => Vec::new(),
    };
    let mut records = crate::fr::model::Records::default();
    let mut groups: Vec<(u32, u32)> = Vec::new();
    // the records' groups: each record's is mostly the one before's
    let mut seen: std::collections::BTreeMap<(u32, u32), u32> = Default::default();
    let mut last: Option<((u32, u32), u32)> = None;
    if let Some(e) = entries {
        let items = match t.get(e) {
            Node::List(v) | Node::Tuple(v) => t.items(v),
            other => return Err(format!("`entries` is {}, expected a list", other.kind())),
        };
        if items.len() > MAX_ENTRIES {
            return Err(format!(
                "`entries` holds {} records; at most {MAX_ENTRIES} are read",
                items.len()
            ));
        }
        records = crate::fr::model::Records::with_capacity(items.len());
        for (i, &e) in items.iter().enumerate() {
            let mut r = c
                .record(e, i as u32)
                .map_err(|m| format!("entry {i}: {m}"))?;
            let g = (r.group_name, r.group_desc);
            r.group = match last {
                Some((k, x)) if k == g => x,
                _ => {
                    let x = *seen.entry(g).or_insert_with(|| {
                        groups.push(g);
                        groups.len() as u32 - 1
                    });
                    last = Some((g, x));
                    x
                }
            };
            records.push(&r);
        }
    }
    records.finish();
    memo.sid = c.sid;
    memo.slot = c.slot;
    memo.frame = c.frame;
    memo.ranks = c.ranks;
    Ok(Dump {
        file: file.to_string(),
        rank,
        format,
        version,
        lib_version,
        pg_config,
        pg_status,
        records,
        strings: c.strings,
        shapes: c.shapes,
        has_frames: c.has_frames,
        first_id: c.first_id,
        groups,
    })
}

/// `v`'s allocation holding `n` copies of `x`.
fn refill<T: Copy>(v: &mut Vec<T>, n: usize, x: T) -> Vec<T> {
    let mut v = std::mem::take(v);
    v.clear();
    v.resize(n, x);
    v
}

struct Conv<'t, 'a> {
    t: &'t Tree<'a>,
    strings: Table<Box<str>>,
    shapes: Table<Vec<u64>>,
    scratch: Vec<u64>,
    text: String,
    budget: u64,
    has_frames: bool,
    /// The first record's `record_id`.
    first_id: Option<u64>,
    /// Per node: its interned string (`NONE` when not looked up yet). A pickle memoizes its
    /// strings, so one node serves every record that names the same key, op or group.
    sid: Vec<u32>,
    /// Per node: the record field a key string names (`UNSEEN` when not looked up yet).
    slot: Vec<u8>,
    /// Per frame dict node: the call site it gives, `TORCH` for a frame of torch itself.
    frame: Vec<u32>,
    /// Per interned profiling name: what it parses to.
    prof: Vec<Option<Profiling>>,
    ranks: Vec<(Box<str>, Arc<[u32]>)>,
    /// The (op, sizes, dtypes) of recent records and their hashes, by a hash of the key: a
    /// job repeats a few calls in turn (a pipeline's sends and receives between its
    /// all_reduces).
    sigs: [Option<(CallKey, u64)>; SIGS],
    /// The two shapes interned last.
    recent_shapes: [u32; 2],
    /// The string read last as a record's `state`, and the state it names (a pickle memoizes
    /// the few there are).
    last_state: (u32, State),
}

/// How many signatures a reader remembers.
const SIGS: usize = 16;

/// What a record's signature hashes: op, input and output sizes, input and output dtypes.
type CallKey = (u32, u32, u32, u32, u32);

/// A parsed profiling name: backend, op (both interned), kind and peer.
type Profiling = (u32, u32, RecordKind, Option<Peer>);

const NONE: u32 = u32::MAX;
const TORCH: u32 = u32::MAX - 1;
const UNSEEN: u8 = u8::MAX;
const OTHER: u8 = u8::MAX - 1;

/// The record field a key names.
fn slot_of(k: &str) -> u8 {
    match k {
        "record_id" => 0,
        "pg_id" => 1,
        "process_group" => 2,
        "collective_seq_id" => 3,
        "seq_id" => 4,
        "p2p_seq_id" => 5,
        "op_id" => 6,
        "profiling_name" => 7,
        "time_created_ns" => 8,
        "duration_ms" => 9,
        "input_sizes" => 10,
        "output_sizes" => 11,
        "input_dtypes" => 12,
        "output_dtypes" => 13,
        "state" => 14,
        "time_discovered_completed_ns" => 15,
        "retired" => 16,
        "timeout_ms" => 17,
        "is_p2p" => 18,
        "frames" => 19,
        _ => OTHER,
    }
}

fn found(n: Node) -> String {
    format!("found {}", n.kind())
}

impl Conv<'_, '_> {
    fn spend(&mut self, n: u64) -> Result<(), String> {
        if self.budget < n {
            return Err(
                "the dump refers to the same data too many times (a pickle that \
                        expands far beyond its size is not a dump)"
                    .into(),
            );
        }
        self.budget -= n;
        Ok(())
    }

    fn string(&self, id: NodeId, what: &str) -> Result<String, String> {
        match self.t.get(id) {
            Node::Str(s) => Ok(self.t.text(s).to_string()),
            n => Err(format!("{what} should be a string, {}", found(n))),
        }
    }

    /// An integer, also written as a decimal string (the analyzer's test fixtures do).
    #[inline]
    fn int(&self, id: NodeId, what: &str) -> Result<i64, String> {
        match self.t.get(id) {
            Node::Int(v) => Ok(v),
            Node::Str(s) if self.t.text(s).trim().parse::<i64>().is_ok() => {
                Ok(self.t.text(s).trim().parse().unwrap_or(0))
            }
            n => Err(format!("`{what}` should be an integer, {}", found(n))),
        }
    }

    #[inline]
    fn opt_int(&self, id: Option<NodeId>, what: &str) -> Result<Option<i64>, String> {
        match id {
            None => Ok(None),
            Some(id) if matches!(self.t.get(id), Node::None) => Ok(None),
            Some(id) => self.int(id, what).map(Some),
        }
    }

    #[inline]
    fn unsigned(&self, id: Option<NodeId>, what: &str) -> Result<Option<u64>, String> {
        if let Some(Node::Int(v)) = id.map(|id| self.t.get(id)) {
            return Ok(u64::try_from(v).ok());
        }
        match self.opt_int(id, what)? {
            Some(v) if v < 0 => Ok(None),
            v => Ok(v.map(|v| v as u64)),
        }
    }

    fn pg_config(&mut self, id: NodeId) -> Result<Vec<PgConfig>, String> {
        let t = self.t;
        let Node::Dict(d) = t.get(id) else {
            return Err(format!(
                "`pg_config` should be a dict, {}",
                found(t.get(id))
            ));
        };
        if d.len() > MAX_GROUPS {
            return Err(format!("`pg_config` names {} groups", d.len()));
        }
        let mut out = Vec::with_capacity(d.len());
        for &[k, v] in t.pairs(d) {
            self.spend(4)?;
            let key = match t.get(k) {
                Node::Str(s) => t.text(s).to_string(),
                Node::Int(i) => i.to_string(),
                n => {
                    return Err(format!(
                        "a `pg_config` key should be a group name, {}",
                        found(n)
                    ))
                }
            };
            match t.get(v) {
                // 1.5 and later: name -> {name, desc, ranks: "[0, 1]"}
                Node::Dict(g) => {
                    let name = match t.field(g, "name") {
                        Some(n) => self.string(n, "`pg_config` `name`")?,
                        None => key.clone(),
                    };
                    let desc = match t.field(g, "desc") {
                        Some(n) => self.string(n, "`pg_config` `desc`")?,
                        None => String::new(),
                    };
                    let ranks = match t.field(g, "ranks") {
                        Some(r) => self.rank_list(r, &key)?,
                        None => None,
                    };
                    out.push(PgConfig { name, desc, ranks });
                }
                // before 1.5: pg_id -> [ranks]
                Node::List(_) | Node::Tuple(_) => {
                    let ranks = self.rank_list(v, &key)?;
                    out.push(PgConfig {
                        name: key,
                        desc: String::new(),
                        ranks,
                    });
                }
                n => {
                    return Err(format!(
                        "`pg_config` entry `{key}` should be a dict, {}",
                        found(n)
                    ))
                }
            }
        }
        Ok(out)
    }

    /// `"[0, 1, 2]"` (or a list of ints); None when the string is not such a list.
    fn rank_list(&mut self, id: NodeId, key: &str) -> Result<Option<Arc<[u32]>>, String> {
        let t = self.t;
        match t.get(id) {
            Node::Str(s) => {
                let inner = t
                    .text(s)
                    .trim()
                    .trim_start_matches('[')
                    .trim_end_matches(']');
                if inner.trim().is_empty() {
                    return Ok(Some(Arc::from([])));
                }
                // every dump of a job lists the same world and groups: a list read before is
                // shared, not read again
                if let Some(i) = self.ranks.iter().position(|(text, _)| **text == *inner) {
                    let known = self.ranks.remove(i);
                    self.spend(known.1.len() as u64)?;
                    let v = Arc::clone(&known.1);
                    self.ranks.insert(0, known);
                    return Ok(Some(v));
                }
                let mut v = Vec::new();
                if inner
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b == b' ' || b == b',')
                {
                    // read without the str machinery
                    for part in inner.as_bytes().split(|&b| b == b',') {
                        self.spend(1)?;
                        match decimal(part.trim_ascii()) {
                            Some(r) => v.push(r),
                            None => return Ok(None),
                        }
                    }
                } else {
                    for part in inner.split(',') {
                        self.spend(1)?;
                        match part.trim().parse::<u32>() {
                            Ok(r) => v.push(r),
                            Err(_) => return Ok(None),
                        }
                    }
                }
                let v: Arc<[u32]> = v.into();
                self.ranks.truncate(REMEMBERED_LISTS - 1);
                self.ranks.insert(0, (inner.into(), Arc::clone(&v)));
                Ok(Some(v))
            }
            Node::List(items) | Node::Tuple(items) => {
                let items = t.items(items);
                self.spend(items.len() as u64)?;
                let mut v = Vec::with_capacity(items.len());
                for &i in items {
                    let r = self.int(i, "ranks")?;
                    match u32::try_from(r) {
                        Ok(r) => v.push(r),
                        Err(_) => return Ok(None),
                    }
                }
                Ok(Some(v.into()))
            }
            n => Err(format!(
                "`pg_config` `{key}` `ranks` should be a string like \"[0, 1]\", {}",
                found(n)
            )),
        }
    }

    fn pg_status(&mut self, id: NodeId) -> Result<Vec<PgStatus>, String> {
        let t = self.t;
        let Node::Dict(d) = t.get(id) else {
            return Err(format!(
                "`pg_status` should be a dict, {}",
                found(t.get(id))
            ));
        };
        if d.len() > MAX_GROUPS {
            return Err(format!("`pg_status` names {} groups", d.len()));
        }
        let mut out = Vec::with_capacity(d.len());
        for &[k, v] in t.pairs(d) {
            self.spend(4)?;
            let pg_id = match t.get(k) {
                Node::Str(s) => t.text(s).to_string(),
                Node::Int(i) => i.to_string(),
                n => return Err(format!("a `pg_status` key should be a pg_id, {}", found(n))),
            };
            let Node::Dict(g) = t.get(v) else {
                return Err(format!(
                    "`pg_status` `{pg_id}` should be a dict, {}",
                    found(t.get(v))
                ));
            };
            // JSON dumps write these numbers as strings
            out.push(PgStatus {
                enqueued: self.opt_int(
                    t.field(g, "last_enqueued_collective"),
                    "last_enqueued_collective",
                )?,
                started: self.opt_int(
                    t.field(g, "last_started_collective"),
                    "last_started_collective",
                )?,
                completed: self.opt_int(
                    t.field(g, "last_completed_collective"),
                    "last_completed_collective",
                )?,
                pg_id,
            });
        }
        Ok(out)
    }

    /// Flattened shapes of a list of tensor sizes, interned.
    fn shapes(&mut self, id: Option<NodeId>, what: &str) -> Result<u32, String> {
        let t = self.t;
        let Some(id) = id else { return Ok(0) };
        let items = match t.get(id) {
            Node::List(v) | Node::Tuple(v) => t.items(v),
            Node::None => return Ok(0),
            n => return Err(format!("`{what}` should be a list of sizes, {}", found(n))),
        };
        if items.len() > MAX_TENSORS {
            return Err(format!("`{what}` lists {} tensors", items.len()));
        }
        // the sizes of the last records come back most: they are compared in place first
        for i in self.recent_shapes {
            if let Some(spent) = sizes_are(t, items, self.shapes.get(i)) {
                self.spend(spent)?;
                return Ok(i);
            }
        }
        self.spend(items.len() as u64 + 1)?;
        let mut s = std::mem::take(&mut self.scratch);
        s.clear();
        s.push(items.len() as u64);
        for &ti in items {
            match t.get(ti) {
                Node::List(dims) | Node::Tuple(dims) => {
                    let dims = t.items(dims);
                    if dims.len() > MAX_DIMS {
                        return Err(format!(
                            "`{what}` has a tensor of {} dimensions",
                            dims.len()
                        ));
                    }
                    self.spend(dims.len() as u64)?;
                    s.push(dims.len() as u64);
                    for &d in dims {
                        match t.get(d) {
                            Node::Int(v) if v >= 0 => s.push(v as u64),
                            n => {
                                return Err(format!(
                                    "`{what}` should hold sizes (integers >= 0), {}",
                                    found(n)
                                ))
                            }
                        }
                    }
                }
                // hook recorders and the uneven forms write a bare number per tensor
                Node::Int(v) if v >= 0 => {
                    s.push(1);
                    s.push(v as u64);
                }
                n => return Err(format!("`{what}` should be a list of sizes, {}", found(n))),
            }
        }
        let i = self.shapes.intern(&s[..]);
        self.recent_shapes = [i, self.recent_shapes[0]];
        self.scratch = s;
        Ok(i)
    }

    fn dtypes(&mut self, id: Option<NodeId>, what: &str) -> Result<u32, String> {
        let t = self.t;
        let Some(id) = id else { return Ok(0) };
        // one tensor's dtype, the usual: its string, interned once
        if let Node::List(v) | Node::Tuple(v) = t.get(id) {
            if let [one] = *t.items(v) {
                if let Node::Str(_) = t.get(one) {
                    return self.intern_str(one, what);
                }
            }
        }
        let mut s = std::mem::take(&mut self.text);
        s.clear();
        let add = |n: Node, s: &mut String| -> Result<(), String> {
            if !s.is_empty() {
                s.push(',');
            }
            match n {
                Node::Str(x) => s.push_str(t.text(x)),
                // the numbering of c10::ScalarType
                Node::Int(i) => s.push_str(scalar_type(i)),
                n => return Err(format!("`{what}` should hold dtype names, {}", found(n))),
            }
            Ok(())
        };
        match t.get(id) {
            Node::List(v) | Node::Tuple(v) => {
                let v = t.items(v);
                if v.len() > MAX_TENSORS {
                    return Err(format!("`{what}` lists {} dtypes", v.len()));
                }
                self.spend(v.len() as u64 + 1)?;
                for &d in v {
                    add(t.get(d), &mut s)?;
                }
            }
            Node::None => {}
            n @ Node::Str(_) => add(n, &mut s)?,
            n => {
                return Err(format!(
                    "`{what}` should be a list of dtype names, {}",
                    found(n)
                ))
            }
        }
        if s.len() > 1 << 20 {
            return Err(format!("`{what}` is longer than 1 MiB"));
        }
        let i = self.strings.intern(s.as_str());
        self.text = s;
        Ok(i)
    }

    #[inline]
    fn intern_str(&mut self, id: NodeId, what: &str) -> Result<u32, String> {
        match self.t.get(id) {
            Node::Str(s) => {
                let cached = self.sid[s as usize];
                if cached != NONE {
                    return Ok(cached);
                }
                let text = self.t.text(s);
                if text.len() > 1 << 20 {
                    return Err(format!("`{what}` is longer than 1 MiB"));
                }
                let i = self.strings.intern(text);
                self.sid[s as usize] = i;
                Ok(i)
            }
            n => Err(format!("`{what}` should be a string, {}", found(n))),
        }
    }

    /// The innermost frame outside torch, as `file:line`.
    fn site(&mut self, id: NodeId) -> Result<u32, String> {
        let t = self.t;
        let frames = match t.get(id) {
            Node::List(v) | Node::Tuple(v) => t.items(v),
            Node::None => return Ok(0),
            n => return Err(format!("`frames` should be a list, {}", found(n))),
        };
        self.has_frames = true;
        for &f in frames.iter().take(MAX_FRAMES) {
            self.spend(4)?;
            // a dict is a node, with its place in the table
            let Node::Dict(d) = t.get(f) else {
                return Err(format!("a frame should be a dict, {}", found(t.get(f))));
            };
            let cached = self.frame[f as usize];
            if cached == TORCH {
                continue;
            }
            if cached != NONE {
                return Ok(cached);
            }
            let file = match t.field(d, "filename") {
                Some(x) => match t.get(x) {
                    Node::Str(s) => t.text(s),
                    n => {
                        return Err(format!(
                            "a frame's `filename` should be a string, {}",
                            found(n)
                        ))
                    }
                },
                None => continue,
            };
            if is_torch_frame(file) {
                self.frame[f as usize] = TORCH;
                continue;
            }
            let line = match t.field(d, "line") {
                Some(l) => self.int(l, "line")?,
                None => 0,
            };
            let mut s = std::mem::take(&mut self.text);
            s.clear();
            // a call site is shown in reports: the file's name as a terminal may show it
            s.push_str(&crate::text::safe(file));
            s.push(':');
            s.push_str(itoa::Buffer::new().format(line));
            let i = self.strings.intern(s.as_str());
            self.text = s;
            self.frame[f as usize] = i;
            return Ok(i);
        }
        Ok(0)
    }

    /// Reads record `index` (node `id`): its keys into slots in one pass, then each field in
    /// the order of [`Record`]'s, each a few lines read side by side.
    fn record(&mut self, id: NodeId, index: u32) -> Result<Record, String> {
        let t = self.t;
        let Node::Dict(d) = t.get(id) else {
            return Err(format!("a record should be a dict, {}", found(t.get(id))));
        };
        self.spend(d.len() as u64 + 1)?;
        let mut f: [Option<NodeId>; 20] = [None; 20];
        for &[k, v] in t.pairs(d) {
            let Node::Str(k) = t.get(k) else { continue };
            let mut slot = self.slot[k as usize];
            if slot == UNSEEN {
                slot = slot_of(t.text(k));
                self.slot[k as usize] = slot;
            }
            if slot != OTHER {
                f[slot as usize] = Some(v);
            }
        }
        let pg_id = self.opt_int(f[1], "pg_id")?;
        let (group_name, group_desc) = match f[2] {
            Some(pg) => match t.get(pg) {
                Node::List(v) | Node::Tuple(v) if !v.is_empty() && v.len() <= 2 => {
                    let v = t.items(v);
                    let name = self.group_part(v[0])?;
                    let desc = match v.get(1) {
                        Some(&x) => self.group_part(x)?,
                        None => 0,
                    };
                    (name, desc)
                }
                Node::Str(_) => (self.intern_str(pg, "process_group")?, 0),
                n => {
                    return Err(format!(
                        "`process_group` should be a (name, desc) pair, {}",
                        found(n)
                    ))
                }
            },
            None => match pg_id {
                // before 1.5 a group was known by its pg_id only
                Some(p) => (self.strings.intern(p.to_string().as_str()), 0),
                None => return Err("no `process_group` and no `pg_id`".into()),
            },
        };
        let seq = match f[3].or(f[4]) {
            Some(s) => self.unsigned(Some(s), "collective_seq_id")?,
            None => None,
        };
        let Some(pn) = f[7] else {
            return Err("no `profiling_name`".into());
        };
        let (backend, op, kind, peer) = match t.get(pn) {
            Node::Str(s) => {
                let raw = self.intern_str(pn, "profiling_name")? as usize;
                match self.prof.get(raw).copied().flatten() {
                    Some(p) => p,
                    None => {
                        let p = self.profiling(t.text(s))?;
                        if self.prof.len() <= raw {
                            self.prof.resize(raw + 1, None);
                        }
                        self.prof[raw] = Some(p);
                        p
                    }
                }
            }
            n => return Err(format!("`profiling_name` should be a string, {}", found(n))),
        };
        let state = match f[14].map(|s| t.get(s)) {
            None => State::Scheduled,
            Some(Node::Str(s)) if s == self.last_state.0 => self.last_state.1,
            Some(Node::Str(s)) => {
                let state = match t.text(s) {
                    "scheduled" => State::Scheduled,
                    "started" => State::Started,
                    "completed" => State::Completed,
                    _ => State::Other,
                };
                self.last_state = (s, state);
                state
            }
            Some(n) => return Err(format!("`state` should be a string, {}", found(n))),
        };
        let retired = match f[16].map(|s| t.get(s)) {
            None | Some(Node::None) => None,
            Some(Node::Bool(b)) => Some(b),
            Some(n) => return Err(format!("`retired` should be a boolean, {}", found(n))),
        };
        let is_p2p = match f[18].map(|s| t.get(s)) {
            None | Some(Node::None) => false,
            Some(Node::Bool(b)) => b,
            Some(n) => return Err(format!("`is_p2p` should be a boolean, {}", found(n))),
        };
        // read for their types only: the analysis does not use them
        match f[9].map(|s| t.get(s)) {
            None | Some(Node::None) | Some(Node::Float(_)) | Some(Node::Int(_)) => {}
            Some(n) => return Err(format!("`duration_ms` should be a number, {}", found(n))),
        }
        let site = match f[19] {
            Some(fr) => self.site(fr)?,
            None => 0,
        };
        let input = self.shapes(f[10], "input_sizes")?;
        let output = self.shapes(f[11], "output_sizes")?;
        let in_dtypes = self.dtypes(f[12], "input_dtypes")?;
        let out_dtypes = self.dtypes(f[13], "output_dtypes")?;
        let key = (op, input, output, in_dtypes, out_dtypes);
        let at =
            (key.0 ^ key.1.rotate_left(8) ^ key.2.rotate_left(16) ^ key.3 ^ key.4) as usize % SIGS;
        let sig = match self.sigs[at] {
            Some((k, sig)) if k == key => sig,
            _ => {
                let mut h = crate::proto::data::Fnv::new();
                h.write(self.strings.get(op).as_bytes());
                for sh in [input, output] {
                    h.write(b"|");
                    for d in self.shapes.get(sh) {
                        h.write(&d.to_le_bytes());
                    }
                }
                for t in [in_dtypes, out_dtypes] {
                    h.write(b"|");
                    h.write(self.strings.get(t).as_bytes());
                }
                let sig = h.finish();
                self.sigs[at] = Some((key, sig));
                sig
            }
        };
        // checked in the order of the record's fields, for the first error to be the same
        let id = self.unsigned(f[0], "record_id")?;
        if index == 0 {
            self.first_id = id;
        }
        let p2p_seq = self.unsigned(f[5], "p2p_seq_id")?;
        self.unsigned(f[6], "op_id")?;
        Ok(Record {
            index,
            pg_id,
            group_name,
            group_desc,
            group: 0,
            seq: OptU64::new(seq),
            p2p_seq: OptU64::new(p2p_seq),
            backend,
            op,
            kind,
            peer,
            time_ns: self.unsigned(f[8], "time_created_ns")?.unwrap_or(0),
            completed_ns: self
                .unsigned(f[15], "time_discovered_completed_ns")?
                .unwrap_or(0),
            input,
            output,
            in_dtypes,
            out_dtypes,
            state,
            retired,
            timeout_ms: OptU64::new(self.unsigned(f[17], "timeout_ms")?),
            is_p2p,
            site,
            sig,
        })
    }

    #[inline]
    fn group_part(&mut self, id: NodeId) -> Result<u32, String> {
        match self.t.get(id) {
            Node::Int(i) => Ok(self.strings.intern(i.to_string().as_str())),
            _ => self.intern_str(id, "process_group"),
        }
    }

    /// `backend:op`, with `send 0->1` / `recv 1<-0` / `recv 1<-?` peers.
    fn profiling(&mut self, s: &str) -> Result<Profiling, String> {
        if s.len() > 4096 {
            return Err("`profiling_name` is longer than 4 KiB".into());
        }
        let (backend, rest) = s.split_once(':').unwrap_or(("", s));
        let (op, args) = rest.split_once(' ').unwrap_or((rest, ""));
        let op = crate::fr::model::canonical_op(op);
        let kind = RecordKind::of(op);
        let peer = match kind {
            RecordKind::Op(OpKind::Send) => parse_peer(args, "->"),
            RecordKind::Op(OpKind::Recv) => parse_peer(args, "<-"),
            _ => None,
        };
        // backend and op are shown in reports, as a terminal may show them
        let b = self.strings.intern(crate::text::safe(backend).as_ref());
        let o = self.strings.intern(crate::text::safe(op).as_ref());
        Ok((b, o, kind, peer))
    }
}

/// Whether the tensor sizes `items` flatten to `shape` (as [`Conv::shapes`] flattens them:
/// the number of tensors, then each one's number of dimensions and its sizes), and if so the
/// budget reading them spends.
fn sizes_are(t: &Tree, items: &[NodeId], shape: &[u64]) -> Option<u64> {
    let (&n, mut rest) = shape.split_first()?;
    if n != items.len() as u64 {
        return None;
    }
    let mut spent = n + 1;
    for &ti in items {
        let (&k, r) = rest.split_first()?;
        match t.get(ti) {
            Node::List(dims) | Node::Tuple(dims) => {
                let dims = t.items(dims);
                if k != dims.len() as u64 || r.len() < dims.len() {
                    return None;
                }
                let (want, r) = r.split_at(dims.len());
                for (&d, &w) in dims.iter().zip(want) {
                    match t.get(d) {
                        Node::Int(v) if u64::try_from(v) == Ok(w) => {}
                        _ => return None,
                    }
                }
                spent += dims.len() as u64;
                rest = r;
            }
            // a bare number is a tensor of one dimension
            Node::Int(v) if k == 1 => {
                let (&w, r) = r.split_first()?;
                if u64::try_from(v) != Ok(w) {
                    return None;
                }
                rest = r;
            }
            _ => return None,
        }
    }
    rest.is_empty().then_some(spent)
}

/// The digits `d` as a u32 (what `str::parse` gives for them); None when empty, not only
/// digits, or too large.
fn decimal(d: &[u8]) -> Option<u32> {
    if d.is_empty() {
        return None;
    }
    d.iter().try_fold(0u32, |a, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        a.checked_mul(10)?.checked_add(u32::from(b - b'0'))
    })
}

fn parse_peer(args: &str, arrow: &str) -> Option<Peer> {
    let (me, peer) = args.trim().split_once(arrow)?;
    Some(Peer {
        me: me.trim().parse().ok()?,
        peer: peer.trim().parse().ok(),
    })
}

/// Frames of torch itself (the collective's Python wrapper, the logger), skipped to find the
/// user's call site.
fn is_torch_frame(file: &str) -> bool {
    file.contains("torch/distributed/")
        || file.contains("torch/nn/")
        || file.contains("torch/utils/")
        || file.starts_with("torch/")
        || file.contains("/torch/_")
}

fn scalar_type(i: i64) -> &'static str {
    match i {
        0 => "Byte",
        1 => "Char",
        2 => "Short",
        3 => "Int",
        4 => "Long",
        5 => "Half",
        6 => "Float",
        7 => "Double",
        11 => "Bool",
        15 => "BFloat16",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_read_as_str_parse_reads_them() {
        for d in [
            "0",
            "7",
            "0012",
            "4294967295",
            "4294967296",
            "",
            "1 2",
            "-1",
            "99999999999",
        ] {
            assert_eq!(decimal(d.as_bytes()), d.parse::<u32>().ok(), "{d:?}");
        }
    }

    #[test]
    fn sizes_like_the_last_ones_are_told_from_sizes_that_only_look_alike() {
        // each record's sizes, and their flattening: tensors, then each one's dimensions and
        // sizes; the same sizes come back after others, and forms that hold the same numbers
        // differently are other shapes
        let cases: [(&str, &[u64]); 11] = [
            ("[[2, 3]]", &[1, 2, 2, 3]),
            ("[[2, 4]]", &[1, 2, 2, 4]),
            ("[[2], [3]]", &[2, 1, 2, 1, 3]),
            ("[2, 3]", &[2, 1, 2, 1, 3]),
            ("[2, 4]", &[2, 1, 2, 1, 4]),
            ("[[2, 3]]", &[1, 2, 2, 3]),
            ("[[6]]", &[1, 1, 6]),
            ("[[2, 3, 1]]", &[1, 3, 2, 3, 1]),
            ("[[2, 3]]", &[1, 2, 2, 3]),
            ("[]", &[0]),
            ("[[]]", &[1, 0]),
        ];
        let entries: Vec<String> = (cases.iter())
            .map(|(sizes, _)| {
                format!(
                    r#"{{"profiling_name": "nccl:all_reduce", "process_group": ["0", ""],
                    "input_sizes": {sizes}}}"#
                )
            })
            .collect();
        let doc = format!(r#"{{"entries": [{}]}}"#, entries.join(", "));
        let t = super::super::json::decode(doc.as_bytes()).unwrap();
        let d = to_dump(&t, "f", 0, Format::Json, &mut Memo::default()).unwrap();
        for (i, (sizes, flat)) in cases.iter().enumerate() {
            assert_eq!(
                d.shapes(d.records.get(i).input),
                *flat,
                "record {i}: {sizes}"
            );
        }
        // equal sizes share their shape
        assert_eq!(d.records.get(0).input, d.records.get(8).input);
        assert_eq!(d.records.get(2).input, d.records.get(3).input);
    }

    #[test]
    fn the_dumps_of_a_job_share_their_rank_lists() {
        let doc = |tp: &str| {
            format!(
                r#"{{"version": "2.4", "entries": [], "pg_config": {{
                    "0": {{"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}},
                    "1": {{"name": "1", "desc": "tp", "ranks": "{tp}"}}}}}}"#
            )
        };
        let mut memo = Memo::default();
        let mut read = |text: &str| {
            let t = super::super::json::decode_in(text.as_bytes(), Default::default()).unwrap();
            to_dump(&t, "f", 0, Format::Json, &mut memo).unwrap()
        };
        let lists = |d: &Dump| -> Vec<Arc<[u32]>> {
            d.pg_config
                .iter()
                .map(|c| c.ranks.clone().unwrap())
                .collect()
        };
        let a = lists(&read(&doc("[0, 1]")));
        let b = lists(&read(&doc("[2, 3]")));
        let c = lists(&read(&doc("[0, 1]")));
        assert_eq!(&*a[0], &[0, 1, 2, 3]);
        assert_eq!((&*a[1], &*b[1]), (&[0, 1][..], &[2, 3][..]));
        // the world's list and a group's are read once and shared by every dump that lists them
        assert!(Arc::ptr_eq(&a[0], &b[0]) && Arc::ptr_eq(&a[0], &c[0]));
        assert!(Arc::ptr_eq(&a[1], &c[1]) && !Arc::ptr_eq(&a[1], &b[1]));
        // a reader remembers a bounded number of lists: the oldest is read anew
        for i in 0..REMEMBERED_LISTS {
            read(&doc(&format!("[{i}]")));
        }
        let d = lists(&read(&doc("[0, 1]")));
        assert_eq!(&*d[1], &[0, 1]);
        assert!(Arc::ptr_eq(&a[0], &d[0]) && !Arc::ptr_eq(&a[1], &d[1]));
    }
}
