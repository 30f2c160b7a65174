//! The wait-for graph, cut into lines of ranks that wait each for the next
//! ([`WaitPath`]): as text, `2 → 1 → 0`, a long line shortened in the middle to fit
//! (`99 → … 250 more → 102 → 101 → 100✗`); as a picture when it has few ranks, each cycle on
//! a circle of its own with its ranks in the order they wait, so that a ring's arrows run
//! around it instead of across. A large graph's picture is its lines, not a ring of dots.

use crate::app::{App, PICTURE_MAX_RANKS};
use crate::state::paths::WaitPath;
use crate::view::style::{self, state_color};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::canvas::{Canvas, Context, Line as CanvasLine};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use ringside_sim::diagnose::RankState;
use std::f64::consts::PI;

/// A rank as the graph names it: its number, and its culprit glyph when it has one.
fn label(app: &App, r: u32) -> (String, Style) {
    let s = app.shown_of(r);
    match s.culprit {
        Some(c) => (format!("{r}{}", c.glyph()), style::culprit_style()),
        None => (r.to_string(), style::shown_style(&s)),
    }
}

/// One path on one line of at most `width` columns: the ranks nearest its end kept, the
/// middle counted; a cycle says so, and on a mesh the group the first rank waits in.
pub fn path_line(app: &App, p: &WaitPath, width: usize) -> Line<'static> {
    let mut note = String::new();
    if p.is_cycle() {
        note.push_str("  cycle");
    }
    if app.loaded.has_groups() {
        // the groups its waiters wait in
        let waiters = &p.ranks[..p.ranks.len() - 1];
        let mut groups = Vec::new();
        for &r in waiters {
            if let Some(c) = app.fold.ranks.get(r as usize).and_then(|v| v.call.as_ref()) {
                if !groups.contains(&c.group) {
                    groups.push(c.group);
                }
            }
        }
        let named: Vec<String> = groups
            .iter()
            .map(|&g| app.loaded.group_label(g, 14))
            .collect();
        if !named.is_empty() {
            note.push_str(&format!("  {}", named.join(", ")));
        }
    }
    let labels: Vec<(String, Style)> = p.ranks.iter().map(|&r| label(app, r)).collect();
    let arrow = " → ";
    let full: usize = labels.iter().map(|l| l.0.chars().count()).sum::<usize>()
        + arrow.chars().count() * labels.len().saturating_sub(1);
    let room = width.saturating_sub(note.chars().count()).max(12);
    // the first rank, then as many of the last as fit after `… N more`
    let keep_tail = if full <= room {
        labels.len()
    } else {
        let mut used = labels[0].0.chars().count() + 3 + "… 99999 more".len();
        let mut k = 0;
        for l in labels[1..].iter().rev() {
            let w = l.0.chars().count() + 3;
            if used + w > room || k + 2 >= labels.len() {
                break;
            }
            used += w;
            k += 1;
        }
        k.max(1)
    };
    // the items shown, each with its rank (None for the count of those left out)
    let mut items: Vec<(String, Style, Option<u32>)> = Vec::new();
    let item = |i: usize| (labels[i].0.clone(), labels[i].1, Some(p.ranks[i]));
    if keep_tail >= labels.len() {
        items.extend((0..labels.len()).map(item));
    } else {
        items.push(item(0));
        let hidden = labels.len() - 1 - keep_tail;
        items.push((format!("… {hidden} more"), style::dim(), None));
        items.extend((labels.len() - keep_tail..labels.len()).map(item));
    }
    let mut spans = Vec::new();
    let mut prev: Option<u32> = None;
    for (i, (text, st, r)) in items.into_iter().enumerate() {
        if i > 0 {
            // a link a partition cuts is drawn cut
            match (prev, r) {
                (Some(a), Some(b)) if app.cut_link(a, b) => {
                    spans.push(Span::styled(format!(" {} ", style::CUT), style::bad()))
                }
                _ => spans.push(Span::styled(arrow, style::dim())),
            }
        }
        spans.push(Span::styled(text, st.add_modifier(Modifier::BOLD)));
        prev = r;
    }
    spans.push(Span::styled(note, style::dim()));
    Line::from(spans)
}

/// The picture in `area`: circles for a small graph, its lines for a large one.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let paths = app.wait_paths();
    let mut nodes: Vec<u32> = Vec::new();
    let mut circles: Vec<Vec<u32>> = Vec::new();
    let mut placed = vec![false; app.fold.ranks.len()];
    let mut place = |r: u32, into: &mut Vec<u32>| {
        if let Some(p) = placed.get_mut(r as usize) {
            if !*p {
                *p = true;
                into.push(r);
            }
        }
    };
    for p in paths.iter().filter(|p| p.is_cycle()) {
        let mut c = Vec::new();
        for &r in p.distinct() {
            place(r, &mut c);
        }
        nodes.extend(&c);
        circles.push(c);
    }
    let mut rest = Vec::new();
    for p in &paths {
        for &r in &p.ranks {
            place(r, &mut rest);
        }
    }
    if app.fold.ranks.len() <= PICTURE_MAX_RANKS {
        // a small world shows its idle ranks too
        for r in 0..app.ranks() {
            place(r, &mut rest);
        }
    }
    nodes.extend(&rest);
    if nodes.len() > PICTURE_MAX_RANKS {
        let mut lines = vec![Line::styled(
            format!(
                "{} ranks in {} {} of waits (→ waits for)",
                nodes.len(),
                paths.len(),
                if paths.len() == 1 { "line" } else { "lines" }
            ),
            style::title(),
        )];
        let w = area.width as usize;
        lines.extend(paths.iter().map(|p| path_line(app, p, w)));
        f.render_widget(Paragraph::new(lines), area);
        return;
    }
    if !rest.is_empty() {
        circles.push(rest);
    }
    render_circles(app, f, area, &circles);
}

/// Each list of ranks on its own circle, the circles in a row or a column (whichever lets
/// them be larger), ranks clockwise from the top.
fn render_circles(app: &App, f: &mut Frame, area: Rect, circles: &[Vec<u32>]) {
    let d = &app.diagnosis;
    // cells are about twice as tall as wide: stretch the bounds so a circle looks round
    let aspect = f64::from(area.width.max(1)) / (f64::from(area.height.max(1)) * 2.0);
    let (xb, yb) = if aspect >= 1.0 {
        (1.25 * aspect, 1.25)
    } else {
        (1.25, 1.25 / aspect)
    };
    let k = circles.len().max(1) as f64;
    let row = (xb / k).min(yb) >= (yb / k).min(xb);
    let radius = if row {
        (xb / k).min(yb) / 1.25
    } else {
        (yb / k).min(xb) / 1.25
    };
    let mut at = vec![(0.0, 0.0); app.fold.ranks.len()];
    for (i, c) in circles.iter().enumerate() {
        let off = -1.0 + (2.0 * i as f64 + 1.0) / k;
        let (cx, cy) = if row {
            (off * xb, 0.0)
        } else {
            (0.0, -off * yb)
        };
        let n = c.len() as f64;
        for (j, &r) in c.iter().enumerate() {
            let a = PI / 2.0 - 2.0 * PI * j as f64 / n;
            let rr = if c.len() == 1 { 0.0 } else { radius };
            if let Some(p) = at.get_mut(r as usize) {
                *p = (cx + rr * a.cos(), cy + rr * a.sin());
            }
        }
    }
    let pos = |r: u32| at.get(r as usize).copied().unwrap_or((0.0, 0.0));
    let canvas = Canvas::default()
        .x_bounds([-xb, xb])
        .y_bounds([-yb, yb])
        .paint(|ctx| {
            for (a, b) in d.edges() {
                let color = if app.state_of(a) == RankState::Blocked {
                    Color::Red
                } else {
                    Color::Yellow
                };
                arrow(ctx, pos(a), pos(b), color, radius.min(1.0));
                if app.cut_link(a, b) {
                    // the link a partition cuts, crossed out halfway
                    let ((x1, y1), (x2, y2)) = (pos(a), pos(b));
                    ctx.print(
                        (x1 + x2) / 2.0,
                        (y1 + y2) / 2.0,
                        Span::styled(style::CUT.to_string(), style::bad()),
                    );
                }
            }
            ctx.layer();
            for &r in circles.iter().flatten() {
                let (x, y) = pos(r);
                let s = app.shown_of(r);
                let (text, mut st) = label(app, r);
                if s.culprit.is_none() {
                    st = Style::default().fg(state_color(s.state));
                }
                st = st.add_modifier(Modifier::BOLD);
                if r == app.selected {
                    st = st.add_modifier(Modifier::REVERSED);
                }
                ctx.print(x, y, Span::styled(text, st));
            }
        });
    f.render_widget(canvas, area);
}

/// An arrow from `p` to `q`, both ends pulled in so labels stay readable, shifted a little to
/// its right so that two opposite arrows do not overlap; `scale` is the circles' radius.
fn arrow(ctx: &mut Context, p: (f64, f64), q: (f64, f64), color: Color, scale: f64) {
    let (dx, dy) = (q.0 - p.0, q.1 - p.1);
    let len = (dx * dx + dy * dy).sqrt();
    if len < 1e-9 {
        return;
    }
    let (ux, uy) = (dx / len, dy / len);
    let (nx, ny) = (uy * 0.05 * scale, -ux * 0.05 * scale);
    let cut = (0.16 * scale).min(len / 3.0);
    let s = (p.0 + ux * cut + nx, p.1 + uy * cut + ny);
    let e = (q.0 - ux * cut + nx, q.1 - uy * cut + ny);
    ctx.draw(&CanvasLine::new(s.0, s.1, e.0, e.1, color));
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
