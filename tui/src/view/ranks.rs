//! Every rank with its state, its collective and whom it waits for: a table that scrolls with
//! the selection, ordered by state (culprits and blocked ranks first) or by rank, or a compact
//! grid for large worlds.

use crate::app::{App, Focus};
use crate::state::ranges::fit_ranks;
use crate::view::style::{self, pad};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use ringside_sim::diagnose::RankState;
use ringside_sim::scenario::OpKind;
use ringside_sim::units::fmt_time;

/// First row to show so that `selected` stays in a window of `height` rows out of `n`.
pub fn scroll_offset(selected: usize, height: usize, n: usize) -> usize {
    if height == 0 || n <= height {
        return 0;
    }
    selected.saturating_sub(height / 2).min(n - height)
}

/// The table's columns. Each is shown when the trace has something to put in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// The rank's culprit glyph (or `●` when blocked) and its number.
    Rank,
    State,
    /// Mesh dimension or named group of the current call.
    Group,
    /// The generation it last installed (elastic groups).
    Generation,
    Collective,
    /// `k/total`.
    Step,
    /// The ranks it waits for in its collective (or reaches in its rendezvous).
    WaitsFor,
    /// The peer of a point-to-point op: `to 3` for a send, `from 3` for a recv.
    Peer,
    Since,
}

impl Column {
    fn title(self) -> &'static str {
        match self {
            Column::Rank => "r",
            Column::State => "state",
            Column::Group => "group",
            Column::Generation => "gen",
            Column::Collective => "collective",
            Column::Step => "step",
            Column::WaitsFor => "waits for",
            Column::Peer => "peer",
            Column::Since => "since",
        }
    }
}

/// The columns and their widths for a table `w` wide.
pub fn columns(app: &App, w: usize) -> Vec<(Column, usize)> {
    let n = app.ranks() as usize;
    let rank_w = n.saturating_sub(1).to_string().len() + 2;
    let max_steps = app
        .fold
        .ranks
        .iter()
        .filter_map(|v| v.call.as_ref().map(|c| c.steps))
        .max()
        .unwrap_or(0);
    let step_w = (2 * max_steps.to_string().len() + 1).max(4);
    let since_w = fmt_time(app.loaded.end_ns()).len().max(5);
    let mut cols = vec![(Column::Rank, rank_w), (Column::State, 10)];
    if app.loaded.has_groups() {
        cols.push((Column::Group, 9));
    }
    if app.loaded.is_elastic() {
        cols.push((Column::Generation, 3));
    }
    cols.push((Column::Collective, 0));
    cols.push((Column::Step, step_w));
    cols.push((Column::WaitsFor, 9));
    if app.loaded.has_point_to_point() {
        let peer_w = n.saturating_sub(1).to_string().len() + 5;
        cols.push((Column::Peer, peer_w));
    }
    cols.push((Column::Since, since_w));
    let fixed: usize = cols.iter().map(|c| c.1 + 1).sum();
    let spare = w.saturating_sub(fixed);
    // the collective takes up to 26 columns, the ranks it waits for the rest
    let coll = spare.clamp(8, 26);
    let waits_extra = spare.saturating_sub(coll);
    for c in &mut cols {
        match c.0 {
            Column::Collective => c.1 = coll,
            Column::WaitsFor => c.1 += waits_extra,
            _ => {}
        }
    }
    cols
}

pub fn render(app: &App, f: &mut Frame, area: Rect, wide: bool) {
    let rows = app.listed();
    let n = app.ranks() as usize;
    let mut title = format!(" ranks ({n}");
    if rows.len() != n {
        title.push_str(&format!(", {} shown", rows.len()));
    }
    title.push_str(match app.order {
        crate::state::Order::State => ", stuck first",
        crate::state::Order::Rank => ", by rank",
    });
    if app.compact {
        title.push_str(", grid");
    }
    title.push_str(") ");
    let block = crate::view::panel(app, wide, Focus::Ranks, Line::styled(title, style::title()));
    let inner = block.inner(area);
    f.render_widget(block, area);
    if app.compact {
        render_grid(app, f, inner, &rows);
    } else {
        render_table(app, f, inner, &rows);
    }
}

/// The first listed row the table shows in `height` rows.
fn first_row(app: &App, rows: &[u32], height: usize) -> usize {
    let at = rows.iter().position(|&r| r == app.selected).unwrap_or(0);
    scroll_offset(at, height, rows.len())
}

/// The rank on screen row `y` of the panel at `area`.
pub fn rank_at(app: &App, area: Rect, wide: bool, x: u16, y: u16) -> Option<u32> {
    let inner = crate::view::panel(app, wide, Focus::Ranks, Line::raw("")).inner(area);
    let rows = app.listed();
    if app.compact {
        let (cell, per_row) = grid_cells(app, inner);
        let total = rows.len().div_ceil(per_row);
        let at = rows.iter().position(|&r| r == app.selected).unwrap_or(0);
        let first = scroll_offset(at / per_row, inner.height as usize, total);
        let row = first + y.checked_sub(inner.y)? as usize;
        let col = x.checked_sub(inner.x)? as usize / cell;
        return (col < per_row)
            .then(|| rows.get(row * per_row + col).copied())
            .flatten();
    }
    let height = (inner.height as usize).saturating_sub(1);
    let k = y.checked_sub(inner.y + 1)? as usize;
    if k >= height {
        return None;
    }
    rows.get(first_row(app, &rows, height) + k).copied()
}

/// The cells of one row of the table.
fn cells(app: &App, r: u32, cols: &[(Column, usize)]) -> Vec<(String, Style)> {
    let v = &app.fold.ranks[r as usize];
    let s = app.shown_of(r);
    let sel = r == app.selected;
    let base = if sel {
        Style::default().add_modifier(Modifier::BOLD)
    } else {
        Style::default()
    };
    let m = &app.fold.membership;
    let call = v.call.as_ref();
    let wait = s.rendezvous.and(m.wait_of(r));
    cols.iter()
        .map(|&(c, w)| {
            let (text, st) = match c {
                Column::Rank => {
                    let g = style::glyph(&s);
                    let mark = if sel { '>' } else { ' ' };
                    let gst = if s.culprit.is_some() {
                        style::culprit_style()
                    } else {
                        style::state_style(s.state)
                    };
                    return (format!("{mark}{g}{:>rw$}", r, rw = w - 2), gst.patch(base));
                }
                Column::State => (s.label().to_string(), style::shown_style(&s).patch(base)),
                Column::Group => match call {
                    Some(c) if s.rendezvous.is_none() => (app.loaded.group_label(c.group, w), base),
                    _ => ("-".into(), base),
                },
                Column::Generation => {
                    let g = m
                        .generation_of
                        .get(&r)
                        .copied()
                        .or(call.map(|c| c.generation.0))
                        .unwrap_or(0);
                    (g.to_string(), base)
                }
                Column::Collective => {
                    let text = if let Some(target) = s.rendezvous {
                        format!("rebuild → gen {target}")
                    } else {
                        match (call, s.state) {
                            (Some(c), _) => {
                                let short = format!("{} #{}", c.op.name(), c.seq);
                                let long = format!("{short} {}", c.algorithm.name());
                                if long.chars().count() <= w {
                                    long
                                } else {
                                    short
                                }
                            }
                            (None, RankState::Computing) => {
                                format!("compute, iter {}", v.iteration)
                            }
                            (None, RankState::Done) => "workload done".into(),
                            _ => "-".into(),
                        }
                    };
                    (text, base)
                }
                Column::Step => match call {
                    Some(c) if c.steps > 0 && s.rendezvous.is_none() => {
                        (format!("{}/{}", c.step + 1, c.steps), base)
                    }
                    _ => ("-".into(), base),
                },
                Column::WaitsFor => {
                    let text = match (wait, call) {
                        (Some(w8), _) => format!("with {}", fmt_or_dash(&w8.reachable, w - 5)),
                        (None, _) if s.rendezvous.is_some() => "-".into(),
                        (None, Some(c)) if s.state != RankState::Dead && s.cut => format!(
                            "{} {}cut",
                            fmt_or_dash(&c.waiting_for, w.saturating_sub(5)),
                            style::CUT
                        ),
                        (None, Some(c)) if s.state != RankState::Dead => {
                            fmt_or_dash(&c.waiting_for, w)
                        }
                        _ => "-".into(),
                    };
                    (text, base)
                }
                Column::Peer => match call.and_then(|c| c.peer.map(|p| (c.op, p))) {
                    Some((op, p)) if s.state != RankState::Dead => {
                        let dir = if op == OpKind::Send { "to" } else { "from" };
                        (format!("{dir} {p}"), base)
                    }
                    _ => ("-".into(), base),
                },
                Column::Since => {
                    let t = match s.state {
                        RankState::Dead => v.dead_since.unwrap_or(v.since_ns),
                        RankState::Paused => v.paused_since.unwrap_or(v.since_ns),
                        _ => match (wait, call) {
                            (Some(w8), _) => w8.since_ns,
                            (None, Some(c)) => c.since_ns,
                            _ => v.since_ns,
                        },
                    };
                    (fmt_time(t), base)
                }
            };
            (pad(&text, w), st)
        })
        .collect()
}

fn fmt_or_dash(r: &[u32], w: usize) -> String {
    if r.is_empty() {
        "-".into()
    } else {
        fit_ranks(r, w)
    }
}

fn render_table(app: &App, f: &mut Frame, area: Rect, rows: &[u32]) {
    let cols = columns(app, area.width as usize);
    let head: Vec<Span> = cols
        .iter()
        .map(|&(c, w)| {
            let t = if c == Column::Rank {
                format!("{:>w$} ", c.title())
            } else {
                format!("{} ", pad(c.title(), w))
            };
            Span::styled(t, style::title().add_modifier(Modifier::UNDERLINED))
        })
        .collect();
    let mut lines = vec![Line::from(head)];
    let height = (area.height as usize).saturating_sub(1);
    let first = first_row(app, rows, height);
    for &r in rows.iter().skip(first).take(height) {
        let spans: Vec<Span> = cells(app, r, &cols)
            .into_iter()
            .map(|(t, st)| Span::styled(format!("{t} "), st))
            .collect();
        lines.push(Line::from(spans));
    }
    if rows.is_empty() {
        lines.push(Line::styled(
            "no rank to show: b shows every state, :all every rank",
            style::dim(),
        ));
    }
    f.render_widget(Paragraph::new(lines), area);
}

/// Rows the listed ranks need at `width`: a header and a row per rank, or the grid's rows.
pub fn wanted_height(app: &App, width: u16) -> u16 {
    let n = app.listed().len();
    let rows = if app.compact {
        let (_, per_row) = grid_cells(app, Rect::new(0, 0, width, 1));
        n.div_ceil(per_row).max(1)
    } else {
        // with no rank, a line says why
        n.max(1) + 1
    };
    rows.min(u16::MAX as usize) as u16
}

/// Width of a grid cell (glyph + rank + space) and cells per row.
fn grid_cells(app: &App, area: Rect) -> (usize, usize) {
    let cell = app.ranks().saturating_sub(1).to_string().len().max(1) + 2;
    (cell, (area.width as usize / cell).max(1))
}

fn render_grid(app: &App, f: &mut Frame, area: Rect, rows: &[u32]) {
    let (cell, per_row) = grid_cells(app, area);
    let total = rows.len().div_ceil(per_row);
    let at = rows.iter().position(|&r| r == app.selected).unwrap_or(0);
    let first = scroll_offset(at / per_row, area.height as usize, total);
    let mut lines = Vec::new();
    for row in first..total.min(first + area.height as usize) {
        let spans: Vec<Span> = rows[row * per_row..((row + 1) * per_row).min(rows.len())]
            .iter()
            .map(|&r| {
                let s = app.shown_of(r);
                let mut st = style::shown_style(&s);
                if r == app.selected {
                    st = st.add_modifier(Modifier::REVERSED | Modifier::BOLD);
                }
                Span::styled(format!("{}{r:>w$} ", style::glyph(&s), w = cell - 2), st)
            })
            .collect();
        lines.push(Line::from(spans));
    }
    f.render_widget(Paragraph::new(lines), area);
}
