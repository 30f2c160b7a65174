//! A simulated run as Flight Recorder dumps (`export --fr`): one dump per rank in the layout of
//! FR 2.10, as JSON (`comm_lib_trace_rank_<R>.json`) or as pickle named like torch's files
//! (`comm_lib_trace_rank_<R>`), so that PyTorch's own analyzer and `ringside import` read them.
//!
//! Each collective a rank issued is a record: `collective_seq_id` is the call's seq, sizes come
//! from the modeled bytes and the dtype, the state is `completed` when the rank completed it;
//! a call the watchdog aborted is retired without completing, as torch's watchdog leaves it.
//! Each record carries one stack frame naming its op's place in the scenario's program
//! (`<scenario>.toml`, line = op index + 1), as a training loop's source line would. A rank that
//! died, or that is frozen when the run ends, writes no dump, as in a real job.

use super::model::{torch_dtype, torch_name};
use crate::scenario::{Dtype, OpKind};
use crate::trace::{Event, TraceReader};
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

fn group_desc(g: u32) -> (String, String) {
    if g == 0 {
        ("0".into(), "default_pg".into())
    } else {
        (g.to_string(), format!("group {g}"))
    }
}

/// What was written.
pub struct Exported {
    pub files: Vec<PathBuf>,
    /// Ranks that wrote no dump (dead or frozen at the end).
    pub silent: Vec<u32>,
    /// `FILE:LINE: incomplete trace: ...` when the trace has no footer.
    pub incomplete: Option<String>,
}

/// Writes one dump per rank of the trace at `trace` into `dir` (created if needed).
pub fn export(trace: &Path, dir: &Path, pickle: bool) -> Result<Exported, String> {
    let mut reader = TraceReader::open(trace).map_err(|e| e.to_string())?;
    let scenario = reader.header.scenario.clone();
    let world = scenario.world.size;
    // one dump per rank the trace shows, not per rank its header claims: a header is no
    // reason to write a million files
    let mut ranks: BTreeMap<u32, RankState> = BTreeMap::new();
    let mut members: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    while let Some((t, ev)) = reader.next_event().map_err(|e| e.to_string())? {
        if let Some(rank) = ev.rank().filter(|&r| r < world) {
            ranks.entry(rank).or_insert_with(|| RankState {
                recs: Vec::new(),
                dead: false,
                paused: false,
            });
        }
        match ev {
            Event::Call {
                rank,
                index,
                group,
                seq,
                op,
                bytes,
                dtype,
                members: m,
                peer,
                ..
            } => {
                members.entry(group.0).or_default().insert(rank);
                if let Some(r) = ranks.get_mut(&rank) {
                    r.recs.push(Rec {
                        group: group.0,
                        seq: seq.0,
                        op,
                        bytes,
                        dtype,
                        members: m,
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
                if let Some(rec) = ranks.get_mut(&rank).and_then(|r| {
                    r.recs
                        .iter_mut()
                        .rev()
                        .find(|x| x.group == group.0 && x.seq == seq.0 && x.done.is_none())
                }) {
                    rec.done = Some(t);
                }
            }
            Event::Abort {
                rank, group, seq, ..
            } => {
                if let Some(rec) = ranks.get_mut(&rank).and_then(|r| {
                    r.recs
                        .iter_mut()
                        .rev()
                        .find(|x| x.group == group.0 && x.seq == seq.0)
                }) {
                    rec.aborted = true;
                }
            }
            Event::ProcessDeath { rank, .. } => {
                if let Some(r) = ranks.get_mut(&rank) {
                    r.dead = true;
                }
            }
            Event::ProcessStart { rank, .. } => {
                if let Some(r) = ranks.get_mut(&rank) {
                    r.dead = false;
                }
            }
            Event::ProcessPause { rank } => {
                if let Some(r) = ranks.get_mut(&rank) {
                    r.paused = true;
                }
            }
            Event::ProcessResume { rank } => {
                if let Some(r) = ranks.get_mut(&rank) {
                    r.paused = false;
                }
            }
            _ => {}
        }
    }
    // a group's members as the scenario lays them out, in group-rank order (a rank that never
    // called into its group is a member all the same); the ranks seen calling otherwise
    let mut laid_out: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for layout in crate::scenario::resolve::layouts(&scenario) {
        for g in &layout.groups {
            laid_out.insert(g.id.0, g.members.ranks.iter().map(|r| r.0).collect());
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let timeout_ms = (scenario.group.timeout.0 / 1_000_000) as i64;
    let site = format!("{}.toml", scenario.name);
    let mut out = Exported {
        files: Vec::new(),
        silent: Vec::new(),
        incomplete: reader.incomplete(),
    };
    let world_ranks: Vec<u32> = ranks.keys().copied().collect();
    for (&rank, st) in &ranks {
        if st.dead || st.paused {
            out.silent.push(rank);
            continue;
        }
        let mut groups: BTreeSet<u32> = st.recs.iter().map(|r| r.group).collect();
        groups.insert(0);
        let pg_config = V::Dict(
            groups
                .iter()
                .map(|&g| {
                    let (name, desc) = group_desc(g);
                    let ranks: Vec<u32> = if g == 0 {
                        world_ranks.clone()
                    } else if let Some(m) = laid_out.get(&g) {
                        m.clone()
                    } else {
                        members
                            .get(&g)
                            .map(|m| m.iter().copied().collect())
                            .unwrap_or_default()
                    };
                    let list: Vec<String> = ranks.iter().map(|r| r.to_string()).collect();
                    (
                        name.clone(),
                        V::Dict(vec![
                            ("name".into(), s(&name)),
                            ("desc".into(), s(&desc)),
                            ("ranks".into(), s(&format!("[{}]", list.join(", ")))),
                        ]),
                    )
                })
                .collect(),
        );
        let pg_status = V::Dict(
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
                    let num = |x: i64| if pickle { V::Int(x) } else { s(&x.to_string()) };
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
        );
        // a send's or recv's number among this rank's messages in its group
        let mut p2p_seq: BTreeMap<u32, i64> = BTreeMap::new();
        let entries: Vec<V> = st
            .recs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                // group ranks in the order pg_config lists the members
                let group_rank = |w: u32| {
                    match laid_out.get(&r.group) {
                        Some(m) => m.iter().position(|&x| x == w),
                        None => members
                            .get(&r.group)
                            .and_then(|m| m.iter().position(|&x| x == w)),
                    }
                    .map_or(w, |i| i as u32)
                };
                let p2p = match (r.op, r.peer) {
                    (OpKind::Send | OpKind::Recv, Some(peer)) => {
                        let n = p2p_seq.entry(r.group).or_insert(0);
                        *n += 1;
                        let arrow = if r.op == OpKind::Send { "->" } else { "<-" };
                        let me = if r.group == 0 { rank } else { group_rank(rank) };
                        let peer = if r.group == 0 { peer } else { group_rank(peer) };
                        Some((*n, format!("{me}{arrow}{peer}")))
                    }
                    _ => None,
                };
                let profiling = match &p2p {
                    Some((_, pair)) => format!("nccl:{} {pair}", torch_name(r.op)),
                    None => format!("nccl:{}", torch_name(r.op)),
                };
                let (name, desc) = group_desc(r.group);
                let (inp, outp) = sizes(r);
                let (dt, _) = torch_dtype(r.dtype);
                let dts = if r.op == OpKind::Barrier {
                    V::List(Vec::new())
                } else {
                    V::List(vec![s(dt)])
                };
                let none_or_zero = if pickle { V::Null } else { V::Int(0) };
                let mut e = vec![
                    ("record_id".into(), V::Int(i as i64)),
                    ("pg_id".into(), V::Int(i64::from(r.group))),
                    ("process_group".into(), V::Tuple(vec![s(&name), s(&desc)])),
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
                    ("time_created_ns".into(), V::Int(r.t as i64)),
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
                        r.done.map_or(none_or_zero, |d| V::Int(d as i64)),
                    ),
                    ("retired".into(), V::Bool(r.done.is_some() || r.aborted)),
                    ("timeout_ms".into(), V::Int(timeout_ms)),
                    ("is_p2p".into(), V::Bool(p2p.is_some())),
                    ("thread_id".into(), s("0")),
                    ("thread_name".into(), s("ringside")),
                ];
                if let Some(d) = r.done {
                    e.push((
                        "duration_ms".into(),
                        V::Float(d.saturating_sub(r.t) as f64 / 1e6),
                    ));
                }
                if pickle {
                    e.push((
                        "frames".into(),
                        V::List(vec![V::Dict(vec![
                            ("name".into(), s(torch_name(r.op))),
                            ("filename".into(), s(&site)),
                            ("line".into(), V::Int(i64::from(r.index) + 1)),
                        ])]),
                    ));
                }
                V::Dict(e)
            })
            .collect();
        let mut top = vec![
            ("version".into(), s("2.10")),
            ("comm_lib_version".into(), s("")),
            ("pg_config".into(), pg_config),
            ("pg_status".into(), pg_status),
        ];
        if !entries.is_empty() {
            top.push(("entries".into(), V::List(entries)));
        }
        let doc = V::Dict(top);
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
