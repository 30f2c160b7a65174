//! Colours and short names shared by the panels.
//!
//! The palette uses the terminal's own named colours (so its theme decides the exact shade)
//! and never grey, white or black for text that matters, nor a fixed RGB background: what is
//! readable on a dark theme stays readable on a light or Solarized one. Less important text is
//! dimmed, not greyed. Nothing is told by colour alone: states are words, culprits have a
//! glyph, the cursor is reversed; `NO_COLOR` drops the colours and keeps the rest.

use crate::state::{Culprit, Shown};
use ratatui::style::{Color, Modifier, Style};
use ringside_sim::diagnose::RankState;

/// The colour a rank state is drawn in; blocked is red.
pub fn state_color(s: RankState) -> Color {
    match s {
        RankState::Idle | RankState::Done => Color::Reset,
        RankState::Running => Color::Green,
        RankState::Computing => Color::Cyan,
        RankState::Waiting => Color::Yellow,
        RankState::Blocked => Color::Red,
        RankState::Paused => Color::Blue,
        RankState::Dead | RankState::Refused => Color::Magenta,
    }
}

pub fn state_style(s: RankState) -> Style {
    let st = Style::default().fg(state_color(s));
    match s {
        RankState::Blocked => st.add_modifier(Modifier::BOLD),
        RankState::Idle => st.add_modifier(Modifier::DIM),
        _ => st,
    }
}

/// Culprits are magenta and bold, whatever their state.
pub fn culprit_style() -> Style {
    Style::default()
        .fg(Color::Magenta)
        .add_modifier(Modifier::BOLD)
}

/// How a rank's state word is drawn.
pub fn shown_style(s: &Shown) -> Style {
    if s.culprit.is_some() {
        culprit_style()
    } else if s.rendezvous.is_some() {
        rendezvous_style()
    } else {
        state_style(s.state)
    }
}

/// Ranks rebuilding an elastic group.
pub fn rendezvous_style() -> Style {
    Style::default()
        .fg(Color::Blue)
        .add_modifier(Modifier::BOLD)
}

/// The mark of a blocked rank whose wait a network partition cuts, and of the cut link.
pub const CUT: char = '↛';

/// The glyph before a rank: its culprit's, `?` for a rank that left no Flight Recorder dump,
/// `↛` when blocked across a network partition, `●` when blocked otherwise, else a space.
pub fn glyph(s: &Shown) -> char {
    match s.culprit {
        Some(c) => c.glyph(),
        None if s.no_dump => Culprit::Missing.glyph(),
        None if s.state == RankState::Blocked && s.cut => CUT,
        None if s.state == RankState::Blocked => '●',
        None => ' ',
    }
}

/// A light background: each named colour drawn in a darker shade of itself from the
/// 256-colour palette, which every light theme leaves readable (its yellow and cyan are not).
pub fn lighten(b: &mut ratatui::buffer::Buffer) {
    let dark = |c: Color| match c {
        Color::Red | Color::LightRed => Color::Indexed(124),
        Color::Green | Color::LightGreen => Color::Indexed(28),
        Color::Yellow | Color::LightYellow => Color::Indexed(130),
        Color::Blue | Color::LightBlue => Color::Indexed(19),
        Color::Magenta | Color::LightMagenta => Color::Indexed(90),
        Color::Cyan | Color::LightCyan => Color::Indexed(30),
        other => other,
    };
    for cell in b.content.iter_mut() {
        cell.set_fg(dark(cell.fg));
        cell.set_bg(dark(cell.bg));
    }
}

/// The states in the legend, in the order a run goes through them.
pub const LEGEND: [RankState; 6] = [
    RankState::Running,
    RankState::Computing,
    RankState::Waiting,
    RankState::Blocked,
    RankState::Paused,
    RankState::Done,
];

pub fn title() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

pub fn dim() -> Style {
    Style::default().add_modifier(Modifier::DIM)
}

/// Warnings and prompts.
pub fn notice() -> Style {
    Style::default()
        .fg(Color::Yellow)
        .add_modifier(Modifier::BOLD)
}

pub fn good() -> Style {
    Style::default().fg(Color::Green)
}

pub fn bad() -> Style {
    Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
}

/// Cuts `s` to `w` characters, marking the cut with `…`; pads it to `w`.
pub fn pad(s: &str, w: usize) -> String {
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

/// Text from a trace (names, details, reasons: a trace may come from anywhere) as it can be
/// shown: a character a terminal would act on is written as its escape (`\u{1b}`, `\u{202e}`).
pub use ringside_sim::text::safe as printable;

/// The last guard between a trace's text and the terminal: a drawn cell that still holds a
/// character a terminal acts on (a bidirectional override rides along a zero-width cell, which
/// the widgets keep) loses it. Text is escaped where it is laid out; this catches what was not.
pub fn neutralize(buf: &mut ratatui::buffer::Buffer) {
    use ringside_sim::text::acts_on_terminal;
    for cell in &mut buf.content {
        if cell.symbol().chars().any(acts_on_terminal) {
            let kept: String = cell
                .symbol()
                .chars()
                .filter(|&c| !acts_on_terminal(c))
                .collect();
            cell.set_symbol(if kept.is_empty() { " " } else { &kept });
        }
    }
}
