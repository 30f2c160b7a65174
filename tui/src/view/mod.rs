//! Drawing: `render(&App, &mut Frame)` lays out the panels; nothing here changes state.
//! [`hit`] answers what is under a mouse cell with the same layout.
//!
//! From 120 columns on, the ranks and the diagnosis sit side by side above the event log;
//! below that the three panels are stacked at full width, each under a one-line title, so
//! that no text is squeezed into a narrow column.

mod detail;
mod diagnosis;
pub mod events;
mod graph;
mod header;
pub mod ranks;
pub mod style;
mod timeline;

use crate::app::{App, Focus, Prompt};
use crate::input::{Mode, KEYS};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;
use ringside_sim::units::Nanos;

pub use ranks::scroll_offset;

/// Below this size the screen only asks for a larger terminal.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;
/// From this width on, the ranks and the diagnosis sit side by side.
pub const WIDE: u16 = 120;

/// Where each part of the screen is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Areas {
    pub head: Rect,
    pub ranks: Rect,
    pub diagnosis: Rect,
    pub events: Rect,
    pub timeline: Rect,
    pub foot: Rect,
    /// Panels in full boxes side by side (wide) or stacked under title lines.
    pub wide: bool,
}

/// The layout of a screen of `area`, or None when it is too small.
pub fn layout(app: &App, area: Rect) -> Option<Areas> {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        return None;
    }
    // the header as tall as the verdict and the notes need, leaving the panels room
    let head_h = header::height(app, area.width).min(area.height.saturating_sub(12).max(2));
    // a prompt's error has a line of its own, above the prompt
    let foot_h = if app.editing.as_ref().is_some_and(|e| e.error.is_some()) {
        2
    } else {
        1
    };
    let [head, body, timeline, foot] = Layout::vertical([
        Constraint::Length(head_h),
        Constraint::Fill(1),
        Constraint::Length(2),
        Constraint::Length(foot_h),
    ])
    .areas(area);
    let wide = area.width >= WIDE;
    let (ranks, diagnosis, events) = if wide {
        let [top, log] =
            Layout::vertical([Constraint::Percentage(58), Constraint::Fill(1)]).areas(body);
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(55), Constraint::Fill(1)]).areas(top);
        (left, right, log)
    } else {
        // the ranks as tall as they need, up to about a third; the diagnosis as tall as its
        // text, up to about a third; the log the rest
        let h = body.height;
        let ranks_h =
            (ranks::wanted_height(app, area.width).saturating_add(1)).clamp(2, (h * 2 / 5).max(4));
        // a picture of the wait-for graph may take all but three lines of the log
        let want = diagnosis::wanted_height(app, area.width) + 1;
        let most = if app.shows_picture() {
            h.saturating_sub(ranks_h + 3)
        } else {
            h.saturating_sub(ranks_h) / 2
        };
        let diag_h = want.clamp(3, most.max(3));
        let [r, d, e] = Layout::vertical([
            Constraint::Length(ranks_h),
            Constraint::Length(diag_h),
            Constraint::Fill(1),
        ])
        .areas(body);
        (r, d, e)
    };
    Some(Areas {
        head,
        ranks,
        diagnosis,
        events,
        timeline,
        foot,
        wide,
    })
}

/// A panel's frame: a box when wide, a title line when stacked; the focused panel's title is
/// reversed.
pub fn panel<'a>(app: &App, wide: bool, focus: Focus, title: Line<'a>) -> Block<'a> {
    let mut title = title;
    if app.focus == focus {
        title = title.patch_style(Style::default().add_modifier(Modifier::REVERSED));
    }
    Block::default()
        .borders(if wide { Borders::ALL } else { Borders::TOP })
        .title(title)
}

pub fn render(app: &App, f: &mut Frame) {
    let area = f.area();
    let Some(a) = layout(app, area) else {
        f.render_widget(
            Paragraph::new(format!(
                "ringside needs at least {MIN_WIDTH}x{MIN_HEIGHT} (this is {}x{}); q quits",
                area.width, area.height
            )),
            area,
        );
        return;
    };
    header::render(app, f, a.head);
    ranks::render(app, f, a.ranks, a.wide);
    diagnosis::render(app, f, a.diagnosis, a.wide);
    events::render(app, f, a.events, a.wide);
    timeline::render(app, f, a.timeline);
    footer(app, f, a.foot);
    if app.detail.is_some() {
        detail::render(app, f, area);
    }
    if app.help {
        help(app, f, area);
    }
    style::neutralize(f.buffer_mut());
    if !app.color {
        strip_colors(f.buffer_mut());
    } else if app.light {
        style::lighten(f.buffer_mut());
    }
}

/// `NO_COLOR`: every cell in the terminal's own colours; bold, reverse and underline stay.
fn strip_colors(b: &mut Buffer) {
    for cell in b.content.iter_mut() {
        cell.set_fg(Color::Reset);
        cell.set_bg(Color::Reset);
    }
}

/// What is under the cell (x, y).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hit {
    Rank(u32),
    /// An event of the log, by index.
    Event(usize),
    /// A point of the timeline.
    Time(Nanos),
    /// A marker on the timeline, by the event it marks.
    Marker(usize),
    /// Elsewhere in a panel.
    Panel(Focus),
    None,
}

pub fn hit(app: &App, area: Rect, x: u16, y: u16) -> Hit {
    let Some(a) = layout(app, area) else {
        return Hit::None;
    };
    let at = ratatui::layout::Position { x, y };
    if a.ranks.contains(at) {
        ranks::rank_at(app, a.ranks, a.wide, x, y).map_or(Hit::Panel(Focus::Ranks), Hit::Rank)
    } else if a.diagnosis.contains(at) {
        Hit::Panel(Focus::Diagnosis)
    } else if a.events.contains(at) {
        events::event_at(app, a.events, a.wide, y).map_or(Hit::Panel(Focus::Events), Hit::Event)
    } else if a.timeline.contains(at) && y == a.timeline.y {
        match timeline::marker_at(app, a.timeline, x) {
            Some(pos) => Hit::Marker(pos),
            None => Hit::Time(timeline::time_at(app, a.timeline, x)),
        }
    } else {
        Hit::None
    }
}

/// The keys that act now, most useful first: what the mode and the focused panel answer to.
fn context_keys(app: &App) -> Vec<(&'static str, &'static str)> {
    match app.mode() {
        Mode::Help => vec![("↑↓ PgUp PgDn", "scroll"), ("Esc ?", "close")],
        Mode::Detail => vec![("↑↓", "scroll"), ("←→", "event"), ("Esc Enter", "close")],
        Mode::Editing => Vec::new(),
        Mode::Normal => {
            let mut keys = vec![("←→", "event")];
            keys.push(match app.focus {
                Focus::Ranks => ("↑↓", "rank"),
                Focus::Diagnosis => ("↑↓", "scroll"),
                Focus::Events if app.filter.is_empty() => ("↑↓", "event"),
                Focus::Events => ("↑↓", "match"),
            });
            if !app.filter.is_empty() {
                keys.extend([("n N", "match"), ("Esc", "no filter")]);
            }
            if app.loaded.answer.is_some_and(|p| p != app.pos) {
                keys.push(("a", "answer"));
            }
            if !app.loaded.markers.markers.is_empty() {
                keys.push(("f s", "fault stall"));
            }
            keys.extend([("Enter", "detail"), ("/", "filter"), (":", "go to")]);
            if app.focus == Focus::Diagnosis && !app.diagnosis.waits.is_empty() {
                keys.push(("g", "graph"));
            }
            keys.extend([("+ -", "zoom"), ("Tab", "panel")]);
            keys
        }
    }
}

fn footer(app: &App, f: &mut Frame, area: Rect) {
    if let Some(e) = &app.editing {
        return prompt(app, e, f, area);
    }
    let line = if let Some(msg) = &app.status {
        Line::styled(format!(" {msg}"), style::notice())
    } else {
        let tail = [("?", "help"), ("q", "quit")];
        let piece = |(k, what): (&'static str, &'static str)| {
            vec![
                Span::styled(format!(" {k}"), style::title()),
                Span::styled(format!(" {what} "), style::dim()),
            ]
        };
        let width = |p: &[Span]| p.iter().map(Span::width).sum::<usize>();
        let tail: Vec<Span> = tail.into_iter().flat_map(piece).collect();
        let room = (area.width as usize).saturating_sub(width(&tail));
        let mut spans: Vec<Span> = Vec::new();
        for k in context_keys(app) {
            let p = piece(k);
            if width(&spans) + width(&p) > room {
                break;
            }
            spans.extend(p);
        }
        let used = width(&spans);
        spans.push(Span::raw(" ".repeat(room.saturating_sub(used))));
        spans.extend(tail);
        Line::from(spans)
    };
    f.render_widget(Paragraph::new(line), area);
}

/// The prompt being typed, its cursor reversed, the text scrolled to keep the cursor in
/// sight; above it, on a line of its own, what is wrong with it.
fn prompt(app: &App, e: &crate::app::Editing, f: &mut Frame, area: Rect) {
    let (lead, hint) = match e.prompt {
        Prompt::Filter => (
            "/",
            format!(
                "  {} matching · Enter keeps · Esc drops",
                if app.filter.is_empty() {
                    app.loaded.len()
                } else {
                    app.matches.len()
                }
            ),
        ),
        Prompt::Command => (":", "  rank · 0-99,101-255 · all · @14ms · #5000".into()),
    };
    let mut rows = Vec::new();
    if let Some(err) = &e.error {
        rows.push(Line::styled(
            style::pad(&format!(" {}", style::printable(err)), area.width as usize),
            style::bad(),
        ));
    }
    let (before, after) = e.line.split();
    let mut after = after.chars();
    let under = after.next().map_or(" ".to_string(), |c| c.to_string());
    let after: String = after.collect();
    // the text before the cursor keeps its end in sight
    let room = (area.width as usize).saturating_sub(4 + hint.chars().count().min(20));
    let n = before.chars().count();
    let before: String = if n > room {
        let keep: String = before.chars().skip(n - room + 1).collect();
        format!("…{keep}")
    } else {
        before
    };
    let text_style = if e.line.replace {
        style::notice().add_modifier(Modifier::DIM)
    } else {
        style::notice()
    };
    rows.push(Line::from(vec![
        Span::styled(format!(" {lead}"), style::notice()),
        Span::styled(before, text_style),
        Span::styled(under, text_style.add_modifier(Modifier::REVERSED)),
        Span::styled(after, text_style),
        Span::styled(hint, style::dim()),
    ]));
    f.render_widget(Paragraph::new(rows), area);
}

/// The legend: every state, glyph, arrow and mark the screen uses.
fn legend_lines() -> Vec<Line<'static>> {
    use crate::state::Culprit;
    use crate::state::MarkerKind;
    let head = |s: &'static str| Span::styled(format!(" {s:<13}"), style::title());
    let mut states = vec![head("states")];
    for s in style::LEGEND {
        states.push(Span::styled(
            format!("{} ", s.name()),
            style::state_style(s),
        ));
    }
    states.push(Span::styled("rendezvous", style::rendezvous_style()));
    let glyphs = vec![
        head("ranks"),
        Span::styled(
            "● ",
            style::state_style(ringside_sim::diagnose::RankState::Blocked),
        ),
        Span::raw("blocked  "),
        Span::styled(format!("{} ", style::CUT), style::bad()),
        Span::raw("blocked across a partition  "),
        Span::styled("> ", style::title()),
        Span::raw("selected"),
    ];
    let mut culprits = vec![head("culprits")];
    for c in Culprit::ALL {
        culprits.push(Span::styled(
            format!("{} ", c.glyph()),
            style::culprit_style(),
        ));
        culprits.push(Span::raw(format!("{}  ", c.name())));
    }
    let marks: Vec<Span> = [
        MarkerKind::Fault,
        MarkerKind::Watchdog,
        MarkerKind::Generation,
        MarkerKind::Stall,
    ]
    .into_iter()
    .flat_map(|k| {
        [
            Span::styled(format!("{} ", k.glyph()), timeline::marker_style(k)),
            Span::raw(format!("{}  ", k.name())),
        ]
    })
    .collect();
    let mut timeline = vec![head("timeline")];
    timeline.extend(marks);
    vec![
        Line::from(states),
        Line::from(glyphs),
        Line::from(culprits),
        Line::from(vec![
            head(""),
            Span::raw("? missing: a rank that left no Flight Recorder dump"),
        ]),
        Line::from(vec![
            head("links"),
            Span::raw("→ waits for  "),
            Span::styled("↛", style::bad()),
            Span::raw(" waits across a partition (the link is cut)"),
        ]),
        Line::from(timeline),
        Line::from(vec![
            head(""),
            Span::styled("═", Style::default().fg(Color::Red)),
            Span::raw(" stalled  "),
            Span::styled("┃", Style::default().add_modifier(Modifier::REVERSED)),
            Span::raw(" cursor  ━ before it  ╵ tick"),
        ]),
    ]
}

/// A box of `w` x `h` in the middle of `area`.
pub fn centred(area: Rect, w: u16, h: u16) -> Rect {
    let [row] = Layout::vertical([Constraint::Length(h)])
        .flex(Flex::Center)
        .areas(area);
    let [popup] = Layout::horizontal([Constraint::Length(w)])
        .flex(Flex::Center)
        .areas(row);
    popup
}

/// Every line of the help: the keys, the legend, the notes about the trace.
pub fn help_lines(app: &App) -> Vec<Line<'static>> {
    let mut lines: Vec<Line> = KEYS
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(
                    format!(" {k:<13} "),
                    Style::default()
                        .fg(Color::Cyan)
                        .add_modifier(Modifier::BOLD),
                ),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    lines.extend(legend_lines());
    let notes = app.loaded.notes();
    if !notes.is_empty() {
        lines.push(Line::raw(""));
        lines.push(Line::styled(" about this trace", style::title()));
        for n in notes {
            lines.push(Line::styled(
                format!(" · {}", style::printable(&n)),
                style::notice(),
            ));
        }
    }
    lines
}

fn help(app: &App, f: &mut Frame, area: Rect) {
    let w = 80.min(area.width);
    let inner_w = w.saturating_sub(2).max(1);
    let lines = help_lines(app);
    let total: u16 = lines
        .iter()
        .map(|l| l.width().max(1).div_ceil(inner_w as usize) as u16)
        .sum();
    let h = (total + 2).min(area.height);
    let popup = centred(area, w, h);
    f.render_widget(Clear, popup);
    let shown = h.saturating_sub(2);
    let top = app.help_scroll.min(total.saturating_sub(shown));
    let below = total.saturating_sub(top + shown);
    let title = if top > 0 || below > 0 {
        format!(" help ↑{top} ↓{below} lines · ↑↓ PgUp PgDn scroll · Esc closes · q quits ")
    } else {
        " help · Esc closes · q quits ".to_string()
    };
    f.render_widget(
        Paragraph::new(lines)
            .wrap(ratatui::widgets::Wrap { trim: false })
            .scroll((top, 0))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(Span::styled(title, style::title())),
            ),
        popup,
    );
}
