//! Export to Chrome trace-event JSON, which Perfetto UI (and chrome://tracing) opens.
//!
//! Layout: one process per rank (`pid` = rank + 1, named `rank R`), with three threads:
//! - `work` (tid 1): compute and collectives as B/E slices, each collective's steps nested in
//!   it, watchdog timeouts, aborts and deaths as instants;
//! - `messages` (tid 2): a 1 ns slice per send and per delivery, joined by a flow arrow
//!   (`s` on the sender, `f` on the receiver) whose id is the message's `id` (a resend of the
//!   same message gets `id + attempt << 48`); drops are instants;
//! - `process` (tid 3): `paused` and `dead` slices.
//!
//! Faults are instant events: on the rank's `work` track when they touch one rank, global
//! otherwise. Every slice still open at the end of the trace is closed there, so B/E always
//! pair up. The output is streamed: a trace of any length converts in constant memory (but
//! for the messages in flight).

use super::{Event, FaultPhase, TraceError, TraceReader};
use crate::scenario::OpKind;
use crate::units::Nanos;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};

const WORK: u32 = 1;
const MESSAGES: u32 = 2;
const PROCESS: u32 = 3;
/// A message's slice lasts a nanosecond (in microseconds): long enough to hold the flow
/// arrow that binds to it, too short to overlap anything.
const MESSAGE_DUR: f64 = 0.001;

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error("cannot write the export: {0}")]
    Io(#[from] io::Error),
}

/// What an export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportStats {
    pub trace_events: u64,
    pub flows: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Open {
    Compute,
    Collective,
    Step,
}

struct Exporter<W: Write> {
    out: W,
    stats: ExportStats,
    /// The slot of each rank the trace has shown so far: per-rank state and process
    /// metadata are written for the ranks a trace names, whatever world its header claims.
    slots: BTreeMap<u32, usize>,
    /// Open slices on each slot's work track, innermost last.
    work: Vec<Vec<Open>>,
    paused: Vec<bool>,
    dead: Vec<bool>,
    /// The send or recv each rank is in: its op and peer.
    message: Vec<Option<(OpKind, u32)>>,
    /// Message id -> (flow id, attempt) of the send in flight.
    in_flight: BTreeMap<u64, u64>,
    attempts: BTreeMap<u64, u64>,
}

fn ts(t: Nanos) -> Value {
    // microseconds, exact to the nanosecond for any realistic run
    json!(t as f64 / 1000.0)
}

fn pid(rank: u32) -> u32 {
    rank + 1
}

impl<W: Write> Exporter<W> {
    fn emit(&mut self, v: Value) -> io::Result<()> {
        if self.stats.trace_events > 0 {
            self.out.write_all(b",\n")?;
        }
        serde_json::to_writer(&mut self.out, &v)?;
        self.stats.trace_events += 1;
        Ok(())
    }

    fn meta(&mut self, r: u32) -> io::Result<()> {
        {
            self.emit(
                json!({"ph": "M", "name": "process_name", "pid": pid(r), "tid": 0,
                "args": {"name": format!("rank {r}")}}),
            )?;
            self.emit(
                json!({"ph": "M", "name": "process_sort_index", "pid": pid(r), "tid": 0,
                "args": {"sort_index": r}}),
            )?;
            for (tid, name) in [(WORK, "work"), (MESSAGES, "messages"), (PROCESS, "process")] {
                self.emit(
                    json!({"ph": "M", "name": "thread_name", "pid": pid(r), "tid": tid,
                    "args": {"name": name}}),
                )?;
                self.emit(
                    json!({"ph": "M", "name": "thread_sort_index", "pid": pid(r),
                    "tid": tid, "args": {"sort_index": tid}}),
                )?;
            }
        }
        Ok(())
    }

    /// The slot of `rank`, given one (and its process named) when it first appears.
    fn ensure(&mut self, rank: u32) -> io::Result<usize> {
        if let Some(&slot) = self.slots.get(&rank) {
            return Ok(slot);
        }
        let slot = self.work.len();
        self.slots.insert(rank, slot);
        self.work.push(Vec::new());
        self.paused.push(false);
        self.dead.push(false);
        self.message.push(None);
        self.meta(rank)?;
        Ok(slot)
    }
    fn begin(
        &mut self,
        t: Nanos,
        rank: u32,
        open: Open,
        name: String,
        args: Value,
    ) -> io::Result<()> {
        let slot = self.ensure(rank)?;
        self.work[slot].push(open);
        let cat = match open {
            Open::Compute => "compute",
            Open::Collective => "collective",
            Open::Step => "step",
        };
        self.emit(
            json!({"ph": "B", "name": name, "cat": cat, "pid": pid(rank), "tid": WORK,
            "ts": ts(t), "args": args}),
        )
    }

    /// Closes slices on `rank`'s work track down to and including the innermost `until`
    /// (everything when `until` is None or not open).
    fn close(&mut self, t: Nanos, rank: u32, until: Option<Open>) -> io::Result<()> {
        let slot = self.ensure(rank)?;
        let stack = &self.work[slot];
        let keep = match until.and_then(|u| stack.iter().rposition(|o| *o == u)) {
            Some(i) => i,
            None if until.is_some() => return Ok(()),
            None => 0,
        };
        while self.work[slot].len() > keep {
            self.work[slot].pop();
            self.emit(json!({"ph": "E", "pid": pid(rank), "tid": WORK, "ts": ts(t)}))?;
        }
        Ok(())
    }

    fn instant(
        &mut self,
        t: Nanos,
        rank: Option<u32>,
        tid: u32,
        name: String,
        args: Value,
    ) -> io::Result<()> {
        match rank {
            Some(r) => self.emit(json!({"ph": "i", "s": "t", "name": name, "pid": pid(r),
                "tid": tid, "ts": ts(t), "args": args})),
            None => self.emit(
                json!({"ph": "i", "s": "g", "name": name, "pid": 0, "tid": 0,
                "ts": ts(t), "args": args}),
            ),
        }
    }

    fn process_slice(&mut self, t: Nanos, rank: u32, name: &str, begin: bool) -> io::Result<()> {
        let slot = self.ensure(rank)?;
        let flag = if name == "paused" {
            &mut self.paused[slot]
        } else {
            &mut self.dead[slot]
        };
        if *flag == begin {
            return Ok(());
        }
        *flag = begin;
        if begin {
            self.emit(
                json!({"ph": "B", "name": name, "cat": "process", "pid": pid(rank),
                "tid": PROCESS, "ts": ts(t)}),
            )
        } else {
            self.emit(json!({"ph": "E", "pid": pid(rank), "tid": PROCESS, "ts": ts(t)}))
        }
    }

    /// One event of the trace: what it draws is written by the function of its part of the
    /// layout (faults, the process track, the messages track, the work track), the rest as
    /// instants.
    fn event(&mut self, t: Nanos, ev: &Event) -> io::Result<()> {
        // every rank with a track of its own is named before its first slice
        if let Some(r) = ev.rank() {
            self.ensure(r)?;
        }
        if let Event::Send { to: other, .. }
        | Event::Deliver { from: other, .. }
        | Event::Drop { from: other, .. } = ev
        {
            self.ensure(*other)?;
        }
        match ev {
            Event::Fault { .. } => self.fault(t, ev),
            Event::ProcessStart { .. }
            | Event::ProcessDeath { .. }
            | Event::ProcessPause { .. }
            | Event::ProcessResume { .. } => self.process(t, ev),
            Event::Send { .. } | Event::Deliver { .. } | Event::Drop { .. } => self.message(t, ev),
            Event::Compute {
                rank,
                iteration,
                duration_ns,
            } => self.begin(
                t,
                *rank,
                Open::Compute,
                "compute".into(),
                json!({"iteration": iteration, "duration_ns": duration_ns}),
            ),
            Event::ComputeDone { rank } => self.close(t, *rank, Some(Open::Compute)),
            Event::Call { .. } => self.call(t, ev),
            Event::Step { .. } => self.step(t, ev),
            Event::Complete { rank, correct, .. } => {
                self.close(t, *rank, Some(Open::Collective))?;
                if *correct == Some(false) {
                    self.instant(t, Some(*rank), WORK, "wrong result".into(), json!({}))?;
                }
                Ok(())
            }
            Event::Abort {
                rank,
                reason,
                waiting_for,
                ..
            } => {
                self.instant(
                    t,
                    Some(*rank),
                    WORK,
                    "abort".into(),
                    json!({"reason": reason, "waiting_for": waiting_for}),
                )?;
                self.close(t, *rank, Some(Open::Collective))
            }
            Event::Iteration { .. } | Event::End { .. } => Ok(()),
            _ => self.other_instant(t, ev),
        }
    }

    /// A fault begins or ends: an instant on the rank it touches, or a global one.
    fn fault(&mut self, t: Nanos, ev: &Event) -> io::Result<()> {
        let Event::Fault {
            index,
            fault,
            phase,
            ranks,
            sides,
            detail,
            ..
        } = ev
        else {
            return Ok(());
        };
        let name = match phase {
            FaultPhase::Begin => format!("fault: {fault}"),
            FaultPhase::End => format!("fault ends: {fault}"),
        };
        let args = json!({"index": index, "detail": detail, "ranks": ranks, "sides": sides});
        match ranks.as_slice() {
            [r] => {
                self.ensure(*r)?;
                self.instant(t, Some(*r), WORK, name, args)
            }
            _ => self.instant(t, None, 0, name, args),
        }
    }

    /// A process starts, dies, pauses or resumes: the `process` track's slices, and restarts
    /// and deaths as instants on the `work` track.
    fn process(&mut self, t: Nanos, ev: &Event) -> io::Result<()> {
        match ev {
            Event::ProcessStart { rank, incarnation } => {
                self.process_slice(t, *rank, "dead", false)?;
                if *incarnation > 0 {
                    self.instant(
                        t,
                        Some(*rank),
                        WORK,
                        "restart".into(),
                        json!({"incarnation": incarnation}),
                    )?;
                }
                Ok(())
            }
            Event::ProcessDeath { rank, incarnation } => {
                self.close(t, *rank, None)?;
                self.process_slice(t, *rank, "paused", false)?;
                self.instant(
                    t,
                    Some(*rank),
                    WORK,
                    "died".into(),
                    json!({"incarnation": incarnation}),
                )?;
                self.process_slice(t, *rank, "dead", true)
            }
            Event::ProcessPause { rank } => self.process_slice(t, *rank, "paused", true),
            Event::ProcessResume { rank } => self.process_slice(t, *rank, "paused", false),
            _ => Ok(()),
        }
    }

    /// A message is sent, delivered or dropped: the `messages` track's slices, joined by flow
    /// arrows, and drops as instants.
    fn message(&mut self, t: Nanos, ev: &Event) -> io::Result<()> {
        match ev {
            Event::Send {
                id,
                from,
                to,
                bytes,
                msg,
                seq,
                step,
                arrive_ns,
                ..
            } => {
                let attempt = self.attempts.entry(*id).or_insert(0);
                let flow = *id + (*attempt << 48);
                *attempt += 1;
                self.in_flight.insert(*id, flow);
                self.emit(json!({"ph": "X", "name": format!("send {msg} → {to}"), "cat": "message",
                    "pid": pid(*from), "tid": MESSAGES, "ts": ts(t), "dur": MESSAGE_DUR,
                    "args": {"id": id, "bytes": bytes, "seq": seq, "step": step, "arrive_ns": arrive_ns}}))?;
                self.emit(
                    json!({"ph": "s", "name": "message", "cat": "message", "id": flow,
                    "pid": pid(*from), "tid": MESSAGES, "ts": ts(t)}),
                )?;
                self.stats.flows += 1;
                Ok(())
            }
            Event::Deliver { id, from, to } => {
                self.emit(
                    json!({"ph": "X", "name": format!("recv ← {from}"), "cat": "message",
                    "pid": pid(*to), "tid": MESSAGES, "ts": ts(t), "dur": MESSAGE_DUR, "args": {"id": id}}),
                )?;
                if let Some(flow) = self.in_flight.remove(id) {
                    self.emit(
                        json!({"ph": "f", "bp": "e", "name": "message", "cat": "message",
                        "id": flow, "pid": pid(*to), "tid": MESSAGES, "ts": ts(t)}),
                    )?;
                }
                Ok(())
            }
            Event::Drop {
                id,
                from,
                to,
                reason,
                retransmit,
            } => {
                self.in_flight.remove(id);
                self.instant(
                    t,
                    Some(*to),
                    MESSAGES,
                    format!("drop from {from}: {reason}"),
                    json!({"id": id, "retransmit": retransmit}),
                )
            }
            _ => Ok(()),
        }
    }

    /// A rank calls a collective, a send or a recv: a slice on its `work` track, named by
    /// where a message goes or comes from.
    fn call(&mut self, t: Nanos, ev: &Event) -> io::Result<()> {
        let Event::Call {
            rank,
            iteration,
            index,
            group,
            generation,
            seq,
            op,
            algorithm,
            bytes,
            peer,
            ..
        } = ev
        else {
            return Ok(());
        };
        let slot = self.ensure(*rank)?;
        self.message[slot] = peer.map(|p| (*op, p));
        let (name, args) = match peer {
            // a send or recv: where its message goes, or comes from
            Some(p) => {
                let dir = if *op == OpKind::Send { "to" } else { "from" };
                (
                    format!("{} #{} {dir} rank {p}", op.name(), seq.0),
                    json!({"algorithm": algorithm.name(), "bytes": bytes,
                        "iteration": iteration, "index": index, "group": group,
                        "generation": generation, "seq": seq, "peer": p,
                        "direction": op.name()}),
                )
            }
            None => (
                format!("{} #{}", op.name(), seq.0),
                json!({"algorithm": algorithm.name(), "bytes": bytes,
                    "iteration": iteration, "index": index, "group": group,
                    "generation": generation, "seq": seq}),
            ),
        };
        self.begin(t, *rank, Open::Collective, name, args)
    }

    /// A rank enters a step of its call: a slice nested in the call's, named by what a send
    /// or recv waits for.
    fn step(&mut self, t: Nanos, ev: &Event) -> io::Result<()> {
        let Event::Step {
            rank,
            step,
            steps,
            waiting_for,
            ..
        } = ev
        else {
            return Ok(());
        };
        let rank = *rank;
        let slot = self.ensure(rank)?;
        if self.work[slot].last() == Some(&Open::Step) {
            self.close(t, rank, Some(Open::Step))?;
        }
        let name = match self.message[slot] {
            Some((OpKind::Recv, p)) => format!("waits for the message of rank {p}"),
            Some((_, p)) if !waiting_for.is_empty() => {
                format!("waits for rank {p} to take it")
            }
            Some(_) => "sending".into(),
            None => format!("step {}/{steps}", step + 1),
        };
        self.begin(
            t,
            rank,
            Open::Step,
            name,
            json!({"waiting_for": waiting_for}),
        )
    }

    /// Every other kind: watchdog timeouts, flight records, the end of a workload, refused
    /// rejoins and the diagnosis as named instants; membership, registry and any other kind
    /// as an instant on the rank's track (or the global one), the event itself as its args.
    fn other_instant(&mut self, t: Nanos, ev: &Event) -> io::Result<()> {
        match ev {
            Event::Timer {
                rank, timer, seq, ..
            } => {
                if timer == "watchdog" {
                    self.instant(
                        t,
                        Some(*rank),
                        WORK,
                        "watchdog timeout".into(),
                        json!({"seq": seq}),
                    )
                } else {
                    Ok(())
                }
            }
            Event::FlightRecord { rank, entries } => self.instant(
                t,
                Some(*rank),
                WORK,
                "flight record".into(),
                json!({"entries": entries.len()}),
            ),
            Event::WorkloadDone { rank } => {
                self.instant(t, Some(*rank), WORK, "workload done".into(), json!({}))
            }
            Event::NodeWait {
                rank,
                on,
                waiting_for,
            } => self.instant(
                t,
                Some(*rank),
                WORK,
                "node wait".into(),
                json!({"on": on, "waiting_for": waiting_for}),
            ),
            Event::RejoinRefused { rank, reason } => self.instant(
                t,
                Some(*rank),
                WORK,
                "rejoin refused".into(),
                json!({"reason": reason}),
            ),
            Event::Diagnosis {
                blocked,
                root_causes,
                ..
            } => self.instant(
                t,
                None,
                0,
                "diagnosis".into(),
                json!({"blocked": blocked, "root_causes": root_causes}),
            ),
            _ => {
                let args = serde_json::to_value(ev).unwrap_or(Value::Null);
                self.instant(t, ev.rank(), WORK, ev.kind().replace('_', " "), args)
            }
        }
    }

    fn finish(&mut self, t: Nanos) -> io::Result<()> {
        let ranks: Vec<u32> = self.slots.keys().copied().collect();
        for r in ranks {
            self.close(t, r, None)?;
            self.process_slice(t, r, "paused", false)?;
            self.process_slice(t, r, "dead", false)?;
        }
        Ok(())
    }
}

/// Converts the trace `reader` reads into Chrome trace-event JSON on `out`.
pub fn export_chrome<R: BufRead, W: Write>(
    reader: &mut TraceReader<R>,
    out: W,
) -> Result<ExportStats, ExportError> {
    let header = &reader.header;
    let other = json!({
        "scenario": header.scenario.name,
        "seed": header.seed,
        "ringside": header.ringside,
    });
    let mut x = Exporter {
        out: io::BufWriter::new(out),
        stats: ExportStats::default(),
        slots: BTreeMap::new(),
        work: Vec::new(),
        paused: Vec::new(),
        dead: Vec::new(),
        message: Vec::new(),
        in_flight: BTreeMap::new(),
        attempts: BTreeMap::new(),
    };
    x.out
        .write_all(b"{\"displayTimeUnit\":\"ns\",\"otherData\":")?;
    serde_json::to_writer(&mut x.out, &other).map_err(io::Error::from)?;
    x.out.write_all(b",\"traceEvents\":[\n")?;
    let mut last = 0;
    while let Some((t, ev)) = reader.next_event()? {
        x.event(t, &ev)?;
        last = t;
    }
    x.finish(last)?;
    x.out.write_all(b"\n]}\n")?;
    x.out.flush()?;
    Ok(x.stats)
}

#[cfg(test)]
mod tests;
