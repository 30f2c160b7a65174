//! Text from inputs, made safe to show on a terminal.
//!
//! Scenarios, traces, Flight Recorder dumps and file names come from other people and other
//! machines, and every string in them can reach a human report or an error message: a group's
//! description, a stack frame's file name, a scenario's name, a fault string of a trace. A
//! terminal acts on some characters instead of showing them: ESC starts sequences that set the
//! window title, clear the screen, move the cursor or (in some terminals) write files; a
//! newline or carriage return lets a value forge a line of the report (`error: ...`,
//! `COMPLETED: ...`); bidirectional overrides make text read in another order than it is
//! stored. [`safe`] writes each of them as an escape (`\u{1b}`, `\n`), so what is shown is what
//! the input holds, on one line. [`safe_lines`] does the same to a report of several lines,
//! keeping its own line breaks.
//!
//! Machine output (`--json`, traces, scenarios written) keeps the text as it is: JSON escapes
//! control characters itself, and a reader of it gets the input's own bytes.

use std::borrow::Cow;
use std::fmt::Write;

/// `s` with every character a terminal would act on written as an escape: control characters
/// (C0, among them newline, tab and ESC; DEL; C1) and the bidirectional controls. Everything
/// else is left as it is; text that needs no escape is borrowed, not copied.
pub fn safe(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// [`safe`] for text of several lines: the same escapes, except that `\n` stays a line break.
/// For what a command prints as its report; a value inside a line is made [`safe`] first, so
/// that it cannot forge a line of its own.
pub fn safe_lines(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

fn escape(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    let acts = |c: char| acts_on_terminal(c) && !(keep_newlines && c == '\n');
    // the common case, plain printable ASCII, is one pass over the bytes
    let plain = s
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) || (keep_newlines && b == b'\n'));
    if plain || !s.chars().any(acts) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !acts(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // infallible: writing to a String
            _ => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

/// Whether a terminal acts on `c` rather than only showing it.
pub fn acts_on_terminal(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed() {
        for s in ["", "group 0 (default_pg)", "train.py:159", "ünïcode ✓ 名前"] {
            assert!(matches!(safe(s), Cow::Borrowed(_)), "{s}");
        }
        assert!(matches!(safe_lines("a\nb\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn what_a_terminal_acts_on_is_escaped() {
        assert_eq!(
            safe("\u{1b}]0;pwned\u{7}\u{1b}[2Jevil"),
            "\\u{1b}]0;pwned\\u{7}\\u{1b}[2Jevil"
        );
        assert_eq!(safe("a\nerror: forged\r\t"), "a\\nerror: forged\\r\\t");
        assert_eq!(safe("\u{9b}31m\u{7f}"), "\\u{9b}31m\\u{7f}");
        assert_eq!(safe("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(safe_lines("a\u{1b}[2J\nb\r\n"), "a\\u{1b}[2J\nb\\r\n");
    }

    #[test]
    fn no_escaped_text_holds_a_character_a_terminal_acts_on() {
        let all: String = (0u32..0x3000).filter_map(char::from_u32).collect();
        assert!(!safe(&all).chars().any(acts_on_terminal));
        assert!(!safe_lines(&all)
            .chars()
            .any(|c| c != '\n' && acts_on_terminal(c)));
    }
}
