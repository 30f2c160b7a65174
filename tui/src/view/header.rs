//! The header: scenario, seed, ranks and how the trace ends — its outcome, every root cause
//! (which names its culprit) and the exact blocked count with the ranks as ranges — on every
//! screen, whatever moment the cursor shows; then virtual time, event i of N and the current
//! event; then the notes about the trace, when it has some.

use crate::app::App;
use crate::state::ranges::fit_ranks;
use crate::view::style;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use ringside_sim::scenario::Outcome;
use ringside_sim::units::fmt_time;

/// The verdict is cut to this many lines (the diagnosis panel has the rest).
const VERDICT_LINES: usize = 3;

fn outcome_style(o: Option<Outcome>) -> Style {
    let st = match o {
        Some(Outcome::Completed) | Some(Outcome::Rebuilt) => style::good(),
        Some(Outcome::Stalled) | Some(Outcome::TimedOut) => style::bad(),
        None => style::notice(),
    };
    st.add_modifier(Modifier::BOLD)
}

/// Pieces of text laid out in lines of `width`: a piece (spans kept together) that does not
/// fit starts a new line indented by two; at most `max` lines, the last one ending in `…` when
/// some were left out.
fn flow(pieces: Vec<Vec<Span<'static>>>, width: usize, max: usize) -> Vec<Line<'static>> {
    let piece_width = |p: &[Span]| p.iter().map(Span::width).sum::<usize>();
    let mut lines: Vec<Vec<Vec<Span>>> = vec![Vec::new()];
    let mut used = 0;
    let mut cut = false;
    for piece in pieces {
        let w = piece_width(&piece);
        if used + w > width && used > 2 {
            if lines.len() == max {
                cut = true;
                break;
            }
            lines.push(vec![vec![Span::raw("  ")]]);
            used = 2;
            // a separator does not start a line
            if piece.iter().all(|s| s.content.trim().is_empty()) {
                continue;
            }
        }
        used += w;
        lines.last_mut().expect("a line").push(piece);
    }
    if cut {
        let last = lines.last_mut().expect("a line");
        let mut w: usize = last.iter().map(|p| piece_width(p)).sum();
        while w + 1 > width && last.len() > 1 {
            w -= last.pop().map_or(0, |p| piece_width(&p));
        }
        last.push(vec![Span::styled("…", style::dim())]);
    }
    lines
        .into_iter()
        .map(|l| Line::from(l.into_iter().flatten().collect::<Vec<_>>()))
        .collect()
}

/// The first lines: the trace, then how it ends.
fn verdict_lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let trace = &app.loaded.trace;
    let v = &app.loaded.verdict;
    let mut pieces = vec![
        vec![
            Span::styled(
                " ringside ",
                style::title().add_modifier(Modifier::REVERSED),
            ),
            Span::raw(" "),
            Span::styled(
                style::printable(&trace.header.scenario.name).into_owned(),
                style::title(),
            ),
        ],
        vec![Span::raw(format!("  seed {}", trace.header.seed))],
        vec![Span::raw(format!("  {} ranks  ", app.ranks()))],
    ];
    let word = match v.outcome {
        Some(o) => o.to_string(),
        // a trace cut short (an interrupted run) has no footer
        None => "unfinished".into(),
    };
    let has_causes = !v.root_causes.is_empty();
    pieces.push(vec![Span::styled(
        if has_causes || !v.blocked.is_empty() {
            format!("{word}:")
        } else {
            word
        },
        outcome_style(v.outcome),
    )]);
    for (i, c) in v.root_causes.iter().enumerate() {
        let sep = if i == 0 { " " } else { ", " };
        pieces.push(vec![Span::raw(sep)]);
        pieces.push(vec![Span::styled(c.to_string(), style::culprit_style())]);
    }
    if !v.blocked.is_empty() {
        if !has_causes {
            pieces.push(vec![Span::styled(
                " root cause not determined",
                style::bad(),
            )]);
        }
        pieces.push(vec![Span::raw(" · ")]);
        let n = v.blocked.len();
        let head = if n == 1 {
            "rank ".to_string()
        } else {
            format!("{n} ranks: ")
        };
        // the ranges fit a line of their own: the count stays exact, a cut list says how
        // many it left
        let room = width.saturating_sub(head.len() + 11).max(12);
        pieces.push(vec![
            Span::styled("blocked: ", style::bad()),
            Span::raw(format!("{head}{}", fit_ranks(&v.blocked, room))),
        ]);
    }
    flow(pieces, width, VERDICT_LINES)
}

/// The notes about the trace, on one line.
fn notes_line(app: &App, width: usize) -> Option<Line<'static>> {
    let notes = app.loaded.notes();
    if notes.is_empty() {
        return None;
    }
    let text = format!(" note: {}", notes.join(" · "));
    let more = if text.chars().count() > width {
        " (? shows all)"
    } else {
        ""
    };
    Some(Line::from(vec![
        Span::styled(
            style::pad(&text, width.saturating_sub(more.len())),
            style::notice(),
        ),
        Span::styled(more, style::dim()),
    ]))
}

/// Every line of the header at `width`.
pub fn lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let w = width as usize;
    let mut out = verdict_lines(app, w);
    let current = app
        .pos
        .checked_sub(1)
        .and_then(|i| app.loaded.events().get(i))
        .map_or(String::new(), |(_, ev)| format!("  ({})", ev.kind()));
    let mut place = vec![
        Span::raw(" t "),
        Span::styled(fmt_time(app.fold.t), style::title()),
        Span::raw(format!(" / {}", fmt_time(app.loaded.end_ns()))),
        Span::raw("   event "),
        Span::styled(app.pos.to_string(), style::title()),
        Span::raw(format!(" of {}", app.loaded.len())),
        Span::raw(current),
    ];
    if app.loaded.answer == Some(app.pos) {
        place.push(Span::styled("  final answer", style::dim()));
    }
    out.push(Line::from(place));
    out.extend(notes_line(app, w));
    out
}

/// Rows the header needs at `width`.
pub fn height(app: &App, width: u16) -> u16 {
    lines(app, width).len() as u16
}

pub fn render(app: &App, f: &mut Frame, area: Rect) {
    f.render_widget(Paragraph::new(lines(app, area.width)), area);
}
