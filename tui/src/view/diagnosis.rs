//! The diagnosis at the cursor, the chain to the root cause first: each cause in words, the
//! ranks that wait on it directly (`101 → 100`), then how many wait behind them; the exact
//! blocked count; then the wait-for graph as a picture (ranks on a circle, arrows from waiter
//! to awaited) or as a list ordered from the causes outwards. The text wraps and scrolls.

use crate::app::{App, Focus, GraphMode};
use crate::state::chain::{waiters_in_order, CauseChain};
use crate::state::ranks::crosses_partition;
use crate::view::graph;
use crate::view::style;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;
use ringside_sim::diagnose::{fmt_ranks, EdgeKind};
use ringside_sim::scenario::OpKind;
use ringside_sim::units::fmt_time;
use std::collections::BTreeMap;

/// `rank 3` or `4 ranks: 0-3`.
fn counted(r: &[u32]) -> String {
    match r {
        [one] => format!("rank {one}"),
        _ => format!("{} ranks: {}", r.len(), fmt_ranks(r)),
    }
}

/// The lines of one cause's chain.
fn chain_lines(app: &App, c: &CauseChain) -> Vec<Line<'static>> {
    // ranks rebuilding the group left their wait behind
    let waiting = |r: &[u32]| -> Vec<u32> {
        r.iter()
            .copied()
            .filter(|&x| app.shown_of(x).rendezvous.is_none())
            .collect()
    };
    let c = &CauseChain {
        direct: waiting(&c.direct),
        upstream: waiting(&c.upstream),
        ..c.clone()
    };
    let mut out = Vec::new();
    let cause = &app.diagnosis.causes[c.cause];
    out.push(Line::from(vec![
        Span::styled(format!("{} ", cause.cause), style::bad()),
        Span::raw(style::printable(&cause.text).into_owned()),
    ]));
    if !c.cycle.is_empty() {
        let mut s: Vec<String> = c.cycle.iter().map(|r| r.to_string()).collect();
        s.push(c.cycle[0].to_string());
        out.push(Line::raw(format!("  cycle: {}", s.join(" → "))));
    }
    if !c.direct.is_empty() {
        out.push(links_line(app, c));
    }
    if !c.upstream.is_empty() {
        let n = c.upstream.len();
        let text = if c.single_file && n >= 2 {
            let first = c.direct.first().or(c.cycle.first()).copied().unwrap_or(0);
            let u = &c.upstream;
            let head = format!("{} → {first}", u[0]);
            let tail = if n > 3 {
                format!(
                    "{} → {}, … ({} more), {} → {}",
                    u[1],
                    u[0],
                    n - 3,
                    u[n - 1],
                    u[n - 2]
                )
            } else {
                (1..n)
                    .map(|i| format!("{} → {}", u[i], u[i - 1]))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            format!("  then {n} ranks in single file: {head}, {tail}")
        } else {
            let verb = if n == 1 { "waits" } else { "wait" };
            format!("  then {} {verb} on them", counted(&sorted(&c.upstream)))
        };
        out.push(Line::raw(text));
    }
    out
}

/// At most this many links of a cause on its line; the others are counted.
const LINKS: usize = 4;

/// The waits a cause explains by itself, as the rank table reads them: each rank waited for
/// with the ranks that wait for it (`2 ≠ mismatch → 1, 3 → 2 ≠ mismatch`; `0-99,101-255 →
/// 100 ✗ dead`); a link a partition cuts is drawn `↛`.
fn links_line(app: &App, c: &CauseChain) -> Line<'static> {
    let cause = &app.diagnosis.causes[c.cause];
    let mut by_awaited: BTreeMap<u32, (Vec<u32>, bool)> = BTreeMap::new();
    for w in &app.diagnosis.waits {
        if w.kind == EdgeKind::RootCause
            && w.causes.contains(&cause.cause)
            && c.direct.contains(&w.from)
        {
            let e = by_awaited.entry(w.to).or_default();
            e.0.push(w.from);
            e.1 |= crosses_partition(w);
        }
    }
    // a rank the cause names, with its culprit glyph
    let named = |r: u32| cause.ranks.contains(&r) && app.shown_of(r).culprit.is_some();
    let name = |r: u32| match app.shown_of(r).culprit {
        Some(k) if named(r) => format!("{r} {} {}", k.glyph(), k.name()),
        _ => r.to_string(),
    };
    let st = |culprit: bool| {
        if culprit {
            style::culprit_style()
        } else {
            style::bad()
        }
    };
    let mut spans = vec![Span::raw("  ")];
    let n = by_awaited.len();
    for (i, (to, (mut from, cut))) in by_awaited.into_iter().take(LINKS).enumerate() {
        if i > 0 {
            spans.push(Span::raw(", "));
        }
        from.sort_unstable();
        let from_named = from.iter().any(|&r| named(r));
        let from_text = if from_named && from.len() <= LINKS {
            from.iter().map(|&r| name(r)).collect::<Vec<_>>().join(",")
        } else {
            fmt_ranks(&from)
        };
        spans.push(Span::styled(from_text, st(from_named)));
        if cut {
            spans.push(Span::styled(format!(" {} ", style::CUT), style::bad()));
        } else {
            spans.push(Span::raw(" → "));
        }
        spans.push(Span::styled(name(to), st(named(to))));
    }
    if n > LINKS {
        spans.push(Span::styled(
            format!(", … {} more", n - LINKS),
            style::dim(),
        ));
    }
    Line::from(spans)
}

fn sorted(r: &[u32]) -> Vec<u32> {
    let mut v = r.to_vec();
    v.sort_unstable();
    v
}

/// The text above the graph.
fn text_lines(app: &App) -> Vec<Line<'static>> {
    let d = &app.diagnosis;
    let mut lines: Vec<Line> = Vec::new();
    for c in &app.chains {
        lines.extend(chain_lines(app, c));
    }
    let blocked = app.blocked();
    if d.causes.is_empty() {
        if !blocked.is_empty() {
            lines.push(Line::styled("root cause: not determined", style::bad()));
        } else if d.waits.is_empty() {
            lines.push(Line::styled("no rank waits in a collective", style::dim()));
        } else {
            lines.push(Line::styled(
                "no root cause: the waits are in progress",
                style::dim(),
            ));
        }
    }
    if !blocked.is_empty() {
        lines.push(Line::from(vec![
            Span::styled("blocked: ", style::bad()),
            Span::raw(counted(&blocked)),
        ]));
    }
    let rebuilding: Vec<u32> = (0..app.ranks())
        .filter(|&r| app.shown_of(r).rendezvous.is_some())
        .collect();
    if let Some(&r) = rebuilding.first() {
        let target = app.shown_of(r).rendezvous.unwrap_or(0);
        let why = app
            .fold
            .membership
            .wait_of(r)
            .map_or(String::new(), |w| format!(": {}", w.reason));
        lines.push(Line::from(vec![
            Span::styled(
                "rendezvous: ",
                Style::default()
                    .fg(Color::Blue)
                    .add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!(
                "{} rebuilding the group for generation {target}{why}",
                counted(&rebuilding)
            )),
        ]));
    }
    lines
}

/// The graph's lines, then who waits for whom, one waiter per line, from the causes outwards.
fn list_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let order = waiters_in_order(&app.diagnosis, &app.chains);
    let paths = app.wait_paths();
    let mut lines = vec![Line::styled(
        format!(
            "wait-for graph: {} waiting ranks, {} {} (g: picture)",
            order.len(),
            paths.len(),
            if paths.len() == 1 { "line" } else { "lines" }
        ),
        style::title(),
    )];
    lines.extend(
        paths
            .iter()
            .map(|p| graph::path_line(app, p, width as usize)),
    );
    for (a, bs) in order {
        let s = app.shown_of(a);
        let call = app.fold.ranks[a as usize].call.as_ref();
        let what = call.map_or(String::new(), |c| match c.peer {
            // a send or recv: the message's direction, peer and group
            Some(p) => format!(
                "  {} #{} {} {p} in {} since {}",
                c.op.name(),
                c.seq,
                if c.op == OpKind::Send { "to" } else { "from" },
                app.loaded.group_label(c.group, 16),
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
        lines.push(Line::from(vec![
            Span::styled(format!("{a:>4}"), style::shown_style(&s)),
            Span::raw(" waits for "),
            Span::styled(fmt_ranks(&bs), style::title()),
            Span::styled(what, style::dim()),
        ]));
    }
    lines
}

/// Rows the text needs at `width` (the stacked layout sizes the panel by it).
pub fn wanted_height(app: &App, width: u16) -> u16 {
    let mut lines = text_lines(app);
    if !app.diagnosis.waits.is_empty() {
        // a few rows of the graph below the text
        lines.extend((0..4).map(|_| Line::raw("")));
    }
    wrapped_height(&lines, width)
}

fn wrapped_height(lines: &[Line], width: u16) -> u16 {
    let w = width.max(1) as usize;
    lines
        .iter()
        .map(|l| l.width().max(1).div_ceil(w) as u16)
        .sum()
}

pub fn render(app: &App, f: &mut Frame, area: Rect, wide: bool) {
    let frame = crate::view::panel(app, wide, Focus::Diagnosis, Line::raw(""));
    let inner = frame.inner(area);
    let mut lines = text_lines(app);
    let graph = !app.diagnosis.waits.is_empty();
    // a picture needs room: in a short panel, the list says more
    let list =
        graph && (!app.shows_picture() || (app.graph == GraphMode::Auto && inner.height < 10));
    if list {
        lines.extend(list_lines(app, inner.width));
    }
    // the text first (it ends with the blocked count), the picture below it with at least
    // four rows, or none
    let text_h = if graph && !list {
        let want = wrapped_height(&lines, inner.width);
        want.min(inner.height.saturating_sub(4).max(inner.height / 2 + 1))
    } else {
        inner.height
    };
    let [text_area, graph_area] =
        Layout::vertical([Constraint::Length(text_h), Constraint::Fill(1)]).areas(inner);
    // the lines, wrapped, scrolled as asked within what there is; the title says what is
    // above and below
    let total = wrapped_height(&lines, text_area.width);
    let top = app
        .diagnosis_scroll
        .min(total.saturating_sub(text_area.height));
    let below = total.saturating_sub(top + text_area.height);
    let mut title = vec![Span::styled(
        format!(" diagnosis at {} ", fmt_time(app.fold.t)),
        style::title(),
    )];
    if top > 0 || below > 0 {
        title.push(Span::styled(
            format!("↑{top} ↓{below} lines "),
            style::notice(),
        ));
    }
    f.render_widget(
        crate::view::panel(app, wide, Focus::Diagnosis, Line::from(title)),
        area,
    );
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((top, 0)),
        text_area,
    );
    if graph && !list && graph_area.height > 0 {
        graph::render(app, f, graph_area);
    }
}
