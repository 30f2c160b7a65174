//! The text of a prompt as readline edits it: a cursor, Ctrl-A / Ctrl-E to its ends, Ctrl-U
//! and Ctrl-K to kill before or after it, Ctrl-W to kill the word before it.

/// An edit of a prompt's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineOp {
    Insert(char),
    /// Delete the character before the cursor (Backspace, Ctrl-H).
    Backspace,
    /// Delete the character under the cursor (Delete, Ctrl-D).
    Delete,
    Left,
    Right,
    /// Ctrl-A, Home.
    Home,
    /// Ctrl-E, End.
    End,
    /// Ctrl-U: everything before the cursor.
    KillStart,
    /// Ctrl-K: everything from the cursor on.
    KillEnd,
    /// Ctrl-W: the word before the cursor, and the spaces after it.
    KillWord,
    /// Alt-B / Ctrl-←, Alt-F / Ctrl-→: a word back or forward.
    WordLeft,
    WordRight,
}

/// A line being typed, with its cursor (in characters).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Line {
    chars: Vec<char>,
    cursor: usize,
    /// The text was refused: the next character typed replaces it (editing keys keep it).
    pub replace: bool,
}

impl Line {
    /// `text`, the cursor at its end.
    pub fn new(text: &str) -> Line {
        let chars: Vec<char> = text.chars().collect();
        Line {
            cursor: chars.len(),
            chars,
            replace: false,
        }
    }

    pub fn text(&self) -> String {
        self.chars.iter().collect()
    }

    /// The cursor, in characters from the start.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The text before and after the cursor.
    pub fn split(&self) -> (String, String) {
        (
            self.chars[..self.cursor].iter().collect(),
            self.chars[self.cursor..].iter().collect(),
        )
    }

    /// Where the word before the cursor starts.
    fn word_start(&self) -> usize {
        let mut i = self.cursor;
        while i > 0 && self.chars[i - 1].is_whitespace() {
            i -= 1;
        }
        while i > 0 && !self.chars[i - 1].is_whitespace() {
            i -= 1;
        }
        i
    }

    /// Where the word after the cursor ends.
    fn word_end(&self) -> usize {
        let n = self.chars.len();
        let mut i = self.cursor;
        while i < n && self.chars[i].is_whitespace() {
            i += 1;
        }
        while i < n && !self.chars[i].is_whitespace() {
            i += 1;
        }
        i
    }

    /// Applies `op`; whether the text changed.
    pub fn apply(&mut self, op: LineOp) -> bool {
        let before = self.chars.clone();
        if std::mem::take(&mut self.replace) && matches!(op, LineOp::Insert(_)) {
            self.chars.clear();
            self.cursor = 0;
        }
        match op {
            LineOp::Insert(c) => {
                // a control character would reach the terminal when the prompt is drawn
                if !c.is_control() {
                    self.chars.insert(self.cursor, c);
                    self.cursor += 1;
                }
            }
            LineOp::Backspace => {
                if self.cursor > 0 {
                    self.cursor -= 1;
                    self.chars.remove(self.cursor);
                }
            }
            LineOp::Delete => {
                if self.cursor < self.chars.len() {
                    self.chars.remove(self.cursor);
                }
            }
            LineOp::Left => self.cursor = self.cursor.saturating_sub(1),
            LineOp::Right => self.cursor = (self.cursor + 1).min(self.chars.len()),
            LineOp::Home => self.cursor = 0,
            LineOp::End => self.cursor = self.chars.len(),
            LineOp::KillStart => {
                self.chars.drain(..self.cursor);
                self.cursor = 0;
            }
            LineOp::KillEnd => self.chars.truncate(self.cursor),
            LineOp::KillWord => {
                let start = self.word_start();
                self.chars.drain(start..self.cursor);
                self.cursor = start;
            }
            LineOp::WordLeft => self.cursor = self.word_start(),
            LineOp::WordRight => self.cursor = self.word_end(),
        }
        self.chars != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(text: &str) -> Line {
        let mut l = Line::default();
        for c in text.chars() {
            l.apply(LineOp::Insert(c));
        }
        l
    }

    #[test]
    fn keys_edit_at_the_cursor_as_readline_does() {
        let mut l = typed("r1 send");
        l.apply(LineOp::Home);
        l.apply(LineOp::Insert('-'));
        assert_eq!(l.text(), "-r1 send");
        l.apply(LineOp::End);
        l.apply(LineOp::KillWord);
        assert_eq!(l.text(), "-r1 ");
        l.apply(LineOp::KillWord);
        assert_eq!(l.text(), "");
        let mut l = typed("3 step drop");
        l.apply(LineOp::WordLeft);
        l.apply(LineOp::KillStart);
        assert_eq!((l.text(), l.cursor()), ("drop".into(), 0));
        l.apply(LineOp::Right);
        l.apply(LineOp::KillEnd);
        assert_eq!(l.text(), "d");
        l.apply(LineOp::Left);
        l.apply(LineOp::Delete);
        assert_eq!(l.text(), "");
        l.apply(LineOp::Backspace);
        l.apply(LineOp::Left);
        assert_eq!((l.text(), l.cursor()), ("".into(), 0));
        let mut l = typed("a\u{1b}b");
        assert_eq!(l.text(), "ab", "no control character is taken");
        l.apply(LineOp::WordLeft);
        l.apply(LineOp::WordRight);
        assert_eq!(l.cursor(), 2);
    }

    #[test]
    fn refused_text_is_replaced_by_what_is_typed_next_or_edited() {
        let mut l = typed("9");
        l.replace = true;
        l.apply(LineOp::Insert('1'));
        assert_eq!(l.text(), "1");
        l.apply(LineOp::Insert('9'));
        l.replace = true;
        l.apply(LineOp::Backspace);
        l.apply(LineOp::Insert('2'));
        assert_eq!(l.text(), "12", "an edit keeps the text");
    }
}
