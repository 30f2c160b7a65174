//! An event in words, as the log, the filter and the detail pane say it.

use ringside_sim::cause::listed;
use ringside_sim::diagnose::fmt_ranks;
use ringside_sim::trace::{Event, FaultPhase};
use ringside_sim::units::fmt_time;

/// Bytes for humans: `64MiB`, `1.5KiB`, `12B`.
pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b}B")
    } else if v.fract() == 0.0 {
        format!("{v:.0}{}", UNITS[u])
    } else {
        format!("{v:.1}{}", UNITS[u])
    }
}

/// One event in words (without its time and kind), its text from the trace escaped for a
/// terminal.
pub fn describe(ev: &Event) -> String {
    let words = processes_and_messages(ev)
        .or_else(|| calls(ev))
        .or_else(|| membership(ev))
        .or_else(|| registry(ev))
        .unwrap_or_else(|| ev.kind().to_string());
    match ringside_sim::text::safe(&words) {
        std::borrow::Cow::Borrowed(_) => words,
        std::borrow::Cow::Owned(escaped) => escaped,
    }
}

/// Faults, processes and messages.
fn processes_and_messages(ev: &Event) -> Option<String> {
    Some(match ev {
        Event::Fault {
            fault,
            phase,
            detail,
            ..
        } => format!(
            "{fault} {}: {detail}",
            match phase {
                FaultPhase::Begin => "begins",
                FaultPhase::End => "ends",
            }
        ),
        Event::ProcessStart { rank, incarnation } => {
            format!("rank {rank} starts (incarnation {incarnation})")
        }
        Event::ProcessDeath { rank, .. } => format!("rank {rank} dies"),
        Event::ProcessPause { rank } => format!("rank {rank} paused"),
        Event::ProcessResume { rank } => format!("rank {rank} resumed"),
        Event::Send {
            id,
            from,
            to,
            bytes,
            msg,
            seq,
            step,
            ..
        } => {
            let mut s = format!("{from}→{to} {msg} {} id {id}", fmt_bytes(*bytes));
            if let Some(q) = seq {
                s.push_str(&format!(" #{q}"));
            }
            if let Some(st) = step {
                s.push_str(&format!(" step {}", st + 1));
            }
            s
        }
        Event::Deliver { id, from, to } => format!("{from}→{to} id {id}"),
        Event::Drop {
            id,
            from,
            to,
            reason,
            retransmit,
        } => format!(
            "{from}→{to} id {id}: {reason}{}",
            if *retransmit { ", resent later" } else { "" }
        ),
        _ => return None,
    })
}

/// Timers, computing, collectives and how the run ends.
fn calls(ev: &Event) -> Option<String> {
    Some(match ev {
        Event::Timer {
            rank, timer, seq, ..
        } => match seq {
            Some(q) => format!("rank {rank} {timer} of #{q}"),
            None => format!("rank {rank} {timer}"),
        },
        Event::Compute {
            rank,
            iteration,
            duration_ns,
        } => format!(
            "rank {rank} iteration {iteration} for {}",
            fmt_time(*duration_ns)
        ),
        Event::ComputeDone { rank } => format!("rank {rank}"),
        Event::Iteration { rank, iteration } => format!("rank {rank} starts iteration {iteration}"),
        Event::Call {
            rank,
            seq,
            op,
            algorithm,
            bytes,
            peer,
            group,
            ..
        } => match peer {
            Some(p) => format!(
                "rank {rank} {} #{seq} {} {p} in group {} {} {}",
                op.name(),
                if op.name() == "send" { "to" } else { "from" },
                group.0,
                algorithm.name(),
                fmt_bytes(*bytes)
            ),
            None => format!(
                "rank {rank} {} #{seq} {} {}",
                op.name(),
                algorithm.name(),
                fmt_bytes(*bytes)
            ),
        },
        Event::Step {
            rank,
            seq,
            step,
            steps,
            waiting_for,
            ..
        } => format!(
            "rank {rank} #{seq} step {}/{steps} waits for {}",
            step + 1,
            fmt_ranks(waiting_for)
        ),
        Event::Complete {
            rank, seq, correct, ..
        } => format!(
            "rank {rank} #{seq}{}",
            match correct {
                Some(true) => " correct",
                Some(false) => " WRONG RESULT",
                None => "",
            }
        ),
        Event::Abort {
            rank, seq, reason, ..
        } => format!("rank {rank} #{seq}: {reason}"),
        Event::Unexpected {
            rank,
            seq,
            step,
            steps,
            from,
            why,
            ..
        } => format!(
            "rank {rank} #{seq}: chunk from rank {from} for step {}/{steps} not expected ({why})",
            step + 1
        ),
        Event::FlightRecord { rank, entries } => match entries.len() {
            1 => format!("rank {rank}: 1 entry"),
            n => format!("rank {rank}: {n} entries"),
        },
        Event::WorkloadDone { rank } => format!("rank {rank} finished its workload"),
        Event::RejoinRefused { rank, reason } => format!("rank {rank}: {reason}"),
        Event::Diagnosis {
            blocked,
            root_causes,
            ..
        } => format!(
            "blocked [{}], root causes [{}]",
            fmt_ranks(blocked),
            listed(root_causes)
        ),
        Event::End { outcome, .. } => format!("{outcome}"),
        _ => return None,
    })
}

/// Elastic membership: generations, rendezvous, the store.
fn membership(ev: &Event) -> Option<String> {
    Some(match ev {
        Event::GenerationFormed {
            rank,
            generation,
            members,
            group_rank,
            resume_iteration,
            ..
        } => format!(
            "rank {rank} joins generation {} as {group_rank} of [{}], from iteration {resume_iteration}",
            generation.0,
            fmt_ranks(members)
        ),
        Event::RendezvousStart {
            rank,
            target,
            reason,
        } => format!("rank {rank} rendezvous for generation {}: {reason}", target.0),
        Event::RendezvousWait {
            rank,
            target,
            reachable,
            reason,
            ..
        } => format!(
            "rank {rank} waits for generation {} (reaches [{}]): {reason}",
            target.0,
            fmt_ranks(reachable)
        ),
        Event::Suspect {
            rank,
            peer,
            silent_ns,
        } => format!(
            "rank {rank} suspects {peer}, silent for {}",
            fmt_time(*silent_ns)
        ),
        Event::Joining {
            rank,
            known,
            reason,
        } => format!(
            "rank {rank} asks to join (knows generation {}): {reason}",
            known.0
        ),
        Event::StoreUpdate {
            version,
            generation,
            members,
            ..
        } => format!(
            "store v{version}: generation {} = [{}]",
            generation.0,
            fmt_ranks(members)
        ),
        _ => return None,
    })
}

/// The registry of group members.
fn registry(ev: &Event) -> Option<String> {
    Some(match ev {
        Event::RegistryJoin { rank, group, .. } => format!("rank {rank} joins {group}"),
        Event::RegistryLeave { rank, group, .. } => format!("rank {rank} leaves {group}"),
        Event::RegistryView {
            rank,
            group,
            members,
            ..
        }
        | Event::RegistryMonitor {
            rank,
            group,
            members,
            ..
        } => format!("rank {rank} sees {group} = [{}]", fmt_ranks(members)),
        Event::RegistryNotify {
            rank,
            group,
            joined,
            left,
            ..
        } => format!(
            "rank {rank}: {group} +[{}] -[{}]",
            fmt_ranks(joined),
            fmt_ranks(left)
        ),
        Event::RegistryBroadcast {
            rank,
            group,
            message,
            to,
            ..
        } => format!("rank {rank} → {group} [{}]: {message}", fmt_ranks(to)),
        Event::RegistryDeliver {
            rank,
            group,
            from,
            message,
            items,
            ..
        } => format!("rank {rank} ← {from} in {group}: {message} ({items} held)"),
        Event::RegistryQuery {
            rank,
            group,
            members,
            expected,
            ..
        } => match expected {
            Some(e) if e != members => format!(
                "rank {rank} reads {group} = [{}], EXPECTED [{}]",
                fmt_ranks(members),
                fmt_ranks(e)
            ),
            _ => format!("rank {rank} reads {group} = [{}]", fmt_ranks(members)),
        },
        Event::RegistryNodeDown {
            rank,
            node,
            silent_ns,
        } => format!(
            "rank {rank} lost node {node} (silent {})",
            fmt_time(*silent_ns)
        ),
        Event::RegistryNodeUp { rank, node } => format!("rank {rank} reaches node {node}"),
        _ => return None,
    })
}
