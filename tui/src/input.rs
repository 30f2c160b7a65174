//! Keys and mouse to actions: the main loop reads the terminal, this module says what the
//! user asked for, and [`App::update`](crate::app::App::update) does it.

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
    Char(char),
    Backspace,
    /// Keep what was typed (apply the filter, run the command).
    Apply,
    /// Stop typing; the filter goes back to what it was.
    Cancel,
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
    None,
}

/// Which keys mean what right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Normal,
    /// Typing a filter or a command: keys are text.
    Editing,
    /// The key help is open: any key closes it, `q` still quits.
    Help,
    /// The detail pane is open: ↑ ↓ scroll it, Esc or Enter close it.
    Detail,
}

/// The key bindings, as `?` shows them.
pub const KEYS: [(&str, &str); 24] = [
    ("← →  h l", "one event back / forward"),
    ("PgUp PgDn", "100 events back / forward"),
    ("Home End", "start / end of the trace"),
    ("↑ ↓  j k", "in the focused panel: rank / scroll / event"),
    ("Tab", "focus the next panel (ranks, diagnosis, events)"),
    ("Enter", "every field of the current event (Esc closes)"),
    ("s", "first stall (culprits first)"),
    ("f F", "next / previous fault (the offending call)"),
    ("w W", "next / previous watchdog timeout"),
    ("r R", "next / previous generation"),
    ("/", "filter the log as you type: 3 r3 send -step text"),
    ("n N", "next / previous match (the rank's event, no filter)"),
    (":", "go to: 100 (rank), 0-99,101-255, @14ms, #5000"),
    ("o", "order ranks by state (stuck first) / by rank"),
    ("b", "only stuck ranks (culprits, blocked, rendezvous)"),
    ("g", "wait-for graph: picture / list"),
    ("c", "ranks: table / compact grid"),
    ("mouse", "click a rank, an event, the timeline; wheel"),
    ("m", "mouse reporting off / on (off: the terminal selects)"),
    ("Ctrl-Z", "suspend to the shell (fg comes back)"),
    ("?", "this help"),
    ("q Ctrl-C", "quit"),
    ("Esc", "close, cancel what is typed"),
    (
        "",
        "glyphs: ✗ dead ‖ paused ∞ hung ≠ mismatch ∅ skipped ↩ left out",
    ),
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
            _ => {}
        }
    }
    match mode {
        Mode::Editing => match key.code {
            KeyCode::Enter => Action::Apply,
            KeyCode::Esc => Action::Cancel,
            KeyCode::Backspace => Action::Backspace,
            KeyCode::Char(c) => Action::Char(c),
            _ => Action::None,
        },
        Mode::Help => match key.code {
            KeyCode::Char('q') => Action::Quit,
            _ => Action::ToggleHelp,
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
            KeyCode::Char('?') => Action::ToggleHelp,
            _ => Action::None,
        },
    }
}

/// What a mouse event over a screen of `area` asks for.
pub fn mouse(app: &App, area: Rect, ev: MouseEvent) -> Action {
    if app.mode() != Mode::Normal {
        return match ev.kind {
            MouseEventKind::ScrollUp if app.detail.is_some() => Action::DetailScroll(-WHEEL),
            MouseEventKind::ScrollDown if app.detail.is_some() => Action::DetailScroll(WHEEL),
            _ => Action::None,
        };
    }
    let hit = view::hit(app, area, ev.column, ev.row);
    match ev.kind {
        MouseEventKind::Down(MouseButton::Left) => match hit {
            Hit::Rank(r) => Action::SelectRank(r),
            Hit::Event(i) => Action::SeekTo(i + 1),
            Hit::Time(t) => Action::SeekTime(t),
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
                Hit::Time(_) => Action::Step(d),
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
        assert_eq!(action(e, key(KeyCode::Left)), Action::None);
    }

    #[test]
    fn help_closes_on_any_key_but_q_quits() {
        let h = Mode::Help;
        assert_eq!(action(h, key(KeyCode::Esc)), Action::ToggleHelp);
        assert_eq!(action(h, key(KeyCode::Right)), Action::ToggleHelp);
        assert_eq!(action(h, key(KeyCode::Char('q'))), Action::Quit);
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
