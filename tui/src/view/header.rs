//! The header: scenario, seed, ranks, outcome; virtual time, event i of N, the current event.

use crate::app::App;
use crate::view::style;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use ringside_sim::scenario::Outcome;
use ringside_sim::units::fmt_time;

fn outcome_style(o: Option<Outcome>) -> Style {
    let c = match o {
        Some(Outcome::Completed) | Some(Outcome::Rebuilt) => Color::Green,
        Some(Outcome::Stalled) | Some(Outcome::TimedOut) => Color::Red,
        None => Color::Yellow,
    };
    Style::default().fg(c).add_modifier(Modifier::BOLD)
}

pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let trace = &app.loaded.trace;
    let outcome = trace.footer.as_ref().map(|ft| ft.outcome);
    let outcome_text = match outcome {
        Some(o) => o.to_string(),
        // a trace cut short (an interrupted run) has no footer
        None => "unfinished".into(),
    };
    let line1 = Line::from(vec![
        Span::styled(
            " ringside ",
            style::title().add_modifier(Modifier::REVERSED),
        ),
        Span::raw(" "),
        Span::styled(trace.header.scenario.name.clone(), style::title()),
        Span::raw(format!("  seed {}", trace.header.seed)),
        Span::raw(format!("  {} ranks", app.ranks())),
        Span::raw("  outcome "),
        Span::styled(outcome_text, outcome_style(outcome)),
    ]);
    let current = app
        .pos
        .checked_sub(1)
        .and_then(|i| app.loaded.events().get(i))
        .map_or(String::new(), |(_, ev)| format!("  ({})", ev.kind()));
    let line2 = Line::from(vec![
        Span::raw(" t "),
        Span::styled(fmt_time(app.fold.t), style::title()),
        Span::raw(format!(" / {}", fmt_time(app.loaded.end_ns()))),
        Span::raw("   event "),
        Span::styled(app.pos.to_string(), style::title()),
        Span::raw(format!(" of {}", app.loaded.len())),
        Span::raw(current),
    ]);
    f.render_widget(Paragraph::new(vec![line1, line2]), area);
}
