//! The diagnosis at the cursor: root causes in words, and the wait-for graph as a picture
//! (ranks on a circle, arrows from waiter to awaited) or as a list.

use crate::app::App;
use crate::ui::style::{self, fmt_ranks, state_color, state_style};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::canvas::{Canvas, Context, Line as CanvasLine};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;
use ringside_sim::diagnose::RankState;
use ringside_sim::units::fmt_time;
use std::f64::consts::PI;

/// Above this many ranks in the picture, only the ends of wait chains are named.
const LABELS_MAX: usize = 48;

pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let block = Block::default().borders(Borders::ALL).title(Span::styled(
        format!(" diagnosis at {} ", fmt_time(app.fold.t)),
        style::title(),
    ));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let d = &app.diagnosis;
    let mut lines: Vec<Line> = Vec::new();
    if d.causes.is_empty() {
        if d.edges.is_empty() {
            lines.push(Line::styled("no rank waits in a collective", style::dim()));
        } else if app.fold.ranks.iter().any(|v| v.state == RankState::Blocked) {
            lines.push(Line::styled(
                "root cause: not determined",
                Style::default().fg(Color::Red),
            ));
        } else {
            lines.push(Line::styled(
                "no root cause: the waits are in progress",
                style::dim(),
            ));
        }
    }
    for c in &d.causes {
        lines.push(Line::from(vec![
            Span::styled(
                format!("{} ", c.cause),
                Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
            ),
            Span::raw(c.text.clone()),
        ]));
    }
    let blocked: Vec<u32> = (0..app.ranks())
        .filter(|&r| app.state_of(r) == RankState::Blocked)
        .collect();
    if !blocked.is_empty() {
        lines.push(Line::from(vec![
            Span::styled("blocked: ", Style::default().fg(Color::Red)),
            Span::raw(format!(
                "rank{} {}",
                if blocked.len() == 1 { "" } else { "s" },
                fmt_ranks(&blocked, 12)
            )),
        ]));
    }
    let text_h = wrapped_height(&lines, inner.width).min(inner.height / 2 + 1);
    let [text_area, graph_area] =
        Layout::vertical([Constraint::Length(text_h), Constraint::Fill(1)]).areas(inner);
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), text_area);
    if d.edges.is_empty() || graph_area.height == 0 {
        return;
    }
    if app.shows_picture() {
        render_picture(app, f, graph_area);
    } else {
        render_list(app, f, graph_area);
    }
}

fn wrapped_height(lines: &[Line], width: u16) -> u16 {
    let w = width.max(1) as usize;
    lines
        .iter()
        .map(|l| l.width().max(1).div_ceil(w) as u16)
        .sum()
}

/// Who waits for whom, one waiter per line.
fn render_list(app: &App, f: &mut Frame, area: Rect) {
    let d = &app.diagnosis;
    let mut waiters: Vec<(u32, Vec<u32>)> = Vec::new();
    for &(a, b) in &d.edges {
        match waiters.last_mut() {
            Some((w, v)) if *w == a => v.push(b),
            _ => waiters.push((a, vec![b])),
        }
    }
    let rows = area.height as usize;
    let more = waiters.len().saturating_sub(rows);
    let shown = if more > 0 {
        rows.saturating_sub(1)
    } else {
        rows
    };
    let mut lines: Vec<Line> = waiters
        .iter()
        .take(shown)
        .map(|(a, bs)| {
            let st = app.state_of(*a);
            let call = app.fold.ranks[*a as usize].call.as_ref();
            let what = call.map_or(String::new(), |c| match c.peer {
                // a send or recv: the message's direction, peer and group
                Some(p) => format!(
                    "  {} #{} {} {p} in group {} since {}",
                    c.op.name(),
                    c.seq,
                    if c.op.name() == "send" { "to" } else { "from" },
                    c.group.0,
                    fmt_time(c.since_ns)
                ),
                None => format!(
                    "  {} #{} step {}/{} since {}",
                    c.op.name(),
                    c.seq,
                    c.step + 1,
                    c.steps,
                    fmt_time(c.since_ns)
                ),
            });
            Line::from(vec![
                Span::styled(format!("{a:>4}"), state_style(st)),
                Span::raw(" waits for "),
                Span::styled(
                    fmt_ranks(bs, 4),
                    Style::default().add_modifier(Modifier::BOLD),
                ),
                Span::styled(what, style::dim()),
            ])
        })
        .collect();
    if more > 0 {
        lines.push(Line::styled(
            format!(
                "… {} more waiting ranks (g: picture)",
                waiters.len() - shown
            ),
            style::dim(),
        ));
    }
    f.render_widget(Paragraph::new(lines), area);
}

/// Ranks on a circle, clockwise from the top; an arrow from each waiter to each rank it waits
/// for, red when the waiter is blocked.
fn render_picture(app: &App, f: &mut Frame, area: Rect) {
    let d = &app.diagnosis;
    let nodes: Vec<u32> = if app.fold.ranks.len() <= crate::app::PICTURE_MAX_RANKS {
        (0..app.ranks()).collect()
    } else {
        app.graph_ranks()
    };
    let n = nodes.len().max(1) as f64;
    let mut index = vec![0usize; app.fold.ranks.len()];
    for (k, &r) in nodes.iter().enumerate() {
        if let Some(x) = index.get_mut(r as usize) {
            *x = k;
        }
    }
    // with many ranks, name only the ends of the wait chains (and the selected rank)
    let crowded = nodes.len() > LABELS_MAX;
    let waiting: Vec<bool> = {
        let mut w = vec![false; app.fold.ranks.len()];
        for &(a, _) in &d.edges {
            if let Some(x) = w.get_mut(a as usize) {
                *x = true;
            }
        }
        w
    };
    // cells are about twice as tall as wide: stretch the bounds so the circle looks round
    let aspect = f64::from(area.width.max(1)) / (f64::from(area.height.max(1)) * 2.0);
    let (xb, yb) = if aspect >= 1.0 {
        (1.25 * aspect, 1.25)
    } else {
        (1.25, 1.25 / aspect)
    };
    let pos = |r: u32| -> (f64, f64) {
        let k = index.get(r as usize).copied().unwrap_or(0) as f64;
        let a = PI / 2.0 - 2.0 * PI * k / n;
        (a.cos(), a.sin())
    };
    let canvas = Canvas::default()
        .x_bounds([-xb, xb])
        .y_bounds([-yb, yb])
        .paint(|ctx| {
            for &(a, b) in &d.edges {
                let color = if app.state_of(a) == RankState::Blocked {
                    Color::Red
                } else {
                    Color::Yellow
                };
                arrow(ctx, pos(a), pos(b), color, !crowded);
            }
            ctx.layer();
            for &r in &nodes {
                if crowded && waiting.get(r as usize) == Some(&true) && r != app.selected {
                    continue;
                }
                let (x, y) = pos(r);
                let st = app.state_of(r);
                let mut style = Style::default()
                    .fg(state_color(st))
                    .add_modifier(Modifier::BOLD);
                if r == app.selected {
                    style = style.add_modifier(Modifier::REVERSED);
                }
                ctx.print(x, y, Span::styled(r.to_string(), style));
            }
        });
    f.render_widget(canvas, area);
}

/// An arrow from `p` to `q`, both ends pulled in so labels stay readable, shifted a little to
/// its right so that two opposite arrows do not overlap.
fn arrow(ctx: &mut Context, p: (f64, f64), q: (f64, f64), color: Color, glyph: bool) {
    let (dx, dy) = (q.0 - p.0, q.1 - p.1);
    let len = (dx * dx + dy * dy).sqrt();
    if len < 1e-9 {
        return;
    }
    let (ux, uy) = (dx / len, dy / len);
    let (nx, ny) = (uy * 0.05, -ux * 0.05);
    let cut = 0.16_f64.min(len / 3.0);
    let s = (p.0 + ux * cut + nx, p.1 + uy * cut + ny);
    let e = (q.0 - ux * cut + nx, q.1 - uy * cut + ny);
    ctx.draw(&CanvasLine::new(s.0, s.1, e.0, e.1, color));
    if !glyph {
        return;
    }
    // braille arrowheads are a few dots: a glyph says the direction plainly
    let (hx, hy) = (q.0 - ux * cut * 1.6 + nx, q.1 - uy * cut * 1.6 + ny);
    ctx.print(
        hx,
        hy,
        Span::styled(
            direction_glyph(ux, uy).to_string(),
            Style::default().fg(color).add_modifier(Modifier::BOLD),
        ),
    );
}

/// The arrow among the eight that is closest to the direction (ux, uy).
fn direction_glyph(ux: f64, uy: f64) -> char {
    const ARROWS: [char; 8] = ['→', '↗', '↑', '↖', '←', '↙', '↓', '↘'];
    let a = uy.atan2(ux).rem_euclid(2.0 * PI);
    ARROWS[((a / (PI / 4.0)).round() as usize) % 8]
}
