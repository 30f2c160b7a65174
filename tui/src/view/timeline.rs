//! The timeline: a stretch of virtual time (the whole run, or a part of it when zoomed in) on a
//! bar, with the cursor, stretches where the diagnosis names a root cause (`═`), markers for
//! faults (application bugs included), watchdog timeouts, generations and the first stall,
//! each at its virtual time; below it, ticks at round times. `+` `-` and the wheel over the bar
//! zoom around the cursor, so that events a few microseconds apart in a run of seconds get
//! columns of their own and a click reaches each.

use crate::app::App;
use crate::state::MarkerKind;
use crate::view::style;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use ringside_sim::units::Nanos;

pub fn marker_color(k: MarkerKind) -> Color {
    match k {
        MarkerKind::Fault => Color::Red,
        MarkerKind::Watchdog => Color::Yellow,
        MarkerKind::Generation => Color::Blue,
        MarkerKind::Stall => Color::Magenta,
    }
}

pub fn marker_style(k: MarkerKind) -> Style {
    Style::default()
        .fg(marker_color(k))
        .add_modifier(Modifier::BOLD)
}

/// The column of virtual time `t` on a bar `width` wide showing `span` from `lo` (times
/// outside it are put at its ends).
pub fn column(t: Nanos, lo: Nanos, span: Nanos, width: usize) -> usize {
    if span == 0 || width == 0 {
        return 0;
    }
    let d = u128::from(t.saturating_sub(lo).min(span));
    ((d * (width as u128 - 1)) / u128::from(span)) as usize
}

/// The first virtual time of column `c` on a bar `width` wide showing `span` from `lo`.
fn time_of_column(c: usize, lo: Nanos, span: Nanos, width: usize) -> Nanos {
    let w = width.max(2) as u128;
    let c = (c as u128).min(w - 1);
    lo + (c * u128::from(span)).div_ceil(w - 1) as Nanos
}

/// The virtual time at column `x` of the bar at `area`.
pub fn time_at(app: &App, area: Rect, x: u16) -> Nanos {
    let (lo, span) = app.window();
    time_of_column(
        usize::from(x.saturating_sub(area.x)),
        lo,
        span,
        area.width.into(),
    )
}

/// What each column of a bar `w` wide shows.
struct Bar {
    /// The marker drawn in the column, and the event it marks.
    marks: Vec<Option<(MarkerKind, usize)>>,
    stalled: Vec<bool>,
    cursor: usize,
}

fn bar(app: &App, w: usize) -> Bar {
    let (lo, span) = app.window();
    let hi = lo + span;
    let m = &app.loaded.markers;
    let col = |t: Nanos| column(t, lo, span, w);
    let mut stalled = vec![false; w];
    for &(a, b) in &m.stall_ranges {
        // nothing changes between events: the stall lasts until the next one
        let from = app.loaded.time_at(a);
        let until = app
            .loaded
            .events()
            .get(b)
            .map_or(app.loaded.end_ns(), |e| e.0);
        if until < lo || from > hi {
            continue;
        }
        for s in stalled.iter_mut().take(col(until) + 1).skip(col(from)) {
            *s = true;
        }
    }
    let mut marks: Vec<Option<(MarkerKind, usize)>> = vec![None; w];
    for mk in &m.markers {
        let t = app.loaded.time_at(mk.pos);
        if t < lo || t > hi {
            continue;
        }
        let c = col(t);
        // a marker of another kind in the same column moves to the nearest free one
        let free = [c, c + 1, c.wrapping_sub(1), c + 2, c.wrapping_sub(2)]
            .into_iter()
            .filter(|&x| x < w)
            .find(|&x| marks[x].is_none_or(|(k, _)| k == mk.kind));
        match free {
            Some(x) if marks[x].is_none() => marks[x] = Some((mk.kind, mk.pos)),
            Some(_) => {}
            None => {
                if marks[c].is_some_and(|(k, _)| mk.kind > k) {
                    marks[c] = Some((mk.kind, mk.pos));
                }
            }
        }
    }
    Bar {
        marks,
        stalled,
        cursor: col(app.fold.t),
    }
}

/// The event marked at column `x` of the bar at `area`, if a marker is drawn there.
pub fn marker_at(app: &App, area: Rect, x: u16) -> Option<usize> {
    let c = usize::from(x.checked_sub(area.x)?);
    bar(app, area.width.into())
        .marks
        .get(c)
        .copied()
        .flatten()
        .map(|(_, pos)| pos)
}

/// The round times between ticks: 1, 2 or 5 times a power of ten nanoseconds, at least
/// `min`.
fn tick_step(min: Nanos) -> Nanos {
    let mut p: Nanos = 1;
    loop {
        for m in [1, 2, 5] {
            let s = p.saturating_mul(m);
            if s >= min || s == Nanos::MAX {
                return s;
            }
        }
        p = p.saturating_mul(10);
    }
}

/// A tick's time in the largest unit its step is a whole number of: `0`, `250ms`, `1.5s`
/// reads `1500ms`, `20us`.
pub fn fmt_tick(t: Nanos, step: Nanos) -> String {
    if t == 0 {
        return "0".into();
    }
    let (unit, name) = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
        .into_iter()
        .find(|&(u, _)| step.is_multiple_of(u))
        .unwrap_or((1, "ns"));
    format!("{}{name}", t / unit)
}

/// The tick line: round times under their columns, as many as fit with room between them.
fn ticks(app: &App, w: usize) -> Line<'static> {
    let (lo, span) = app.window();
    // a label is at most about 8 characters; keep 3 between labels
    let per = (w / 11).max(1) as Nanos;
    let step = tick_step(span.div_ceil(per).max(1));
    let mut row = vec![' '; w];
    let mut t = lo.div_ceil(step) * step;
    let mut free_from = 0;
    while t <= lo + span {
        let c = column(t, lo, span, w);
        let label = format!("╵{}", fmt_tick(t, step));
        let n = label.chars().count();
        if c >= free_from && c + n <= w {
            for (i, ch) in label.chars().enumerate() {
                row[c + i] = ch;
            }
            free_from = c + n + 2;
        }
        t = match t.checked_add(step) {
            Some(n) => n,
            None => break,
        };
    }
    Line::styled(row.into_iter().collect::<String>(), style::dim())
}

pub fn render(app: &App, f: &mut Frame, area: Rect) {
    if area.height == 0 || area.width < 4 {
        return;
    }
    let w = area.width as usize;
    let b = bar(app, w);
    let spans: Vec<Span> = (0..w)
        .map(|c| {
            let (ch, st) = match b.marks[c] {
                Some((k, _)) => (k.glyph(), marker_style(k)),
                None if b.stalled[c] => ('═', Style::default().fg(Color::Red)),
                None if c < b.cursor => ('━', Style::default().fg(Color::Cyan)),
                None => ('─', style::dim()),
            };
            if c == b.cursor {
                let ch = if b.marks[c].is_some() { ch } else { '┃' };
                return Span::styled(ch.to_string(), st.add_modifier(Modifier::REVERSED));
            }
            Span::styled(ch.to_string(), st)
        })
        .collect();
    let mut lines = vec![Line::from(spans)];
    if area.height > 1 {
        lines.push(ticks(app, w));
    }
    f.render_widget(Paragraph::new(lines), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_times_in_the_largest_whole_unit() {
        assert_eq!(tick_step(1), 1);
        assert_eq!(tick_step(3), 5);
        assert_eq!(tick_step(180_000_000), 200_000_000);
        assert_eq!(tick_step(6_000_000), 10_000_000);
        assert_eq!(fmt_tick(0, 5), "0");
        assert_eq!(fmt_tick(1_500_000_000, 500_000_000), "1500ms");
        assert_eq!(fmt_tick(2_000_000_000, 1_000_000_000), "2s");
        assert_eq!(fmt_tick(20_000, 10_000), "20us");
        assert_eq!(fmt_tick(7, 1), "7ns");
    }

    #[test]
    fn columns_and_times_agree() {
        let (lo, span, w) = (1_000, 10_000, 80);
        for c in 0..w {
            let t = time_of_column(c, lo, span, w);
            assert_eq!(column(t, lo, span, w), c, "column {c} starts at {t}");
        }
        assert_eq!(column(0, lo, span, w), 0, "before the window: its start");
        assert_eq!(column(lo + 2 * span, lo, span, w), w - 1);
    }
}
