//! The event log around the cursor, filtered by rank and kind.

use crate::app::App;
use crate::ui::style::{self, fmt_bytes, fmt_ranks};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;
use ringside_sim::cause::listed;
use ringside_sim::trace::{Event, FaultPhase};
use ringside_sim::units::{fmt_ms, fmt_time};

/// One event in words (without its time and kind).
pub fn describe(ev: &Event) -> String {
    match ev {
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
            fmt_ranks(waiting_for, 4)
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
        Event::FlightRecord { rank, entries } => {
            format!("rank {rank}: {} entries", entries.len())
        }
        Event::WorkloadDone { rank } => format!("rank {rank} finished its workload"),
        Event::RejoinRefused { rank, reason } => format!("rank {rank}: {reason}"),
        Event::Diagnosis {
            blocked,
            root_causes,
            ..
        } => format!(
            "blocked [{}], root causes [{}]",
            fmt_ranks(blocked, 8),
            listed(root_causes)
        ),
        Event::End { outcome, .. } => format!("{outcome}"),
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
            fmt_ranks(members, 8)
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
            fmt_ranks(reachable, 8)
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
            fmt_ranks(members, 8)
        ),
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
        } => format!("rank {rank} sees {group} = [{}]", fmt_ranks(members, 8)),
        Event::RegistryNotify {
            rank,
            group,
            joined,
            left,
            ..
        } => format!(
            "rank {rank}: {group} +[{}] -[{}]",
            fmt_ranks(joined, 8),
            fmt_ranks(left, 8)
        ),
        Event::RegistryBroadcast {
            rank,
            group,
            message,
            to,
            ..
        } => format!(
            "rank {rank} → {group} [{}]: {message}",
            fmt_ranks(to, 8)
        ),
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
                fmt_ranks(members, 8),
                fmt_ranks(e, 8)
            ),
            _ => format!("rank {rank} reads {group} = [{}]", fmt_ranks(members, 8)),
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
    }
}

fn kind_color(ev: &Event) -> Color {
    match ev {
        Event::Fault { .. } | Event::ProcessDeath { .. } | Event::Abort { .. } => Color::Red,
        Event::Drop { .. } | Event::ProcessPause { .. } | Event::RejoinRefused { .. } => {
            Color::Magenta
        }
        Event::Timer { .. } | Event::Diagnosis { .. } => Color::Yellow,
        Event::Call { .. } | Event::Complete { .. } | Event::Step { .. } => Color::Cyan,
        Event::Send { .. } | Event::Deliver { .. } => Color::Gray,
        _ => Color::Green,
    }
}

/// The indices of the events shown in `rows` lines: matching events before and after the
/// cursor, the current event (`pos - 1`) always among them.
pub fn window(app: &App, rows: usize) -> Vec<usize> {
    let events = app.loaded.events();
    if rows == 0 || events.is_empty() {
        return Vec::new();
    }
    let cur = app.pos.checked_sub(1);
    let keep = |i: usize| Some(i) == cur || app.filter.matches(&events[i].1);
    let split = app.pos.saturating_sub(1);
    let before_want = rows / 2;
    let mut before: Vec<usize> = (0..split)
        .rev()
        .filter(|&i| keep(i))
        .take(before_want)
        .collect();
    before.reverse();
    let after_want = rows - before.len();
    let mut after: Vec<usize> = (split..events.len())
        .filter(|&i| keep(i))
        .take(after_want)
        .collect();
    if before.len() + after.len() < rows && after.len() < after_want {
        // near the end: show more of what came before
        let extra = rows - before.len() - after.len();
        let first = before.first().copied().unwrap_or(split);
        let mut more: Vec<usize> = (0..first).rev().filter(|&i| keep(i)).take(extra).collect();
        more.reverse();
        more.append(&mut before);
        before = more;
    }
    before.append(&mut after);
    before
}

pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let filter = match &app.editing {
        Some(text) => format!(" filter: {text}▏"),
        None if !app.filter.is_empty() => format!(" filter: {}", app.filter.describe()),
        None => String::new(),
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Line::from(vec![
            Span::styled(" events ", style::title()),
            Span::styled(
                filter,
                Style::default()
                    .fg(Color::Yellow)
                    .add_modifier(Modifier::BOLD),
            ),
            Span::raw(" "),
        ]));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let events = app.loaded.events();
    let num_w = events.len().to_string().len();
    // narrow panels keep the text and drop the event numbers (the header has the cursor's)
    let numbers = inner.width >= 60;
    let time_w = fmt_ms(app.loaded.end_ns()).len();
    let cur = app.pos.checked_sub(1);
    let lines: Vec<Line> = window(app, inner.height as usize)
        .into_iter()
        .map(|i| {
            let (t, ev) = &events[i];
            let is_cur = Some(i) == cur;
            let mut base = Style::default();
            if is_cur {
                base = base.add_modifier(Modifier::REVERSED);
            } else if i >= app.pos {
                base = base.add_modifier(Modifier::DIM);
            }
            Line::from(vec![
                Span::styled(
                    format!(
                        "{}{} {:>time_w$} ",
                        if is_cur { "▶" } else { " " },
                        if numbers {
                            format!("{:>num_w$}", i + 1)
                        } else {
                            String::new()
                        },
                        fmt_ms(*t)
                    ),
                    base,
                ),
                Span::styled(format!("{:<13} ", ev.kind()), base.fg(kind_color(ev))),
                Span::styled(describe(ev), base),
            ])
        })
        .collect();
    if lines.is_empty() {
        let why = if events.is_empty() {
            "the trace has no events"
        } else {
            "no event matches the filter"
        };
        f.render_widget(Paragraph::new(Line::styled(why, style::dim())), inner);
    } else {
        f.render_widget(Paragraph::new(lines), inner);
    }
}
