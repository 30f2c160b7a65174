//! The timeline bar: the whole trace by event position, with the cursor, stretches where the
//! diagnosis names a root cause, and markers for faults, watchdog timeouts, generations and
//! the first stall.

use crate::app::App;
use crate::state::MarkerKind;
use crate::ui::style;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use ringside_sim::units::fmt_time;

pub fn marker_color(k: MarkerKind) -> Color {
    match k {
        MarkerKind::Fault => Color::Red,
        MarkerKind::Watchdog => Color::Yellow,
        MarkerKind::Generation => Color::Blue,
        MarkerKind::Stall => Color::Magenta,
    }
}

/// The column of position `pos` on a bar `width` wide over `n` events.
pub fn column(pos: usize, n: usize, width: usize) -> usize {
    if n == 0 || width == 0 {
        return 0;
    }
    (pos * (width - 1)) / n
}

pub fn render(app: &App, f: &mut Frame, area: Rect) {
    if area.height == 0 || area.width < 4 {
        return;
    }
    let w = area.width as usize;
    let n = app.loaded.len();
    let m = &app.loaded.markers;
    // per column: stalled?, the most important marker
    let mut stalled = vec![false; w];
    for &(a, b) in &m.stall_ranges {
        for s in stalled
            .iter_mut()
            .take(column(b, n, w) + 1)
            .skip(column(a, n, w))
        {
            *s = true;
        }
    }
    let mut mark: Vec<Option<MarkerKind>> = vec![None; w];
    for mk in &m.markers {
        let c = column(mk.pos, n, w);
        // a marker of another kind in the same column moves to the nearest free one
        let free = [c, c + 1, c.wrapping_sub(1), c + 2, c.wrapping_sub(2)]
            .into_iter()
            .filter(|&x| x < w)
            .find(|&x| mark[x].is_none_or(|k| k == mk.kind));
        match free {
            Some(x) => mark[x] = Some(mk.kind),
            None => {
                if mark[c].is_some_and(|k| mk.kind > k) {
                    mark[c] = Some(mk.kind);
                }
            }
        }
    }
    let cur = column(app.pos, n, w);
    let spans: Vec<Span> = (0..w)
        .map(|c| {
            let (ch, mut st) = match mark[c] {
                Some(k) => (
                    k.glyph(),
                    Style::default()
                        .fg(marker_color(k))
                        .add_modifier(Modifier::BOLD),
                ),
                None if c < cur => ('━', Style::default().fg(Color::Cyan)),
                None => ('─', style::dim()),
            };
            if stalled[c] {
                st = st.bg(Color::Rgb(80, 0, 0));
            }
            if c == cur {
                st = Style::default()
                    .fg(Color::Black)
                    .bg(Color::White)
                    .add_modifier(Modifier::BOLD);
                let ch = if mark[c].is_some() { ch } else { '┃' };
                return Span::styled(ch.to_string(), st);
            }
            Span::styled(ch.to_string(), st)
        })
        .collect();
    let mut lines = vec![Line::from(spans)];
    if area.height > 1 {
        let left = "0".to_string();
        let right = fmt_time(app.loaded.end_ns());
        let mut legend: Vec<Span> = Vec::new();
        for k in [
            MarkerKind::Fault,
            MarkerKind::Watchdog,
            MarkerKind::Generation,
            MarkerKind::Stall,
        ] {
            legend.push(Span::styled(
                format!("{} ", k.glyph()),
                Style::default()
                    .fg(marker_color(k))
                    .add_modifier(Modifier::BOLD),
            ));
            legend.push(Span::styled(format!("{}  ", k.name()), style::dim()));
        }
        let legend_w: usize = legend.iter().map(|s| s.width()).sum();
        let pad = w.saturating_sub(left.len() + right.len() + legend_w);
        let mut spans = vec![Span::styled(left, style::dim())];
        if pad >= 2 {
            spans.push(Span::raw(" ".repeat(pad / 2)));
            spans.extend(legend);
            spans.push(Span::raw(" ".repeat(pad - pad / 2)));
        } else {
            spans.push(Span::raw(" ".repeat(w.saturating_sub(1 + right.len()))));
        }
        spans.push(Span::styled(right, style::dim()));
        lines.push(Line::from(spans));
    }
    f.render_widget(Paragraph::new(lines), area);
}
