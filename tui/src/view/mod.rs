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
use crate::input::KEYS;
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
    let [head, body, timeline, foot] = Layout::vertical([
        Constraint::Length(head_h),
        Constraint::Fill(1),
        Constraint::Length(2),
        Constraint::Length(1),
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
        help(f, area);
    }
    if !app.color {
        strip_colors(f.buffer_mut());
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
        Hit::Time(timeline::time_at(app, a.timeline, x))
    } else {
        Hit::None
    }
}

fn footer(app: &App, f: &mut Frame, area: Rect) {
    let line = if let Some(e) = &app.editing {
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
        let mut spans = vec![
            Span::styled(format!(" {lead}{}▏", e.text), style::notice()),
            Span::styled(hint, style::dim()),
        ];
        if let Some(msg) = &app.status {
            spans.push(Span::styled(format!("  {msg}"), style::bad()));
        }
        Line::from(spans)
    } else if let Some(msg) = &app.status {
        Line::styled(format!(" {msg}"), style::notice())
    } else {
        let mut spans = vec![Span::raw(" ")];
        for s in style::LEGEND {
            spans.push(Span::styled(
                format!("{} ", s.name()),
                style::state_style(s),
            ));
        }
        for c in style::CULPRITS {
            spans.push(Span::styled(
                format!("{}{} ", c.glyph(), c.name()),
                style::culprit_style(),
            ));
        }
        let hint = " ? keys  q quit ";
        let used: usize = spans.iter().map(|s| s.width()).sum();
        let room = (area.width as usize).saturating_sub(hint.len());
        if used > room {
            // keep the hint; drop legend entries from the end
            while spans.iter().map(|s| s.width()).sum::<usize>() > room && spans.len() > 1 {
                spans.pop();
            }
        }
        let used: usize = spans.iter().map(|s| s.width()).sum();
        spans.push(Span::raw(" ".repeat(room.saturating_sub(used))));
        spans.push(Span::styled(hint, style::title()));
        Line::from(spans)
    };
    f.render_widget(Paragraph::new(line), area);
}

fn help(f: &mut Frame, area: Rect) {
    let w = 76.min(area.width);
    let h = (KEYS.len() as u16 + 2).min(area.height);
    let [row] = Layout::vertical([Constraint::Length(h)])
        .flex(Flex::Center)
        .areas(area);
    let [popup] = Layout::horizontal([Constraint::Length(w)])
        .flex(Flex::Center)
        .areas(row);
    f.render_widget(Clear, popup);
    let lines: Vec<Line> = KEYS
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(
                    format!(" {k:<10} "),
                    Style::default()
                        .fg(Color::Cyan)
                        .add_modifier(Modifier::BOLD),
                ),
                Span::raw(*what),
            ])
        })
        .collect();
    f.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(Span::styled(" keys (any key closes) ", style::title())),
        ),
        popup,
    );
}
