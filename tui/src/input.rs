//! Keys to actions, as a pure function: the main loop reads the terminal, this module says
//! what the user asked for, and [`App::update`](crate::app::App::update) does it.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// Events a page key moves by.
pub const PAGE: i64 = 100;

/// What the user asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Quit,
    /// Move the cursor by this many events.
    Step(i64),
    Start,
    End,
    FirstStall,
    NextFault,
    /// Next / previous event of the selected rank.
    NextOfRank,
    PrevOfRank,
    /// Move the rank selection by this many ranks.
    Select(i64),
    /// Start typing an event filter.
    EditFilter,
    FilterChar(char),
    FilterBackspace,
    /// Apply the filter being typed.
    FilterApply,
    /// Stop typing and keep the previous filter.
    FilterCancel,
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
    /// Typing a filter: keys are text.
    Editing,
    /// The key help is open: any key closes it, `q` still quits.
    Help,
}

/// The key bindings, as shown by `?`.
pub const KEYS: [(&str, &str); 14] = [
    ("← →", "one event back / forward"),
    ("PgUp PgDn", "100 events back / forward"),
    ("Home End", "start / end of the trace"),
    ("s", "jump to the first stall"),
    ("f", "next fault"),
    ("n p", "next / previous event of the selected rank"),
    ("↑ ↓", "select a rank"),
    ("/", "filter events: ranks (3, r3), kinds (send, -step)"),
    ("g", "wait-for graph: picture / list"),
    ("c", "ranks: table / compact grid"),
    ("?", "this help"),
    ("q", "quit"),
    ("Esc", "close help, cancel the filter"),
    ("Enter", "apply the filter"),
];

/// What `key` asks for in `mode`.
pub fn action(mode: Mode, key: KeyEvent) -> Action {
    if key.kind == KeyEventKind::Release {
        return Action::None;
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        return Action::Quit;
    }
    match mode {
        Mode::Editing => match key.code {
            KeyCode::Enter => Action::FilterApply,
            KeyCode::Esc => Action::FilterCancel,
            KeyCode::Backspace => Action::FilterBackspace,
            KeyCode::Char(c) => Action::FilterChar(c),
            _ => Action::None,
        },
        Mode::Help => match key.code {
            KeyCode::Char('q') => Action::Quit,
            _ => Action::ToggleHelp,
        },
        Mode::Normal => match key.code {
            KeyCode::Char('q') => Action::Quit,
            KeyCode::Left | KeyCode::Char('h') => Action::Step(-1),
            KeyCode::Right | KeyCode::Char('l') => Action::Step(1),
            KeyCode::PageUp => Action::Step(-PAGE),
            KeyCode::PageDown => Action::Step(PAGE),
            KeyCode::Home => Action::Start,
            KeyCode::End => Action::End,
            KeyCode::Char('s') => Action::FirstStall,
            KeyCode::Char('f') => Action::NextFault,
            KeyCode::Char('n') => Action::NextOfRank,
            KeyCode::Char('p') => Action::PrevOfRank,
            KeyCode::Up | KeyCode::Char('k') => Action::Select(-1),
            KeyCode::Down | KeyCode::Char('j') => Action::Select(1),
            KeyCode::Char('/') => Action::EditFilter,
            KeyCode::Char('g') => Action::ToggleGraph,
            KeyCode::Char('c') => Action::ToggleCompact,
            KeyCode::Char('?') => Action::ToggleHelp,
            KeyCode::Esc => Action::None,
            _ => Action::None,
        },
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
        assert_eq!(action(n, key(KeyCode::Char('f'))), Action::NextFault);
        assert_eq!(action(n, key(KeyCode::Char('n'))), Action::NextOfRank);
        assert_eq!(action(n, key(KeyCode::Char('p'))), Action::PrevOfRank);
        assert_eq!(action(n, key(KeyCode::Up)), Action::Select(-1));
        assert_eq!(action(n, key(KeyCode::Down)), Action::Select(1));
        assert_eq!(action(n, key(KeyCode::Char('g'))), Action::ToggleGraph);
        assert_eq!(action(n, key(KeyCode::Char('c'))), Action::ToggleCompact);
        assert_eq!(action(n, key(KeyCode::Char('?'))), Action::ToggleHelp);
        assert_eq!(action(n, key(KeyCode::Char('/'))), Action::EditFilter);
        assert_eq!(action(n, key(KeyCode::Char('q'))), Action::Quit);
        assert_eq!(action(n, key(KeyCode::Char('x'))), Action::None);
    }

    #[test]
    fn ctrl_c_quits_everywhere() {
        let k = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        for m in [Mode::Normal, Mode::Editing, Mode::Help] {
            assert_eq!(action(m, k), Action::Quit);
        }
    }

    #[test]
    fn typing_a_filter_takes_letters_as_text() {
        let e = Mode::Editing;
        assert_eq!(action(e, key(KeyCode::Char('q'))), Action::FilterChar('q'));
        assert_eq!(action(e, key(KeyCode::Char('s'))), Action::FilterChar('s'));
        assert_eq!(action(e, key(KeyCode::Backspace)), Action::FilterBackspace);
        assert_eq!(action(e, key(KeyCode::Enter)), Action::FilterApply);
        assert_eq!(action(e, key(KeyCode::Esc)), Action::FilterCancel);
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
    fn key_releases_do_nothing() {
        let mut k = key(KeyCode::Char('q'));
        k.kind = KeyEventKind::Release;
        assert_eq!(action(Mode::Normal, k), Action::None);
    }
}
