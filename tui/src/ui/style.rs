//! Colours and short names shared by the panels.

use ratatui::style::{Color, Modifier, Style};
use ringside_sim::diagnose::RankState;

/// The colour a rank state is drawn in; blocked is red.
pub fn state_color(s: RankState) -> Color {
    match s {
        RankState::Idle => Color::DarkGray,
        RankState::Running => Color::Green,
        RankState::Computing => Color::Cyan,
        RankState::Waiting => Color::Yellow,
        RankState::Blocked => Color::Red,
        RankState::Paused => Color::Blue,
        RankState::Dead | RankState::Refused => Color::Magenta,
        RankState::Done => Color::Gray,
    }
}

pub fn state_style(s: RankState) -> Style {
    let st = Style::default().fg(state_color(s));
    if s == RankState::Blocked {
        st.add_modifier(Modifier::BOLD)
    } else {
        st
    }
}

/// The states in the legend, in the order a run goes through them.
pub const LEGEND: [RankState; 7] = [
    RankState::Running,
    RankState::Computing,
    RankState::Waiting,
    RankState::Blocked,
    RankState::Paused,
    RankState::Dead,
    RankState::Done,
];

pub fn title() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

pub fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

/// Bytes for humans: `64MiB`, `1.5KiB`, `12B`.
pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b}B")
    } else if v.fract() == 0.0 {
        format!("{v:.0}{}", UNITS[u])
    } else {
        format!("{v:.1}{}", UNITS[u])
    }
}

/// A list of ranks, cut with `…` past `max` entries.
pub fn fmt_ranks(r: &[u32], max: usize) -> String {
    let mut s: Vec<String> = r.iter().take(max).map(|x| x.to_string()).collect();
    if r.len() > max {
        s.push(format!("…+{}", r.len() - max));
    }
    s.join(",")
}
