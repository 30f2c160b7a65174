//! Every rank with its state, its collective and whom it waits for: a table that scrolls with
//! the selection, or a compact grid of coloured cells for large worlds.

use crate::app::App;
use crate::ui::style::{self, fmt_ranks, state_style};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;
use ringside_sim::diagnose::RankState;
use ringside_sim::units::fmt_time;

/// First row to show so that `selected` stays in a window of `height` rows out of `n`.
pub fn scroll_offset(selected: usize, height: usize, n: usize) -> usize {
    if height == 0 || n <= height {
        return 0;
    }
    selected.saturating_sub(height / 2).min(n - height)
}

fn pad(s: &str, w: usize) -> String {
    let len = s.chars().count();
    if len > w {
        let mut t: String = s.chars().take(w.saturating_sub(1)).collect();
        if w > 0 {
            t.push('…');
        }
        t
    } else {
        format!("{s:<w$}")
    }
}

pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let n = app.ranks() as usize;
    let title = format!(" ranks ({n}){} ", if app.compact { ", grid" } else { "" });
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(title, style::title()));
    let inner = block.inner(area);
    f.render_widget(block, area);
    if app.compact {
        render_grid(app, f, inner);
    } else {
        render_table(app, f, inner);
    }
}

fn render_table(app: &App, f: &mut Frame, area: Rect) {
    let w = area.width as usize;
    let n = app.ranks() as usize;
    let rank_w = n.saturating_sub(1).to_string().len().max(1);
    // columns: marker+rank, state, collective, step, waits for, since
    let coll_w = w.saturating_sub(rank_w + 2 + 10 + 6 + 10 + 10).clamp(8, 40);
    let wide = coll_w >= 20;
    let mut lines = vec![Line::styled(
        format!(
            "{:>rw$} {} {} {} {} {}",
            "r",
            pad("state", 9),
            pad("collective", coll_w),
            pad("step", 5),
            pad("waits for", 9),
            "since",
            rw = rank_w + 1
        ),
        style::dim().add_modifier(Modifier::UNDERLINED),
    )];
    let rows = (area.height as usize).saturating_sub(1);
    let first = scroll_offset(app.selected as usize, rows, n);
    for v in app.fold.ranks.iter().skip(first).take(rows) {
        let state = app.state_of(v.rank);
        let sel = v.rank == app.selected;
        let base = if sel {
            Style::default().add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        let (coll, step, waits, since) = match &v.call {
            Some(c) => {
                let coll = match (c.peer, wide) {
                    // a send or recv names its peer: `>` to it, `<` from it
                    (Some(p), _) => {
                        let dir = if c.op.name() == "send" { ">" } else { "<" };
                        format!("{} #{} {dir}{p}", c.op.name(), c.seq)
                    }
                    (None, true) => format!("{} #{} {}", c.op.name(), c.seq, c.algorithm.name()),
                    (None, false) => format!("{} #{}", c.op.name(), c.seq),
                };
                let step = if c.steps > 0 {
                    format!("{}/{}", c.step + 1, c.steps)
                } else {
                    "-".into()
                };
                if state == RankState::Dead {
                    // the call it died in, and since when it is dead
                    let since = v.dead_since.unwrap_or(v.since_ns);
                    (coll, step, "-".into(), fmt_time(since))
                } else {
                    let waits = if c.waiting_for.is_empty() {
                        "-".into()
                    } else {
                        fmt_ranks(&c.waiting_for, 3)
                    };
                    (coll, step, waits, fmt_time(c.since_ns))
                }
            }
            None => {
                let since = match state {
                    RankState::Dead => v.dead_since.unwrap_or(v.since_ns),
                    RankState::Paused => v.paused_since.unwrap_or(v.since_ns),
                    _ => v.since_ns,
                };
                let what = match state {
                    RankState::Computing => format!("compute, iter {}", v.iteration),
                    RankState::Done => "workload done".into(),
                    _ => "-".into(),
                };
                (what, "-".into(), "-".into(), fmt_time(since))
            }
        };
        let mark = if sel { ">" } else { " " };
        lines.push(Line::from(vec![
            Span::styled(format!("{mark}{:>rank_w$} ", v.rank), base),
            Span::styled(pad(state.name(), 9), state_style(state).patch(base)),
            Span::styled(format!(" {} ", pad(&coll, coll_w)), base),
            Span::styled(format!("{} ", pad(&step, 5)), base),
            Span::styled(format!("{} ", pad(&waits, 9)), base),
            Span::styled(since, base),
        ]));
    }
    f.render_widget(Paragraph::new(lines), area);
}

fn render_grid(app: &App, f: &mut Frame, area: Rect) {
    let n = app.ranks() as usize;
    let cell = n.saturating_sub(1).to_string().len().max(1) + 1;
    let per_row = (area.width as usize / cell).max(1);
    let rows = n.div_ceil(per_row);
    let first_row = scroll_offset(app.selected as usize / per_row, area.height as usize, rows);
    let mut lines = Vec::new();
    for row in first_row..rows.min(first_row + area.height as usize) {
        let spans: Vec<Span> = (row * per_row..((row + 1) * per_row).min(n))
            .map(|r| {
                let state = app.state_of(r as u32);
                let mut st = Style::default()
                    .fg(ratatui::style::Color::Black)
                    .bg(style::state_color(state));
                if r as u32 == app.selected {
                    st = st.add_modifier(Modifier::REVERSED | Modifier::BOLD);
                }
                Span::styled(format!("{r:>w$} ", w = cell - 1), st)
            })
            .collect();
        lines.push(Line::from(spans));
    }
    f.render_widget(Paragraph::new(lines), area);
}
