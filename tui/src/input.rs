//! Keys and mouse to actions: the main loop reads the terminal, this module says what the
//! user asked for, and [`App::update`](crate::app::App::update) does it.

use crate::app::line::LineOp;
use crate::app::{App, Focus, Prompt};
use crate::state::MarkerKind;
use crate::view::{self, Hit};
use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::layout::Rect;
use ringside_sim::units::Nanos;

/// Events a page key moves by.
pub const PAGE: i64 = 100;
/// Lines or rows one turn of the mouse wheel moves by.
pub const WHEEL: i64 = 3;

/// What the user asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Quit,
    /// Give the terminal back and stop the process until it is continued (Ctrl-Z).
    Suspend,
    /// Mouse reporting on or off.
    ToggleMouse,
    /// Colours for a dark or a light background.
    ToggleTheme,
    /// Zoom the timeline in (+1) or out (-1) around the cursor.
    Zoom(i32),
    /// Move the cursor by this many events.
    Step(i64),
    Start,
    End,
    /// The moment that shows how the trace ends (where the viewer opens).
    Answer,
    FirstStall,
    /// To the next (+1) or previous (-1) marker of this kind.
    Marker(MarkerKind, i64),
    /// To the next / previous event the filter keeps (the selected rank's, without a filter).
    Match(i64),
    /// Move the rank selection by this many rows.
    Select(i64),
    /// ↑ ↓ in the focused panel: select a rank, scroll the diagnosis, step through the log.
    Move(i64),
    /// Focus the next (+1) or previous (-1) panel.
    FocusNext(i64),
    Focus(Focus),
    /// Mouse: a click on a rank, the log or the timeline; the wheel over a panel.
    SelectRank(u32),
    SeekTo(usize),
    SeekTime(Nanos),
    Scroll(Focus, i64),
    /// Start typing the filter or a `:` command.
    Edit(Prompt),
    /// Type a character.
    Char(char),
    Backspace,
    /// Any other edit of what is typed, as readline does it.
    Line(LineOp),
    /// Keep what was typed (apply the filter, run the command).
    Apply,
    /// Stop typing: a `:` command is dropped, and so is the filter being typed.
    Cancel,
    /// Drop the filter (Esc when nothing else is open).
    ClearFilter,
    /// Open or close the current event's detail pane; scroll it.
    Detail,
    DetailScroll(i64),
    /// Rank table by rank / by state; only stuck ranks.
    ToggleOrder,
    ToggleStuck,
    /// Wait-for graph as a picture or as a list.
    ToggleGraph,
    /// Rank table or compact grid.
    ToggleCompact,
    ToggleHelp,
    /// Scroll the help by this many lines.
    HelpScroll(i64),
    None,
}

/// Which keys mean what right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Normal,
    /// Typing a filter or a command: keys are text.
    Editing,
    /// The help is open: ↑ ↓ scroll it, Esc or `?` close it, `q` still quits.
    Help,
    /// The detail pane is open: ↑ ↓ scroll it, Esc or Enter close it.
    Detail,
}

/// The key bindings, as `?` shows them.
pub const KEYS: [(&str, &str); 27] = [
    ("← →  h l", "one event back / forward"),
    ("PgUp PgDn", "100 events back / forward"),
    ("Home End", "start / end of the trace"),
    ("a", "the final answer (where the viewer opens)"),
    ("↑ ↓  j k", "in the focused panel: rank / scroll / event"),
    ("Tab", "focus the next panel (ranks, diagnosis, events)"),
    ("Enter", "every field of the current event (Esc closes)"),
    ("s", "first stall (culprits first)"),
    ("f F", "next / previous fault (the offending call)"),
    ("w W", "next / previous watchdog timeout"),
    ("r R", "next / previous generation formed"),
    (
        "+ -",
        "zoom the timeline in / out around the cursor (wheel)",
    ),
    ("/", "filter the log as you type: 3 r3 send -step text"),
    ("n N", "next / previous match (the rank's event, no filter)"),
    (":", "go to: 100 (rank), 0-99,101-255, all, @14ms, #5000"),
    ("Esc", "cancel what is typed; drop the filter; close"),
    (
        "Ctrl-A Ctrl-E",
        "typing: to the start / end of the line (Home End)",
    ),
    ("Ctrl-U Ctrl-K", "typing: delete before / after the cursor"),
    ("Ctrl-W", "typing: delete the word before the cursor"),
    ("o", "order ranks by state (stuck first) / by rank"),
    ("b", "only stuck ranks (culprits, blocked, rendezvous)"),
    ("g c", "wait-for graph picture / list; ranks table / grid"),
    ("mouse", "click a rank, an event, the timeline; wheel"),
    ("m", "mouse reporting off / on (off: the terminal selects)"),
    ("t", "colours for a dark / light background"),
    ("Ctrl-Z", "suspend to the shell (fg comes back)"),
    ("? / q Ctrl-C", "this help / quit"),
];

/// What `key` asks for in `mode`.
pub fn action(mode: Mode, key: KeyEvent) -> Action {
    if key.kind == KeyEventKind::Release {
        return Action::None;
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        match key.code {
            KeyCode::Char('c') => return Action::Quit,
            KeyCode::Char('z') => return Action::Suspend,
            // a chord is no key of the viewer's (Ctrl-W is not `w`), but typing has its own
            _ if mode != Mode::Editing => return Action::None,
            _ => {}
        }
    }
    match mode {
        Mode::Editing => editing(key),
        Mode::Help => match key.code {
            KeyCode::Char('q') => Action::Quit,
            KeyCode::Up | KeyCode::Char('k') => Action::HelpScroll(-1),
            KeyCode::Down | KeyCode::Char('j') => Action::HelpScroll(1),
            KeyCode::PageUp => Action::HelpScroll(-10),
            KeyCode::PageDown | KeyCode::Char(' ') => Action::HelpScroll(10),
            KeyCode::Home => Action::HelpScroll(-10_000),
            KeyCode::End => Action::HelpScroll(10_000),
            KeyCode::Esc | KeyCode::Enter | KeyCode::Char('?') => Action::ToggleHelp,
            _ => Action::None,
        },
        Mode::Detail => match key.code {
            KeyCode::Char('q') => Action::Quit,
            KeyCode::Esc | KeyCode::Enter => Action::Detail,
            KeyCode::Up | KeyCode::Char('k') => Action::DetailScroll(-1),
            KeyCode::Down | KeyCode::Char('j') => Action::DetailScroll(1),
            KeyCode::PageUp => Action::DetailScroll(-10),
            KeyCode::PageDown => Action::DetailScroll(10),
            // moving through the trace keeps the pane open on the new current event
            KeyCode::Left | KeyCode::Char('h') => Action::Step(-1),
            KeyCode::Right | KeyCode::Char('l') => Action::Step(1),
            _ => Action::None,
        },
        Mode::Normal => match key.code {
            KeyCode::Char('q') => Action::Quit,
            KeyCode::Left | KeyCode::Char('h') => Action::Step(-1),
            KeyCode::Right | KeyCode::Char('l') => Action::Step(1),
            KeyCode::PageUp => Action::Step(-PAGE),
            KeyCode::PageDown => Action::Step(PAGE),
            KeyCode::Home => Action::Start,
            KeyCode::End => Action::End,
            KeyCode::Up | KeyCode::Char('k') => Action::Move(-1),
            KeyCode::Down | KeyCode::Char('j') => Action::Move(1),
            KeyCode::Tab => Action::FocusNext(1),
            KeyCode::BackTab => Action::FocusNext(-1),
            KeyCode::Enter => Action::Detail,
            KeyCode::Char('a') => Action::Answer,
            KeyCode::Char('s') => Action::FirstStall,
            KeyCode::Char('f') => Action::Marker(MarkerKind::Fault, 1),
            KeyCode::Char('F') => Action::Marker(MarkerKind::Fault, -1),
            KeyCode::Char('w') => Action::Marker(MarkerKind::Watchdog, 1),
            KeyCode::Char('W') => Action::Marker(MarkerKind::Watchdog, -1),
            KeyCode::Char('r') => Action::Marker(MarkerKind::Generation, 1),
            KeyCode::Char('R') => Action::Marker(MarkerKind::Generation, -1),
            KeyCode::Char('n') => Action::Match(1),
            KeyCode::Char('N') | KeyCode::Char('p') => Action::Match(-1),
            KeyCode::Char('/') => Action::Edit(Prompt::Filter),
            KeyCode::Char(':') => Action::Edit(Prompt::Command),
            KeyCode::Char('o') => Action::ToggleOrder,
            KeyCode::Char('b') => Action::ToggleStuck,
            KeyCode::Char('g') => Action::ToggleGraph,
            KeyCode::Char('c') => Action::ToggleCompact,
            KeyCode::Char('m') => Action::ToggleMouse,
            KeyCode::Char('t') => Action::ToggleTheme,
            KeyCode::Char('+') | KeyCode::Char('=') => Action::Zoom(1),
            KeyCode::Char('-') | KeyCode::Char('_') => Action::Zoom(-1),
            KeyCode::Char('?') => Action::ToggleHelp,
            KeyCode::Esc => Action::ClearFilter,
            _ => Action::None,
        },
    }
}

/// What `key` asks for while a prompt is typed: readline's keys.
fn editing(key: KeyEvent) -> Action {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let op = match key.code {
        KeyCode::Enter => return Action::Apply,
        KeyCode::Esc => return Action::Cancel,
        KeyCode::Char('g') if ctrl => return Action::Cancel,
        KeyCode::Char('a') if ctrl => LineOp::Home,
        KeyCode::Char('e') if ctrl => LineOp::End,
        KeyCode::Char('b') if ctrl => LineOp::Left,
        KeyCode::Char('f') if ctrl => LineOp::Right,
        KeyCode::Char('u') if ctrl => LineOp::KillStart,
        KeyCode::Char('k') if ctrl => LineOp::KillEnd,
        KeyCode::Char('w') if ctrl => LineOp::KillWord,
        KeyCode::Char('h') if ctrl => return Action::Backspace,
        KeyCode::Char('d') if ctrl => LineOp::Delete,
        KeyCode::Char('b') if alt => LineOp::WordLeft,
        KeyCode::Char('f') if alt => LineOp::WordRight,
        KeyCode::Backspace if ctrl || alt => LineOp::KillWord,
        // any other chord is not text
        KeyCode::Char(_) if ctrl || alt => return Action::None,
        KeyCode::Char(c) => return Action::Char(c),
        KeyCode::Backspace => return Action::Backspace,
        KeyCode::Delete => LineOp::Delete,
        KeyCode::Left if ctrl => LineOp::WordLeft,
        KeyCode::Right if ctrl => LineOp::WordRight,
        KeyCode::Left => LineOp::Left,
        KeyCode::Right => LineOp::Right,
        KeyCode::Home => LineOp::Home,
        KeyCode::End => LineOp::End,
        _ => return Action::None,
    };
    Action::Line(op)
}

/// What a mouse event over a screen of `area` asks for.
pub fn mouse(app: &App, area: Rect, ev: MouseEvent) -> Action {
    match app.mode() {
        Mode::Normal => {}
        Mode::Help => {
            return match ev.kind {
                MouseEventKind::ScrollUp => Action::HelpScroll(-WHEEL),
                MouseEventKind::ScrollDown => Action::HelpScroll(WHEEL),
                _ => Action::None,
            }
        }
        _ => {
            return match ev.kind {
                MouseEventKind::ScrollUp if app.detail.is_some() => Action::DetailScroll(-WHEEL),
                MouseEventKind::ScrollDown if app.detail.is_some() => Action::DetailScroll(WHEEL),
                _ => Action::None,
            }
        }
    }
    let hit = view::hit(app, area, ev.column, ev.row);
    match ev.kind {
        MouseEventKind::Down(MouseButton::Left) => match hit {
            Hit::Rank(r) => Action::SelectRank(r),
            Hit::Event(i) => Action::SeekTo(i + 1),
            Hit::Time(t) => Action::SeekTime(t),
            Hit::Marker(pos) => Action::SeekTo(pos),
            Hit::Panel(f) => Action::Focus(f),
            Hit::None => Action::None,
        },
        MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
            let d = if ev.kind == MouseEventKind::ScrollUp {
                -WHEEL
            } else {
                WHEEL
            };
            match hit {
                Hit::Rank(_) | Hit::Panel(Focus::Ranks) => Action::Scroll(Focus::Ranks, d),
                Hit::Panel(Focus::Diagnosis) => Action::Scroll(Focus::Diagnosis, d),
                Hit::Event(_) | Hit::Panel(Focus::Events) => Action::Scroll(Focus::Events, d),
                // the wheel over the timeline zooms it: up in, down out
                Hit::Time(_) | Hit::Marker(_) => Action::Zoom(if d < 0 { 1 } else { -1 }),
                Hit::None => Action::None,
            }
        }
        _ => Action::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn navigation_keys() {
        let n = Mode::Normal;
        assert_eq!(action(n, key(KeyCode::Left)), Action::Step(-1));
        assert_eq!(action(n, key(KeyCode::Right)), Action::Step(1));
        assert_eq!(action(n, key(KeyCode::PageUp)), Action::Step(-100));
        assert_eq!(action(n, key(KeyCode::PageDown)), Action::Step(100));
        assert_eq!(action(n, key(KeyCode::Home)), Action::Start);
        assert_eq!(action(n, key(KeyCode::End)), Action::End);
        assert_eq!(action(n, key(KeyCode::Char('s'))), Action::FirstStall);
        let f = MarkerKind::Fault;
        assert_eq!(action(n, key(KeyCode::Char('f'))), Action::Marker(f, 1));
        assert_eq!(action(n, key(KeyCode::Char('F'))), Action::Marker(f, -1));
        let w = MarkerKind::Watchdog;
        assert_eq!(action(n, key(KeyCode::Char('W'))), Action::Marker(w, -1));
        let g = MarkerKind::Generation;
        assert_eq!(action(n, key(KeyCode::Char('r'))), Action::Marker(g, 1));
        assert_eq!(action(n, key(KeyCode::Char('n'))), Action::Match(1));
        assert_eq!(action(n, key(KeyCode::Char('N'))), Action::Match(-1));
        assert_eq!(action(n, key(KeyCode::Up)), Action::Move(-1));
        assert_eq!(action(n, key(KeyCode::Down)), Action::Move(1));
        assert_eq!(action(n, key(KeyCode::Tab)), Action::FocusNext(1));
        assert_eq!(action(n, key(KeyCode::Enter)), Action::Detail);
        assert_eq!(action(n, key(KeyCode::Char('g'))), Action::ToggleGraph);
        assert_eq!(action(n, key(KeyCode::Char('c'))), Action::ToggleCompact);
        assert_eq!(action(n, key(KeyCode::Char('o'))), Action::ToggleOrder);
        assert_eq!(action(n, key(KeyCode::Char('b'))), Action::ToggleStuck);
        assert_eq!(action(n, key(KeyCode::Char('?'))), Action::ToggleHelp);
        let filter = Action::Edit(Prompt::Filter);
        assert_eq!(action(n, key(KeyCode::Char('/'))), filter);
        let command = Action::Edit(Prompt::Command);
        assert_eq!(action(n, key(KeyCode::Char(':'))), command);
        assert_eq!(action(n, key(KeyCode::Char('q'))), Action::Quit);
        assert_eq!(action(n, key(KeyCode::Char('x'))), Action::None);
    }

    #[test]
    fn ctrl_c_quits_everywhere() {
        let k = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        for m in [Mode::Normal, Mode::Editing, Mode::Help, Mode::Detail] {
            assert_eq!(action(m, k), Action::Quit);
        }
    }

    #[test]
    fn typing_takes_letters_as_text() {
        let e = Mode::Editing;
        assert_eq!(action(e, key(KeyCode::Char('q'))), Action::Char('q'));
        assert_eq!(action(e, key(KeyCode::Char('s'))), Action::Char('s'));
        assert_eq!(action(e, key(KeyCode::Backspace)), Action::Backspace);
        assert_eq!(action(e, key(KeyCode::Enter)), Action::Apply);
        assert_eq!(action(e, key(KeyCode::Esc)), Action::Cancel);
        assert_eq!(action(e, key(KeyCode::Left)), Action::Line(LineOp::Left));
    }

    #[test]
    fn typing_takes_readline_keys() {
        let e = Mode::Editing;
        let ctrl = |c| action(e, KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL));
        assert_eq!(ctrl('u'), Action::Line(LineOp::KillStart));
        assert_eq!(ctrl('w'), Action::Line(LineOp::KillWord));
        assert_eq!(ctrl('a'), Action::Line(LineOp::Home));
        assert_eq!(ctrl('e'), Action::Line(LineOp::End));
        assert_eq!(ctrl('k'), Action::Line(LineOp::KillEnd));
        assert_eq!(ctrl('g'), Action::Cancel);
        assert_eq!(ctrl('x'), Action::None, "a chord is not text");
        let alt = KeyEvent::new(KeyCode::Char('b'), KeyModifiers::ALT);
        assert_eq!(action(e, alt), Action::Line(LineOp::WordLeft));
        assert_eq!(action(e, key(KeyCode::Home)), Action::Line(LineOp::Home));
        assert_eq!(
            action(e, key(KeyCode::Delete)),
            Action::Line(LineOp::Delete)
        );
    }

    #[test]
    fn help_scrolls_closes_on_esc_and_q_quits() {
        let h = Mode::Help;
        assert_eq!(action(h, key(KeyCode::Esc)), Action::ToggleHelp);
        assert_eq!(action(h, key(KeyCode::Char('?'))), Action::ToggleHelp);
        assert_eq!(action(h, key(KeyCode::Down)), Action::HelpScroll(1));
        assert_eq!(action(h, key(KeyCode::PageUp)), Action::HelpScroll(-10));
        assert_eq!(action(h, key(KeyCode::Right)), Action::None);
        assert_eq!(action(h, key(KeyCode::Char('q'))), Action::Quit);
    }

    #[test]
    fn zoom_theme_and_esc_in_the_normal_mode() {
        let n = Mode::Normal;
        assert_eq!(action(n, key(KeyCode::Char('+'))), Action::Zoom(1));
        assert_eq!(action(n, key(KeyCode::Char('-'))), Action::Zoom(-1));
        assert_eq!(action(n, key(KeyCode::Char('t'))), Action::ToggleTheme);
        assert_eq!(action(n, key(KeyCode::Char('a'))), Action::Answer);
        assert_eq!(action(n, key(KeyCode::Esc)), Action::ClearFilter);
    }

    #[test]
    fn the_detail_pane_scrolls_and_closes() {
        let d = Mode::Detail;
        assert_eq!(action(d, key(KeyCode::Down)), Action::DetailScroll(1));
        assert_eq!(action(d, key(KeyCode::Esc)), Action::Detail);
        assert_eq!(action(d, key(KeyCode::Enter)), Action::Detail);
        assert_eq!(action(d, key(KeyCode::Right)), Action::Step(1));
    }

    #[test]
    fn key_releases_do_nothing() {
        let mut k = key(KeyCode::Char('q'));
        k.kind = KeyEventKind::Release;
        assert_eq!(action(Mode::Normal, k), Action::None);
    }
}
