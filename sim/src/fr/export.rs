//! A simulated run as Flight Recorder dumps (`export --fr`): one dump per rank in the layout of
//! FR 2.10, as JSON (`comm_lib_trace_rank_<R>.json`) or as pickle named like torch's files
//! (`comm_lib_trace_rank_<R>`), which PyTorch's own analyzer and `ringside import` read
//! (fr_trace loads pickle only).
//!
//! A dump says what the run knows. Each collective a rank issued is a record:
//! `collective_seq_id` is the call's seq, sizes come from the modeled bytes and the dtype, the
//! state is `completed` when the rank completed it; a call the watchdog aborted is retired
//! without completing, as torch's watchdog leaves it. Groups are named by their id, described
//! by their name in the scenario (`default_pg` for the world). The scenario's
//! `[flight_recorder]` gives the backend of the profiling names (default `nccl`) and the ranks
//! that leave no dump; a rank that died, or that is frozen when the run ends, leaves none
//! either. A pickle record's stack frame is the op's call site when the scenario names one (an
//! imported job's `site`), else the op's place in the scenario (`<scenario>.toml`, line = op
//! index + 1). Times are wall-clock: the job's, in the trace of an imported job; else the run
//! is dated as having ended when its trace was written.

use super::model::{torch_dtype, torch_name};
use crate::scenario::program::Source;
use crate::scenario::{Dtype, OpKind, Scenario};
use crate::trace::{Event, Header, TraceInput, TraceReader};
use serde_pickle::{HashableValue, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One exported record.
struct Rec {
    group: u32,
    seq: u64,
    op: OpKind,
    bytes: u64,
    dtype: Dtype,
    members: u32,
    iteration: u32,
    index: u32,
    t: u64,
    done: Option<u64>,
    aborted: bool,
    /// A send's or recv's other end, a world rank.
    peer: Option<u32>,
}

struct RankState {
    recs: Vec<Rec>,
    dead: bool,
    paused: bool,
}

/// Input and output sizes of a record: modeled bytes as elements of the dtype (an allgather's
/// bytes are its output, a reduce-scatter's its input).
fn sizes(r: &Rec) -> (Vec<Vec<u64>>, Vec<Vec<u64>>) {
    let n = r.bytes / torch_dtype(r.dtype).1;
    let p = u64::from(r.members.max(1));
    match r.op {
        OpKind::Barrier => (Vec::new(), Vec::new()),
        OpKind::Allgather => (vec![vec![n / p]], vec![vec![n]]),
        OpKind::ReduceScatter => (vec![vec![n]], vec![vec![n / p]]),
        _ => (vec![vec![n]], vec![vec![n]]),
    }
}

/// A JSON-like value, written as either format.
#[derive(Clone)]
enum V {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<V>),
    Tuple(Vec<V>),
    Dict(Vec<(String, V)>),
}

impl V {
    fn json(&self) -> serde_json::Value {
        match self {
            V::Null => serde_json::Value::Null,
            V::Bool(b) => (*b).into(),
            V::Int(i) => (*i).into(),
            V::Float(f) => (*f).into(),
            V::Str(s) => s.clone().into(),
            V::List(v) | V::Tuple(v) => serde_json::Value::Array(v.iter().map(V::json).collect()),
            V::Dict(d) => {
                serde_json::Value::Object(d.iter().map(|(k, v)| (k.clone(), v.json())).collect())
            }
        }
    }

    fn pickle(&self) -> Value {
        match self {
            V::Null => Value::None,
            V::Bool(b) => Value::Bool(*b),
            V::Int(i) => Value::I64(*i),
            V::Float(f) => Value::F64(*f),
            V::Str(s) => Value::String(s.clone()),
            V::List(v) => Value::List(v.iter().map(V::pickle).collect()),
            V::Tuple(v) => Value::Tuple(v.iter().map(V::pickle).collect()),
            V::Dict(d) => Value::Dict(
                d.iter()
                    .map(|(k, v)| (HashableValue::String(k.clone()), v.pickle()))
                    .collect(),
            ),
        }
    }
}

fn s(x: &str) -> V {
    V::Str(x.to_string())
}

fn sizes_v(v: &[Vec<u64>]) -> V {
    V::List(
        v.iter()
            .map(|t| V::List(t.iter().map(|&d| V::Int(d as i64)).collect()))
            .collect(),
    )
}

/// What was written.
pub struct Exported {
    pub files: Vec<PathBuf>,
    /// Ranks that wrote no dump (dead or frozen at the end, or without a dump in the job the
    /// scenario was imported from).
    pub silent: Vec<u32>,
    /// `FILE:LINE: incomplete trace: ...` when the trace has no footer.
    pub incomplete: Option<String>,
}

/// Each rank's records as the trace shows them, and the members seen calling each group.
struct Calls {
    ranks: BTreeMap<u32, RankState>,
    members: BTreeMap<u32, BTreeSet<u32>>,
    /// The time of the last event.
    end: u64,
}

/// The last record of `rank` for (`group`, `seq`).
fn last_call(
    ranks: &mut BTreeMap<u32, RankState>,
    rank: u32,
    group: u32,
    seq: u64,
) -> Option<&mut Rec> {
    let r = ranks.get_mut(&rank)?;
    r.recs
        .iter_mut()
        .rev()
        .find(|x| x.group == group && x.seq == seq)
}

/// Reads every rank's calls and fate from the trace.
fn read_calls(reader: &mut TraceReader<TraceInput>, world: u32) -> Result<Calls, String> {
    // one dump per rank the trace shows, not per rank its header claims: a header is no
    // reason to write a million files
    let mut out = Calls {
        ranks: BTreeMap::new(),
        members: BTreeMap::new(),
        end: 0,
    };
    while let Some((t, ev)) = reader.next_event().map_err(|e| e.to_string())? {
        out.end = out.end.max(t);
        if let Some(rank) = ev.rank().filter(|&r| r < world) {
            out.ranks.entry(rank).or_insert_with(|| RankState {
                recs: Vec::new(),
                dead: false,
                paused: false,
            });
        }
        match ev {
            Event::Call {
                rank,
                iteration,
                index,
                group,
                seq,
                op,
                bytes,
                dtype,
                members,
                peer,
                ..
            } => {
                out.members.entry(group.0).or_default().insert(rank);
                if let Some(r) = out.ranks.get_mut(&rank) {
                    r.recs.push(Rec {
                        group: group.0,
                        seq: seq.0,
                        op,
                        bytes,
                        dtype,
                        members,
                        iteration,
                        index,
                        t,
                        done: None,
                        aborted: false,
                        peer,
                    });
                }
            }
            Event::Complete {
                rank, group, seq, ..
            } => {
                if let Some(rec) =
                    last_call(&mut out.ranks, rank, group.0, seq.0).filter(|x| x.done.is_none())
                {
                    rec.done = Some(t);
                }
            }
            Event::Abort {
                rank, group, seq, ..
            } => {
                if let Some(rec) = last_call(&mut out.ranks, rank, group.0, seq.0) {
                    rec.aborted = true;
                }
            }
            Event::ProcessDeath { rank, .. } | Event::ProcessStart { rank, .. } => {
                if let Some(r) = out.ranks.get_mut(&rank) {
                    r.dead = matches!(ev, Event::ProcessDeath { .. });
                }
            }
            Event::ProcessPause { rank } | Event::ProcessResume { rank } => {
                if let Some(r) = out.ranks.get_mut(&rank) {
                    r.paused = matches!(ev, Event::ProcessPause { .. });
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// What every dump of the job shares: its groups, backend, timeout and wall clock.
struct Job {
    scenario: Scenario,
    /// Per group id: its name in the scenario (`default_pg` for the world) and its members in
    /// group-rank order, as the scenario lays them out (a rank that never called into its
    /// group is a member all the same).
    groups: BTreeMap<u32, (String, Vec<u32>)>,
    backend: String,
    timeout_ms: i64,
    /// The wall-clock (Unix epoch ns) time of the run's time 0.
    t0: u64,
    pickle: bool,
    /// The call site of each call, by (rank, call index), where the run knows it (a real
    /// program's, `ringside torchrun`): `file:line (function)`.
    sites: BTreeMap<(u32, u32), String>,
}

impl Job {
    fn new(header: &Header, trace: &Path, calls: &Calls, pickle: bool) -> Job {
        let scenario = header.scenario.clone();
        let mut groups: BTreeMap<u32, (String, Vec<u32>)> = BTreeMap::new();
        groups.insert(0, ("default_pg".into(), (0..scenario.world.size).collect()));
        for layout in crate::scenario::resolve::layouts(&scenario) {
            for g in &layout.groups {
                let members = g.members.ranks.iter().map(|r| r.0).collect();
                groups.insert(g.id.0, (layout.name.clone(), members));
            }
        }
        // groups the layouts do not know: the ranks seen calling them
        for (&g, m) in &calls.members {
            groups
                .entry(g)
                .or_insert_with(|| (format!("group {g}"), m.iter().copied().collect()));
        }
        let backend = scenario
            .flight_recorder
            .as_ref()
            .and_then(|f| f.backend.clone())
            .unwrap_or_else(|| "nccl".into());
        let timeout_ms = (scenario.group.timeout.0 / 1_000_000) as i64;
        Job {
            groups,
            backend,
            timeout_ms,
            t0: wall_clock_start(header, trace, calls.end),
            pickle,
            scenario,
            sites: BTreeMap::new(),
        }
    }

    /// Whether rank `r` leaves a dump.
    fn dumps(&self, r: u32, st: &RankState) -> bool {
        let listed = self
            .scenario
            .flight_recorder
            .as_ref()
            .is_some_and(|f| f.no_dump.contains(&r));
        !(st.dead || st.paused || listed)
    }

    /// `pg_config`: the groups the rank is in.
    fn pg_config(&self, groups: &BTreeSet<u32>) -> V {
        V::Dict(
            groups
                .iter()
                .map(|&g| {
                    let (desc, members) = &self.groups[&g];
                    let list: Vec<String> = members.iter().map(|r| r.to_string()).collect();
                    (
                        g.to_string(),
                        V::Dict(vec![
                            ("name".into(), s(&g.to_string())),
                            ("desc".into(), s(desc)),
                            ("ranks".into(), s(&format!("[{}]", list.join(", ")))),
                        ]),
                    )
                })
                .collect(),
        )
    }

    /// `pg_status`: the last collective the rank issued and completed in each group.
    fn pg_status(&self, st: &RankState, groups: &BTreeSet<u32>) -> V {
        V::Dict(
            groups
                .iter()
                .map(|&g| {
                    let mine = st
                        .recs
                        .iter()
                        .filter(|r| r.group == g && !r.op.point_to_point());
                    let enq = mine.clone().map(|r| r.seq as i64).max().unwrap_or(-1);
                    let done = mine
                        .filter(|r| r.done.is_some())
                        .map(|r| r.seq as i64)
                        .max()
                        .unwrap_or(-1);
                    let num = |x: i64| {
                        if self.pickle {
                            V::Int(x)
                        } else {
                            s(&x.to_string())
                        }
                    };
                    (
                        g.to_string(),
                        V::Dict(vec![
                            ("last_enqueued_collective".into(), num(enq)),
                            ("last_started_collective".into(), num(-1)),
                            ("last_completed_collective".into(), num(done)),
                        ]),
                    )
                })
                .collect(),
        )
    }

    /// The group rank of world rank `w` in group `g`.
    fn group_rank(&self, g: u32, w: u32) -> u32 {
        self.groups
            .get(&g)
            .and_then(|(_, m)| m.iter().position(|&x| x == w))
            .map_or(w, |i| i as u32)
    }

    /// The stack of a call: its call site when the scenario names one (an imported job's),
    /// else the op's place in the scenario.
    fn frames(&self, rank: u32, r: &Rec) -> V {
        let known = self.sites.get(&(rank, r.index)).map(String::as_str);
        if let Some((file, line, name)) = known.and_then(site_parts) {
            return V::List(vec![V::Dict(vec![
                ("name".into(), s(name)),
                ("filename".into(), s(file)),
                ("line".into(), V::Int(line)),
            ])]);
        }
        let call = crate::scenario::program::call_at(&self.scenario, rank, r.index as usize).1;
        let site = call.as_ref().and_then(|(op, _)| op.site.as_deref());
        let (name, file, line) = match site.and_then(|x| x.rsplit_once(':')) {
            Some((file, line)) if line.parse::<i64>().is_ok() => {
                (String::new(), file.to_string(), line.parse().unwrap_or(0))
            }
            _ => {
                let at = match call.map(|(_, src)| src) {
                    Some(Source::Program(p, i)) => format!("workload.programs[{p}].ops[{i}]"),
                    Some(Source::Pipeline(i)) => format!("workload.pipeline call {i}"),
                    _ => format!("workload.ops[{}]", r.index),
                };
                (
                    format!("iteration {} {at}", r.iteration),
                    format!("{}.toml", self.scenario.name),
                    i64::from(r.index) + 1,
                )
            }
        };
        V::List(vec![V::Dict(vec![
            ("name".into(), s(&name)),
            ("filename".into(), s(&file)),
            ("line".into(), V::Int(line)),
        ])])
    }

    /// The record of call `r`, the `i`-th of `rank`; `p2p`: a send's or recv's number among the
    /// rank's messages in its group, and its peers as the profiling name writes them.
    fn record(&self, rank: u32, i: usize, r: &Rec, p2p: Option<(i64, String)>) -> V {
        let profiling = match &p2p {
            Some((_, pair)) => format!("{}:{} {pair}", self.backend, torch_name(r.op)),
            None => format!("{}:{}", self.backend, torch_name(r.op)),
        };
        let name = r.group.to_string();
        let desc = self.groups.get(&r.group).map_or("", |(d, _)| d.as_str());
        let (inp, outp) = sizes(r);
        let (dt, _) = torch_dtype(r.dtype);
        let dts = if r.op == OpKind::Barrier {
            V::List(Vec::new())
        } else {
            V::List(vec![s(dt)])
        };
        let none_or_zero = if self.pickle { V::Null } else { V::Int(0) };
        let wall = |t: u64| V::Int(self.t0.saturating_add(t).min(i64::MAX as u64) as i64);
        let mut e = vec![
            ("record_id".into(), V::Int(i as i64)),
            ("pg_id".into(), V::Int(i64::from(r.group))),
            ("process_group".into(), V::Tuple(vec![s(&name), s(desc)])),
            (
                "collective_seq_id".into(),
                V::Int(if p2p.is_some() { 0 } else { r.seq as i64 }),
            ),
            (
                "p2p_seq_id".into(),
                V::Int(p2p.as_ref().map_or(0, |(n, _)| *n)),
            ),
            ("op_id".into(), V::Int(r.seq as i64)),
            ("profiling_name".into(), s(&profiling)),
            ("time_created_ns".into(), wall(r.t)),
            ("input_sizes".into(), sizes_v(&inp)),
            ("input_dtypes".into(), dts.clone()),
            ("output_sizes".into(), sizes_v(&outp)),
            ("output_dtypes".into(), dts),
            (
                "state".into(),
                s(if r.done.is_some() {
                    "completed"
                } else {
                    "scheduled"
                }),
            ),
            ("time_discovered_started_ns".into(), none_or_zero.clone()),
            (
                "time_discovered_completed_ns".into(),
                r.done.map_or(none_or_zero, wall),
            ),
            ("retired".into(), V::Bool(r.done.is_some() || r.aborted)),
            ("timeout_ms".into(), V::Int(self.timeout_ms)),
            ("is_p2p".into(), V::Bool(p2p.is_some())),
        ];
        if let Some(d) = r.done {
            e.push((
                "duration_ms".into(),
                V::Float(d.saturating_sub(r.t) as f64 / 1e6),
            ));
        }
        if self.pickle {
            e.push(("frames".into(), self.frames(rank, r)));
        }
        V::Dict(e)
    }

    /// The dump of `rank`.
    fn dump(&self, rank: u32, st: &RankState) -> V {
        let mut groups: BTreeSet<u32> = st.recs.iter().map(|r| r.group).collect();
        groups.insert(0);
        // a send's or recv's number among this rank's messages in its group
        let mut p2p_seq: BTreeMap<u32, i64> = BTreeMap::new();
        let entries: Vec<V> = st
            .recs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let p2p = match (r.op, r.peer) {
                    (OpKind::Send | OpKind::Recv, Some(peer)) => {
                        let n = p2p_seq.entry(r.group).or_insert(0);
                        *n += 1;
                        let arrow = if r.op == OpKind::Send { "->" } else { "<-" };
                        let (me, peer) = (
                            self.group_rank(r.group, rank),
                            self.group_rank(r.group, peer),
                        );
                        Some((*n, format!("{me}{arrow}{peer}")))
                    }
                    _ => None,
                };
                self.record(rank, i, r, p2p)
            })
            .collect();
        let mut top = vec![
            ("version".into(), s("2.10")),
            ("comm_lib_version".into(), s("")),
            ("pg_config".into(), self.pg_config(&groups)),
            ("pg_status".into(), self.pg_status(st, &groups)),
        ];
        if !entries.is_empty() {
            top.push(("entries".into(), V::List(entries)));
        }
        V::Dict(top)
    }
}

/// The wall-clock time of a run's time 0: the job's, in the trace of a real job; else the run
/// is dated as having ended when its trace was written.
fn wall_clock_start(header: &Header, trace: &Path, end: u64) -> u64 {
    if let Some(t) = header.start_unix_ns {
        return t;
    }
    // (a file system that keeps no modification time leaves the run at the epoch)
    let ns = std::fs::metadata(trace)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos().min(u128::from(u64::MAX)) as u64);
    ns.saturating_sub(end)
}

/// `file:line (function)` as (file, line, function).
fn site_parts(text: &str) -> Option<(&str, i64, &str)> {
    let (at, name) = match text.rsplit_once(" (") {
        Some((at, name)) => (at, name.strip_suffix(')').unwrap_or(name)),
        None => (text, ""),
    };
    let (file, line) = at.rsplit_once(':')?;
    Some((file, line.parse().ok()?, name))
}

/// Writes one dump per rank of the trace at `trace` into `dir` (created if needed).
pub fn export(trace: &Path, dir: &Path, pickle: bool) -> Result<Exported, String> {
    export_with_sites(trace, dir, pickle, BTreeMap::new())
}

/// [`export`], the pickle dumps' frames taken from `sites`, the call site of each call by
/// (rank, call index) as `file:line (function)`, where they name one (a real program's calls).
pub fn export_with_sites(
    trace: &Path,
    dir: &Path,
    pickle: bool,
    sites: BTreeMap<(u32, u32), String>,
) -> Result<Exported, String> {
    let mut reader = TraceReader::open(trace).map_err(|e| e.to_string())?;
    let world = reader.header.scenario.world.size;
    let calls = read_calls(&mut reader, world)?;
    let mut job = Job::new(&reader.header, trace, &calls, pickle);
    job.sites = sites;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut out = Exported {
        files: Vec::new(),
        silent: Vec::new(),
        incomplete: reader.incomplete(),
    };
    for (&rank, st) in &calls.ranks {
        if !job.dumps(rank, st) {
            out.silent.push(rank);
            continue;
        }
        let doc = job.dump(rank, st);
        let path = dir.join(if pickle {
            format!("comm_lib_trace_rank_{rank}")
        } else {
            format!("comm_lib_trace_rank_{rank}.json")
        });
        let bytes = if pickle {
            serde_pickle::value_to_vec(&doc.pickle(), serde_pickle::SerOptions::new())
                .map_err(|e| e.to_string())?
        } else {
            serde_json::to_vec(&doc.json()).map_err(|e| e.to_string())?
        };
        std::fs::write(&path, bytes)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        out.files.push(path);
    }
    Ok(out)
}
