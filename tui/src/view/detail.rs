//! The detail pane: the current event with every field the trace holds, as it was written,
//! and what the viewer knows about it (the fault it marks).

use crate::app::App;
use crate::state::describe::describe;
use crate::view::style;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;
use ringside_sim::units::fmt_time;

/// The pane's lines for the event at index `i`.
pub fn lines(app: &App, i: usize) -> Vec<Line<'static>> {
    let (t, ev) = &app.loaded.events()[i];
    let mut out = vec![Line::from(vec![
        Span::styled(format!("{} ", ev.kind()), style::title()),
        Span::raw(describe(ev)),
    ])];
    if let Some(note) = app.loaded.markers.notes.get(&(i + 1)) {
        out.push(Line::styled(format!("F {note}"), style::bad()));
    } else if app.loaded.markers.is_fault(i) {
        out.push(Line::styled("F a fault begins here", style::bad()));
    }
    out.push(Line::raw(""));
    out.push(field("t", format!("{t} ns ({})", fmt_time(*t))));
    match serde_json::to_value(ev) {
        Ok(serde_json::Value::Object(map)) => {
            for (k, v) in map {
                let text = match v {
                    serde_json::Value::String(s) => s,
                    serde_json::Value::Array(a) if a.iter().any(|x| x.is_object()) => {
                        serde_json::to_string_pretty(&a).unwrap_or_default()
                    }
                    other => other.to_string(),
                };
                let mut rows = text.lines();
                out.push(field(&k, rows.next().unwrap_or("").to_string()));
                out.extend(rows.map(|r| Line::raw(format!("    {}", style::printable(r)))));
            }
        }
        Ok(other) => out.push(Line::raw(other.to_string())),
        Err(e) => out.push(Line::raw(format!("cannot show the fields: {e}"))),
    }
    out
}

fn field(k: &str, v: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{}: ", style::printable(k)), style::title()),
        Span::raw(style::printable(&v).into_owned()),
    ])
}

pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let Some(i) = app.pos.checked_sub(1) else {
        return;
    };
    let w = (area.width * 9 / 10).max(20).min(area.width);
    let h = (area.height * 8 / 10).max(6).min(area.height);
    let popup = crate::view::centred(area, w, h);
    f.render_widget(Clear, popup);
    let title = format!(
        " event {} of {} · ↑↓ scroll · ← → step · Esc closes ",
        i + 1,
        app.loaded.len()
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(title, style::title()));
    let inner = block.inner(popup);
    let body = lines(app, i);
    let total: u16 = body
        .iter()
        .map(|l| l.width().max(1).div_ceil(inner.width.max(1) as usize) as u16)
        .sum();
    let top = app
        .detail
        .unwrap_or(0)
        .min(total.saturating_sub(inner.height));
    f.render_widget(
        Paragraph::new(body)
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((top, 0)),
        popup,
    );
}
