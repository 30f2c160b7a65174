//! The dumps of a job as a ringside trace (`import --trace`), so that `explain`, `tui` and
//! `export --perfetto` show a real hang as they show a simulated one.
//!
//! Times are wall-clock, relative to the first record (the header keeps its Unix time as
//! `start_unix_ns`). Each record becomes a `call` (with a `step` saying whom the rank waits
//! for), and a `complete` when the rank left it, at the latest of its members' calls (a
//! collective ends when its last member arrives; gloo records no completion time). A call that
//! was retired but cannot have succeeded becomes an `abort` at its timeout. The time a rank
//! spends outside its recorded calls is `compute` (see [`between_calls`]). A rank without a
//! dump is listed in the header's `missing` and dies (`process_death`) where the others get
//! stuck. The import's verdict closes the
//! trace as its `diagnosis`. The header's scenario is the job's world and program (see
//! [`super::scenario`]), without faults.

use super::analyze::lanes::{self, Call};
use super::analyze::Analysis;
use super::groups::Group;
use super::model::dtype;
use super::model::Dump;
use super::report::call_bytes;
use super::scenario::{plan, Replay};
use crate::proto::{Generation, GroupId, SeqNo};
use crate::scenario::{OpKind, OpSpec, Outcome, ReduceOp};
use crate::trace::{Event, FaultPhase, Recorder, TraceWriter};
use crate::units::Size;
use std::path::Path;

/// The events of the trace, in time order, and its outcome.
pub fn events(dumps: &[Dump], a: &Analysis) -> Result<(Vec<(u64, Event)>, Outcome), String> {
    let mut b = Builder {
        dumps,
        a,
        // calls are placed in their ranks' programs as the scenario places them
        replay: plan("trace", dumps, a, false),
        evs: Vec::new(),
        end: a.span_ns,
    };
    for r in 0..a.groups.world_size {
        b.push(
            0,
            Event::ProcessStart {
                rank: r,
                incarnation: 0,
            },
        );
    }
    for (gi, g) in a.groups.list.iter().enumerate() {
        for (seq, calls) in &b.calls_by_seq(gi as u32, g)? {
            for &(m, c) in calls {
                b.call(g, *seq, m, &c, calls)?;
            }
        }
    }
    b.finished();
    let victims = b.victims();
    b.missing(&victims);
    b.push(
        b.end,
        Event::Diagnosis {
            blocked: a.diagnosis.blocked_ranks(),
            root_causes: a.root_causes(),
            stragglers: Vec::new(),
        },
    );
    let mut evs = b.evs;
    // stable: events of one instant stay as they were produced
    evs.sort_by_key(|(t, _)| *t);
    let recorded: Vec<bool> = (0..a.groups.world_size as usize)
        .map(|r| a.dump_of.get(r).copied().flatten().is_some())
        .collect();
    Ok((between_calls(evs, &recorded), a.outcome))
}

/// Rank `m`'s one step of its call `seq` of group `g`, waiting for `waiting_for`: a recorded
/// call has no steps of its own.
fn wait_step(m: u32, g: u32, seq: u64, waiting_for: &[u32]) -> Event {
    Event::Step {
        rank: m,
        group: GroupId(g),
        generation: Generation(0),
        seq: SeqNo(seq),
        step: 0,
        steps: 1,
        waiting_for: waiting_for.into(),
    }
}

/// The trace's events as they are produced, out of time order.
struct Builder<'a> {
    dumps: &'a [Dump],
    a: &'a Analysis,
    replay: Replay,
    evs: Vec<(u64, Event)>,
    /// The trace's last instant so far.
    end: u64,
}

/// The calls of one group at each seq, by member.
type BySeq = std::collections::BTreeMap<u64, Vec<(u32, Call)>>;

impl Builder<'_> {
    fn push(&mut self, t: u64, e: Event) {
        self.evs.push((t, e));
    }

    fn rel(&self, t: u64) -> u64 {
        t.saturating_sub(self.a.t0_ns)
    }

    /// The `call` event of member `m` in call `c` of group `g` (its index in the rank's program
    /// given).
    fn call_event(&self, g: &Group, seq: u64, m: u32, c: &Call, index: u32) -> Option<Event> {
        let rec = lanes::head(self.dumps, c);
        let op = rec.kind.op()?;
        Some(Event::Call {
            rank: m,
            iteration: 0,
            index,
            group: GroupId(g.id),
            generation: Generation(0),
            seq: SeqNo(seq),
            op,
            algorithm: op.default_algorithm(),
            bytes: call_bytes(self.dumps, c),
            dtype: dtype(self.dumps[c.dump as usize].str(rec.in_dtypes)),
            root: 0,
            reduce: ReduceOp::Sum,
            elements: self.replay.scenario.workload.elements,
            members: g.members.len() as u32,
            peer: None,
        })
    }

    /// The collectives of group `gi`, refusing point-to-point calls (not written yet).
    fn calls_by_seq(&self, gi: u32, g: &Group) -> Result<BySeq, String> {
        let mut by_seq = BySeq::new();
        for &m in &g.members {
            let Some(l) = self.a.lane(m, gi) else {
                continue;
            };
            if let Some(p) = l.p2p.first() {
                let d = &self.dumps[p.dump as usize];
                return Err(format!(
                    "point-to-point calls ({} on rank {m}) cannot be written in a trace yet",
                    d.profiling_name(&d.records.get(p.first as usize))
                ));
            }
            for c in &l.calls {
                by_seq.entry(c.seq).or_default().push((m, *c));
            }
        }
        Ok(by_seq)
    }

    /// Member `m`'s call `c` at `seq` of `g` (`calls`: every member's there): the call, whom it
    /// waits for, and how it ended — an abort at its timeout when it failed, a completion when
    /// the rank left it.
    fn call(
        &mut self,
        g: &Group,
        seq: u64,
        m: u32,
        c: &Call,
        calls: &[(u32, Call)],
    ) -> Result<(), String> {
        let rec = lanes::head(self.dumps, c);
        let index = self.replay.index_of(c).unwrap_or(0);
        let call = self.call_event(g, seq, m, c, index).ok_or_else(|| {
            format!(
                "{} (#{seq} of {}) has no ringside op yet: it cannot be written in a trace",
                self.dumps[c.dump as usize].profiling_name(&rec),
                g.label()
            )
        })?;
        let t = self.rel(c.time_ns);
        self.push(t, call);
        let stuck = super::analyze::waits::of_rank(&self.a.stuck, m)
            .filter(|s| s.group == g.id && s.call.seq == seq && !s.p2p);
        let waiting_for: Vec<u32> = match stuck {
            Some(s) => s.waiting_for(),
            None => g
                .members
                .iter()
                .copied()
                .filter(|&o| o != m)
                .filter(|&o| {
                    !calls
                        .iter()
                        .any(|(x, xc)| *x == o && xc.time_ns <= c.time_ns)
                })
                .collect(),
        };
        self.push(t, wait_step(m, g.id, seq, &waiting_for));
        let (group, generation, seq) = (GroupId(g.id), Generation(0), SeqNo(seq));
        match stuck {
            Some(s) if s.failed => {
                let timeout = rec.timeout_ms.get().unwrap_or(0).saturating_mul(1_000_000);
                let at = t.saturating_add(timeout);
                self.end = self.end.max(at);
                let reason = "watchdog: retired without completing".into();
                self.push(
                    at,
                    Event::Abort {
                        rank: m,
                        group,
                        generation,
                        seq,
                        step: 0,
                        steps: 1,
                        waiting_for,
                        reason,
                    },
                );
            }
            None if c.left() => {
                // a collective ends when its last member arrives, and before the rank's next
                // call of the group
                let last_arrival = calls.iter().map(|(_, c)| c.time_ns).max().unwrap_or(0);
                let next = (self.a.lane(m, g.id))
                    .and_then(|l| l.calls.iter().find(|x| x.seq > seq.0))
                    .map_or(u64::MAX, |x| self.rel(x.time_ns));
                let done = match rec.completed_ns {
                    0 => self.rel(last_arrival),
                    ns => self.rel(ns),
                };
                let done = done.max(t).min(next.max(t));
                self.end = self.end.max(done);
                self.push(
                    done,
                    Event::Complete {
                        rank: m,
                        group,
                        generation,
                        seq,
                        iteration: 0,
                        index,
                        result: String::new(),
                        correct: None,
                    },
                );
            }
            _ => {}
        }
        Ok(())
    }

    /// Ranks that left their last call with nobody waiting for them to make another finished
    /// their work when they left it; a rank the import finds stopped, or still in a call, did
    /// not.
    fn finished(&mut self) {
        let world = self.a.groups.world_size as usize;
        let mut left: Vec<Option<u64>> = vec![None; world];
        let mut open = vec![0i64; world];
        for (t, e) in &self.evs {
            match e {
                Event::Complete { rank, .. } | Event::Abort { rank, .. } => {
                    if let Some(l) = left.get_mut(*rank as usize) {
                        *l = Some(l.unwrap_or(0).max(*t));
                        open[*rank as usize] -= 1;
                    }
                }
                Event::Call { rank, .. } => {
                    if let Some(o) = open.get_mut(*rank as usize) {
                        *o += 1;
                    }
                }
                _ => {}
            }
        }
        let causes = self.a.root_causes();
        let blocked = self.a.diagnosis.blocked_ranks();
        for r in 0..self.a.groups.world_size {
            if self.a.dump_of.get(r as usize).copied().flatten().is_none()
                || blocked.contains(&r)
                || open[r as usize] > 0
                || causes.contains(&crate::scenario::RootCause::Hung(crate::proto::Rank(r)))
            {
                continue;
            }
            let at = left[r as usize].unwrap_or(self.end);
            self.push(at, Event::WorkloadDone { rank: r });
        }
    }

    /// The victims of divergences (members without a dump that a divergence explains) wait in
    /// the call the ranks that agree made, for the culprits; they are left alive, as the replay
    /// leaves them. Returns them.
    fn victims(&mut self) -> Vec<u32> {
        let a = self.a;
        for d in &a.divergences {
            let g = &a.groups.list[d.group as usize];
            let Some(c) = (d.agree.iter())
                .find_map(|&o| a.lane(o, d.group)?.calls.iter().find(|c| c.seq == d.seq))
            else {
                continue;
            };
            let index = self.replay.index_of(c).unwrap_or(0);
            for &m in &d.victims {
                let Some(call) = self.call_event(g, d.seq, m, c, index) else {
                    break;
                };
                let t = self.rel(c.time_ns);
                self.push(t, call);
                self.push(t, wait_step(m, g.id, d.seq, &d.culprits));
            }
        }
        (a.divergences.iter())
            .flat_map(|d| d.victims.iter().copied())
            .collect()
    }

    /// Ranks without a dump (other than `victims`) die where the others wait for them.
    fn missing(&mut self, victims: &[u32]) {
        let a = self.a;
        for (i, &m) in a
            .missing
            .iter()
            .filter(|m| !victims.contains(m))
            .enumerate()
        {
            let at = (a.stuck.iter())
                .filter(|s| s.waiting_for().contains(&m))
                .map(|s| self.rel(s.call.time_ns))
                .min()
                .unwrap_or(a.span_ns);
            self.push(
                at,
                Event::Fault {
                    index: i as u32,
                    fault: crate::fault::FaultKind::Preempt,
                    phase: FaultPhase::Begin,
                    ranks: vec![m],
                    sides: None,
                    oneway: false,
                    detail: format!("rank {m} left no Flight Recorder dump"),
                },
            );
            self.push(
                at,
                Event::ProcessDeath {
                    rank: m,
                    incarnation: 0,
                },
            );
        }
    }
}

/// The time a rank with a dump spends outside its recorded calls, from its start to its first
/// call and between a call it left and its next one, written as `compute`: its dump shows it
/// busy elsewhere (host code, kernels of other streams), not stopped. A rank that records no
/// later call is left idle after its last: if others wait for it, the diagnosis names it.
fn between_calls(evs: Vec<(u64, Event)>, recorded: &[bool]) -> Vec<(u64, Event)> {
    let n = recorded.len();
    // each rank's call times, in order; the next one is first
    let mut next_call: Vec<std::collections::VecDeque<u64>> = vec![Default::default(); n];
    for (t, e) in &evs {
        if let Event::Call { rank, .. } = e {
            if let Some(c) = next_call.get_mut(*rank as usize) {
                c.push_back(*t);
            }
        }
    }
    let mut open = vec![0u32; n];
    let mut computing = vec![false; n];
    let mut out = Vec::with_capacity(evs.len() + 2 * evs.len() / 3);
    for (t, e) in evs {
        let r = match &e {
            Event::Call { rank, .. }
            | Event::Complete { rank, .. }
            | Event::Abort { rank, .. }
            | Event::ProcessStart { rank, .. } => *rank as usize,
            _ => n,
        };
        if !recorded.get(r).copied().unwrap_or(false) {
            out.push((t, e));
            continue;
        }
        let rank = r as u32;
        if let Event::Call { .. } = e {
            next_call[r].pop_front();
            if std::mem::take(&mut computing[r]) {
                out.push((t, Event::ComputeDone { rank }));
            }
            open[r] += 1;
            out.push((t, e));
            continue;
        }
        if !matches!(e, Event::ProcessStart { .. }) {
            open[r] = open[r].saturating_sub(1);
        }
        out.push((t, e));
        match next_call[r].front() {
            Some(&next) if next > t && open[r] == 0 && !computing[r] => {
                computing[r] = true;
                out.push((
                    t,
                    Event::Compute {
                        rank,
                        iteration: 0,
                        duration_ns: next - t,
                    },
                ));
            }
            _ => {}
        }
    }
    out
}

/// Writes the trace of the job to `out`; `name` names its scenario.
pub fn write(name: &str, dumps: &[Dump], a: &Analysis, out: &Path) -> Result<(), String> {
    let (evs, outcome) = events(dumps, a)?;
    let mut sc = plan(name, dumps, a, false).scenario;
    sc.faults.clear();
    sc.expect = None;
    if sc.workload.ops.is_empty() {
        sc.workload.ops.push(OpSpec {
            op: OpKind::Barrier,
            bytes: Size(0),
            reduce: Default::default(),
            algorithm: None,
            root: None,
            group: None,
            peer: None,
            rendezvous: false,
            compute: None,
            site: None,
        });
    }
    let f = std::fs::File::create(out).map_err(|e| format!("cannot create: {e}"))?;
    let mut extra = serde_json::Map::new();
    extra.insert("real".into(), true.into());
    extra.insert("driver".into(), "flight-recorder".into());
    extra.insert("start_unix_ns".into(), a.t0_ns.into());
    extra.insert(
        "dumps".into(),
        dumps
            .iter()
            .map(|d| d.file.clone())
            .collect::<Vec<_>>()
            .into(),
    );
    // the readers of the trace know these ranks' calls are unknown, not absent
    extra.insert("missing".into(), a.missing.clone().into());
    let mut w = TraceWriter::with_header(f, &sc, 0, crate::trace::Level::Full, extra)
        .map_err(|e| e.to_string())?;
    for (t, e) in &evs {
        w.record(*t, e);
    }
    w.finish(outcome).map_err(|e| e.to_string())?;
    Ok(())
}
