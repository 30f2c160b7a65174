//! The event log around the cursor, filtered by rank, kind and text. The offending call of
//! an application bug and the start of every fault are marked `F` and drawn in red.

use crate::app::{App, Focus};
use crate::state::describe::describe;
use crate::view::style;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use ringside_sim::trace::Event;
use ringside_sim::units::fmt_ms;

fn kind_color(ev: &Event) -> Color {
    match ev {
        Event::Fault { .. } | Event::ProcessDeath { .. } | Event::Abort { .. } => Color::Red,
        Event::Drop { .. } | Event::ProcessPause { .. } | Event::RejoinRefused { .. } => {
            Color::Magenta
        }
        Event::Timer { .. } | Event::Diagnosis { .. } => Color::Yellow,
        Event::Call { .. } | Event::Complete { .. } | Event::Step { .. } => Color::Cyan,
        Event::GenerationFormed { .. }
        | Event::RendezvousStart { .. }
        | Event::RendezvousWait { .. } => Color::Blue,
        // the most common events in the terminal's own colour
        Event::Send { .. } | Event::Deliver { .. } => Color::Reset,
        _ => Color::Green,
    }
}

/// The indices of the events shown in `rows` lines: events the filter keeps before and after
/// the cursor, the current event (`pos - 1`) always among them.
pub fn window(app: &App, rows: usize) -> Vec<usize> {
    let n = app.loaded.len();
    if rows == 0 || n == 0 {
        return Vec::new();
    }
    let cur = app.pos.checked_sub(1);
    let split = app.pos.saturating_sub(1);
    // the kept events before the split and from it on, nearest first
    let (mut before, mut after): (Vec<usize>, Vec<usize>) = if app.filter.is_empty() {
        let b = split.min(rows);
        (
            (split - b..split).rev().collect(),
            (split..n).take(rows).collect(),
        )
    } else {
        let m = &app.matches;
        let k = m.partition_point(|&i| i < split);
        let mut a: Vec<usize> = m[k..].iter().take(rows).copied().collect();
        if let Some(c) = cur {
            if a.first() != Some(&c) {
                a.insert(0, c);
                a.truncate(rows);
            }
        }
        (m[..k].iter().rev().take(rows).copied().collect(), a)
    };
    // half before the cursor, more of either side when the other runs out
    let want_before = (rows / 2).max(rows.saturating_sub(after.len()));
    before.truncate(want_before);
    after.truncate(rows - before.len());
    before.reverse();
    before.append(&mut after);
    before
}

/// The event on screen row `y` of the panel at `area`.
pub fn event_at(app: &App, area: Rect, wide: bool, y: u16) -> Option<usize> {
    let inner = crate::view::panel(app, wide, Focus::Events, Line::raw("")).inner(area);
    let k = y.checked_sub(inner.y)? as usize;
    window(app, inner.height as usize).get(k).copied()
}

pub fn render(app: &App, f: &mut Frame, area: Rect, wide: bool) {
    let filter = match &app.editing {
        Some(e) if e.prompt == crate::app::Prompt::Filter => {
            format!(" /{} {} matching", e.line.text(), app.matches.len())
        }
        _ if !app.filter.is_empty() => format!(
            " /{} {} matching (n N) ",
            app.filter.describe(),
            app.matches.len()
        ),
        _ => String::new(),
    };
    let title = Line::from(vec![
        Span::styled(" events ", style::title()),
        Span::styled(filter, style::notice()),
    ]);
    let block = crate::view::panel(app, wide, Focus::Events, title);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let events = app.loaded.events();
    let num_w = events.len().to_string().len();
    // narrow panels keep the text and drop the event numbers (the header has the cursor's)
    let numbers = inner.width >= 60;
    let time_w = fmt_ms(app.loaded.end_ns()).len();
    let cur = app.pos.checked_sub(1);
    let markers = &app.loaded.markers;
    let lines: Vec<Line> = window(app, inner.height as usize)
        .into_iter()
        .map(|i| {
            let (t, ev) = &events[i];
            let is_cur = Some(i) == cur;
            let fault = markers.is_fault(i);
            let mut base = Style::default();
            if fault {
                base = base.fg(Color::Red).add_modifier(Modifier::BOLD);
            }
            if is_cur {
                base = base.add_modifier(Modifier::REVERSED);
            } else if i >= app.pos && !fault {
                base = base.add_modifier(Modifier::DIM);
            }
            let kind = if fault { base } else { base.fg(kind_color(ev)) };
            Line::from(vec![
                Span::styled(
                    format!(
                        "{}{}{} {:>time_w$} ",
                        if is_cur { "▶" } else { " " },
                        if fault { "F" } else { " " },
                        if numbers {
                            format!("{:>num_w$}", i + 1)
                        } else {
                            String::new()
                        },
                        fmt_ms(*t)
                    ),
                    base,
                ),
                Span::styled(format!("{:<13} ", ev.kind()), kind),
                Span::styled(describe(ev), base),
            ])
        })
        .map(|line| {
            // a line that does not fit says so (Enter shows the whole event)
            if line.width() > inner.width as usize {
                let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
                let keep: String = text.chars().take(inner.width as usize - 1).collect();
                let st = line.spans.last().map(|s| s.style).unwrap_or_default();
                let mut spans = Vec::new();
                let mut used = 0;
                for s in line.spans {
                    let n = s.content.chars().count();
                    if used + n <= keep.chars().count() {
                        used += n;
                        spans.push(s);
                    } else {
                        let part: String = s
                            .content
                            .chars()
                            .take(keep.chars().count() - used)
                            .collect();
                        spans.push(Span::styled(part, s.style));
                        break;
                    }
                }
                spans.push(Span::styled("…", st));
                Line::from(spans)
            } else {
                line
            }
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
