//! Drawing: `render(&App, &mut Frame)` lays out the panels; nothing here changes state.
//!
//! From 120 columns on, the ranks and the diagnosis sit side by side above the event log;
//! below that the ranks take the full width and the diagnosis sits beside the log.

mod diagnosis;
pub mod events;
mod header;
mod ranks;
pub mod style;
mod timeline;

use crate::app::App;
use crate::input::KEYS;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

pub use ranks::scroll_offset;

/// Below this size the screen only asks for a larger terminal.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;

pub fn render(app: &App, f: &mut Frame) {
    let area = f.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        f.render_widget(
            Paragraph::new(format!(
                "ringside needs at least {MIN_WIDTH}x{MIN_HEIGHT} (this is {}x{}); q quits",
                area.width, area.height
            )),
            area,
        );
        return;
    }
    let [head, body, bar, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Fill(1),
        Constraint::Length(2),
        Constraint::Length(1),
    ])
    .areas(area);
    header::render(app, f, head);
    if area.width >= 120 {
        let [top, log] =
            Layout::vertical([Constraint::Percentage(58), Constraint::Fill(1)]).areas(body);
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(55), Constraint::Fill(1)]).areas(top);
        ranks::render(app, f, left);
        diagnosis::render(app, f, right);
        events::render(app, f, log);
    } else {
        // as tall as the ranks need, up to half the body
        let top_h = (app.ranks() as u16 + 3).clamp(5, body.height / 2);
        let [top, bottom] =
            Layout::vertical([Constraint::Length(top_h), Constraint::Fill(1)]).areas(body);
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(40), Constraint::Fill(1)]).areas(bottom);
        ranks::render(app, f, top);
        diagnosis::render(app, f, left);
        events::render(app, f, right);
    }
    timeline::render(app, f, bar);
    footer(app, f, foot);
    if app.help {
        help(f, area);
    }
}

fn footer(app: &App, f: &mut Frame, area: Rect) {
    let line = if let Some(msg) = &app.status {
        Line::styled(format!(" {msg}"), Style::default().fg(Color::Yellow))
    } else if app.editing.is_some() {
        Line::styled(
            " type ranks (3, r3) and kinds (send, -step); Enter applies, Esc cancels",
            Style::default().fg(Color::Yellow),
        )
    } else {
        let mut spans = vec![Span::raw(" ")];
        for s in style::LEGEND {
            spans.push(Span::styled(
                format!("■ {} ", s.name()),
                style::state_style(s),
            ));
        }
        let used: usize = spans.iter().map(|s| s.width()).sum();
        let hint = "? keys  q quit ";
        spans.push(Span::raw(
            " ".repeat((area.width as usize).saturating_sub(used + hint.len())),
        ));
        spans.push(Span::styled(hint, style::dim()));
        Line::from(spans)
    };
    f.render_widget(Paragraph::new(line), area);
}

fn help(f: &mut Frame, area: Rect) {
    let w = 72.min(area.width);
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
                .title(Span::styled(" keys ", style::title())),
        ),
        popup,
    );
}
