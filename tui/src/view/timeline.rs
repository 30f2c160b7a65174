//! The timeline: the whole run on a virtual-time axis, with the cursor, stretches where the
//! diagnosis names a root cause (`═`), and markers for faults (application bugs included),
//! watchdog timeouts, generations and the first stall, each placed at its virtual time.

use crate::app::App;
use crate::state::MarkerKind;
use crate::view::style;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use ringside_sim::units::{fmt_time, Nanos};

pub fn marker_color(k: MarkerKind) -> Color {
    match k {
        MarkerKind::Fault => Color::Red,
        MarkerKind::Watchdog => Color::Yellow,
        MarkerKind::Generation => Color::Blue,
        MarkerKind::Stall => Color::Magenta,
    }
}

/// The column of virtual time `t` on a bar `width` wide over a run that ends at `end`.
pub fn column(t: Nanos, end: Nanos, width: usize) -> usize {
    if end == 0 || width == 0 {
        return 0;
    }
    ((u128::from(t.min(end)) * (width as u128 - 1)) / u128::from(end)) as usize
}

/// The virtual time at column `x` of the bar at `area` (the start of that column's stretch).
pub fn time_at(app: &App, area: Rect, x: u16) -> Nanos {
    let w = area.width.max(2) as u128;
    let c = u128::from(x.saturating_sub(area.x)).min(w - 1);
    let end = u128::from(app.loaded.end_ns());
    // the first time whose column is c
    (c * end).div_ceil(w - 1) as Nanos
}

pub fn render(app: &App, f: &mut Frame, area: Rect) {
    if area.height == 0 || area.width < 4 {
        return;
    }
    let w = area.width as usize;
    let end = app.loaded.end_ns();
    let m = &app.loaded.markers;
    let at = |pos: usize| column(app.loaded.time_at(pos), end, w);
    let mut stalled = vec![false; w];
    for &(a, b) in &m.stall_ranges {
        // nothing changes between events: the stall lasts until the next one
        let until = app.loaded.events().get(b).map_or(end, |e| e.0);
        for s in stalled
            .iter_mut()
            .take(column(until, end, w) + 1)
            .skip(at(a))
        {
            *s = true;
        }
    }
    let mut mark: Vec<Option<MarkerKind>> = vec![None; w];
    for mk in &m.markers {
        let c = at(mk.pos);
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
    let cur = column(app.fold.t, end, w);
    let spans: Vec<Span> = (0..w)
        .map(|c| {
            let (ch, st) = match mark[c] {
                Some(k) => (
                    k.glyph(),
                    Style::default()
                        .fg(marker_color(k))
                        .add_modifier(Modifier::BOLD),
                ),
                None if stalled[c] => ('═', Style::default().fg(Color::Red)),
                None if c < cur => ('━', Style::default().fg(Color::Cyan)),
                None => ('─', style::dim()),
            };
            if c == cur {
                let ch = if mark[c].is_some() { ch } else { '┃' };
                return Span::styled(ch.to_string(), st.add_modifier(Modifier::REVERSED));
            }
            Span::styled(ch.to_string(), st)
        })
        .collect();
    let mut lines = vec![Line::from(spans)];
    if area.height > 1 {
        let left = "0".to_string();
        let right = fmt_time(end);
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
            legend.push(Span::raw(format!("{}  ", k.name())));
        }
        legend.push(Span::styled("═", Style::default().fg(Color::Red)));
        legend.push(Span::raw(" stalled  "));
        let legend_w: usize = legend.iter().map(|s| s.width()).sum();
        let pad = w.saturating_sub(left.len() + right.chars().count() + legend_w);
        let mut spans = vec![Span::raw(left)];
        if pad >= 2 {
            spans.push(Span::raw(" ".repeat(pad / 2)));
            spans.extend(legend);
            spans.push(Span::raw(" ".repeat(pad - pad / 2)));
        } else {
            spans.push(Span::raw(
                " ".repeat(w.saturating_sub(1 + right.chars().count())),
            ));
        }
        spans.push(Span::raw(right));
        lines.push(Line::from(spans));
    }
    f.render_widget(Paragraph::new(lines), area);
}
