//! Where things are in a scenario file: key paths such as `faults[1].rank`, and the lines they
//! are written on.
//!
//! The text is parsed a second time into toml's spanned document ([`DeTable`]), flattened into
//! one entry per key and array element with its key span and value span. Errors from serde carry
//! a byte span, and validation errors carry a key path; both are mapped to a key path and a line
//! through these entries.

use std::fmt;
use std::ops::Range;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// One step of a key path: a table key or an array index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// A path to a key or an array element, displayed as `workload.ops[0].bytes`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct KeyPath(pub(crate) Vec<Seg>);

impl KeyPath {
    /// Parses the paths that validation produces: bare keys, dots and `[index]`.
    /// Returns `None` for anything else (a key path is then only shown, never located).
    pub(crate) fn parse(s: &str) -> Option<KeyPath> {
        let mut segs = Vec::new();
        let mut rest = s;
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('[') {
                let end = r.find(']')?;
                segs.push(Seg::Index(r[..end].parse().ok()?));
                rest = &r[end + 1..];
            } else {
                let r = if segs.is_empty() {
                    rest
                } else {
                    rest.strip_prefix('.')?
                };
                let end = r.find(['.', '[']).unwrap_or(r.len());
                let key = &r[..end];
                if key.is_empty() || !key.chars().all(is_bare_key_char) {
                    return None;
                }
                segs.push(Seg::Key(key.to_string()));
                rest = &r[end..];
            }
        }
        Some(KeyPath(segs))
    }

    pub(crate) fn push_key(&mut self, key: &str) {
        self.0.push(Seg::Key(key.to_string()));
    }

    fn last_key(&self) -> Option<&str> {
        match self.0.last() {
            Some(Seg::Key(k)) => Some(k),
            _ => None,
        }
    }
}

fn is_bare_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Index(n) => write!(f, "[{n}]")?,
                Seg::Key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    if !k.is_empty() && k.chars().all(is_bare_key_char) {
                        f.write_str(k)?;
                    } else {
                        write!(f, "{k:?}")?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// A key or array element of the document with its spans.
struct Entry {
    path: KeyPath,
    /// Where the key is written; `None` for array elements.
    key: Option<Range<usize>>,
    /// Where the value is written (for a `[table]` or `[[array]]` entry: its header).
    value: Range<usize>,
}

/// A scenario text with every key located.
pub(crate) struct Located<'t> {
    text: &'t str,
    entries: Vec<Entry>,
}

/// A TOML syntax error: where it is and what is wrong.
pub(crate) struct SyntaxError {
    pub(crate) key: KeyPath,
    pub(crate) line: usize,
    pub(crate) message: String,
}

impl<'t> Located<'t> {
    /// Parses `text` as a spanned TOML document, or returns its first syntax error.
    pub(crate) fn parse(text: &'t str) -> Result<Located<'t>, SyntaxError> {
        let (doc, errors) = DeTable::parse_recoverable(text);
        let mut located = Located {
            text,
            entries: Vec::new(),
        };
        flatten_table(doc.get_ref(), &mut KeyPath::default(), &mut located.entries);
        let first = errors
            .iter()
            .min_by_key(|e| e.span().map_or(usize::MAX, |s| s.start));
        match first {
            None => Ok(located),
            Some(e) => {
                let span = e.span().unwrap_or(0..0);
                let message = e.message().trim().to_string();
                let key = located.syntax_key(&span, &message);
                Err(SyntaxError {
                    key,
                    line: located.line_at(span.start),
                    message,
                })
            }
        }
    }

    /// 1-based line of a byte offset.
    pub(crate) fn line_at(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// Whether `path` is written in the text.
    pub(crate) fn has(&self, path: &KeyPath) -> bool {
        self.entry(path).is_some()
    }

    fn entry(&self, path: &KeyPath) -> Option<&Entry> {
        self.entries.iter().find(|e| &e.path == path)
    }

    /// The line where `path` is written; when it is not written (a missing key, a default),
    /// the line of its nearest written ancestor; line 1 when nothing is written at all.
    pub(crate) fn line_of(&self, path: &KeyPath) -> usize {
        let mut prefix = path.0.as_slice();
        loop {
            let probe = KeyPath(prefix.to_vec());
            if let Some(e) = self.entry(&probe) {
                let at = e.key.as_ref().map_or(e.value.start, |k| k.start);
                return self.line_at(at);
            }
            match prefix.split_last() {
                Some((_, rest)) => prefix = rest,
                None => return 1,
            }
        }
    }

    /// The innermost key or element whose key or value is written at `offset`, and whether the
    /// offset is on the key itself.
    fn locate(&self, offset: usize) -> Option<(&KeyPath, bool)> {
        let within = |r: &Range<usize>| r.contains(&offset) || (r.is_empty() && r.start == offset);
        self.entries
            .iter()
            .filter_map(|e| {
                if e.key.as_ref().is_some_and(within) {
                    Some((&e.path, true))
                } else if within(&e.value) {
                    Some((&e.path, false))
                } else {
                    None
                }
            })
            .max_by_key(|(p, _)| p.0.len())
    }

    /// The table whose `[header]` most recently precedes `offset` (the root when none does).
    fn enclosing_table(&self, offset: usize) -> KeyPath {
        self.entries
            .iter()
            .filter(|e| e.value.end <= offset && self.is_header(&e.value))
            .max_by_key(|e| e.value.start)
            .map(|e| e.path.clone())
            .unwrap_or_default()
    }

    /// A `[table]` or `[[array]]` header: brackets on a line of their own (an inline array
    /// such as `sides = [[0], [1]]` has brackets too, but after a key).
    fn is_header(&self, span: &Range<usize>) -> bool {
        let line_start = self.text[..span.start.min(self.text.len())]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        self.text
            .get(line_start..span.start)
            .is_some_and(|before| before.trim().is_empty())
            && self
                .text
                .get(span.clone())
                .is_some_and(|s| s.starts_with('[') && s.ends_with(']') && !s.contains('\n'))
    }

    fn syntax_key(&self, span: &Range<usize>, message: &str) -> KeyPath {
        let mut path = if let Some((path, on_key)) = self.locate(span.start) {
            if on_key || !message.starts_with("duplicate key") {
                return path.clone();
            }
            // a key written twice inside an inline table: the table, then the key
            path.clone()
        } else if let Some(e) = self
            .entries
            .iter()
            .filter(|e| e.value.end == span.start)
            .max_by_key(|e| e.path.0.len())
        {
            // an error just after a value (an unterminated string) belongs to that value
            return e.path.clone();
        } else {
            self.enclosing_table(span.start)
        };
        if message.starts_with("duplicate key") {
            if let Some(k) = self.text.get(span.clone()) {
                let k = k.trim_matches(|c| c == '"' || c == '\'');
                if !k.is_empty() && path.last_key() != Some(k) {
                    path.push_key(k);
                }
            }
        }
        path
    }

    /// Maps a serde error (message and span) to a key path, a line and a message for users.
    pub(crate) fn serde_error(
        &self,
        span: Option<Range<usize>>,
        message: &str,
    ) -> (KeyPath, usize, String) {
        let offset = span.as_ref().map(|s| s.start);
        // an empty span is the document itself (the root table is spanned 0..0)
        let in_root = span.as_ref().is_some_and(|s| s.is_empty());
        let (mut path, on_key) = match offset.filter(|_| !in_root).and_then(|o| self.locate(o)) {
            Some((p, on_key)) => (p.clone(), on_key),
            None => (KeyPath::default(), false),
        };
        let mut line = offset.map(|o| self.line_at(o));
        let mut message = message.trim().to_string();
        if let Some(key) = quoted_after(&message, "unknown field `") {
            if !(on_key && path.last_key() == Some(key.as_str())) {
                path.push_key(&key);
                // the error points at the enclosing table; the key itself is more useful
                if self.entry(&path).is_some() {
                    line = Some(self.line_of(&path));
                }
            }
            message = format!("unknown key{}", &message["unknown field".len()..]);
        } else if let Some(key) = quoted_after(&message, "missing field `") {
            path.push_key(&key);
            message = format!("missing required key{}", &message["missing field".len()..]);
        } else if let Some(key) = quoted_after(&message, "field `") {
            // a value that is wrong with the others of its table: "field `k`: why"
            path.push_key(&key);
            if self.entry(&path).is_some() {
                line = Some(self.line_of(&path));
            }
            let why = &message["field `".len() + key.len() + 1..];
            message = why.trim_start_matches(':').trim().to_string();
        }
        let line = line.unwrap_or_else(|| self.line_of(&path));
        (path, line, plain_types(&message))
    }
}

/// Replaces serde's Rust type names in "expected ..." with the TOML words users write.
fn plain_types(message: &str) -> String {
    // an integer beyond i64 reaches serde as an i128: say it is too large, not which type
    let message = match (message.find(" as i128"), message.find("integer `")) {
        (Some(i), Some(_)) if message.starts_with("invalid type: integer `") => format!(
            "invalid value: {} is too large{}",
            &message["invalid type: ".len()..i],
            &message[i + " as i128".len()..]
        ),
        _ => message.to_string(),
    };
    let mut out = message
        .replace("expected u32", "expected an integer from 0 to 4294967295")
        .replace(
            "expected u64",
            "expected an integer from 0 to 18446744073709551615",
        )
        .replace("expected f64", "expected a number")
        .replace("expected a sequence", "expected an array")
        .replace("expected a map", "expected a table");
    if let Some(i) = out.find("expected struct ") {
        let rest = &out[i + "expected struct ".len()..];
        let end = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        out = format!("{}expected a table{}", &out[..i], &rest[end..]);
    }
    out
}

/// `msg` = `<prefix>X` + "`" + rest  =>  `X`.
fn quoted_after(msg: &str, prefix: &str) -> Option<String> {
    let rest = msg.strip_prefix(prefix)?;
    let end = rest.find('`')?;
    Some(rest[..end].to_string())
}

fn flatten_table(table: &DeTable<'_>, path: &mut KeyPath, out: &mut Vec<Entry>) {
    for (key, value) in table.iter() {
        path.0.push(Seg::Key(key.get_ref().to_string()));
        out.push(Entry {
            path: path.clone(),
            key: Some(key.span()),
            value: value.span(),
        });
        flatten_value(value, path, out);
        path.0.pop();
    }
}

fn flatten_value(value: &Spanned<DeValue<'_>>, path: &mut KeyPath, out: &mut Vec<Entry>) {
    match value.get_ref() {
        DeValue::Table(t) => flatten_table(t, path, out),
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.0.push(Seg::Index(i));
                out.push(Entry {
                    path: path.clone(),
                    key: None,
                    value: item.span(),
                });
                flatten_value(item, path, out);
                path.0.pop();
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_paths_parse_and_display() {
        for s in [
            "world.size",
            "faults[1].rank",
            "faults[0].sides[1][2]",
            "name",
        ] {
            assert_eq!(KeyPath::parse(s).unwrap().to_string(), s);
        }
        assert!(KeyPath::parse("a..b").is_none());
        assert!(KeyPath::parse("a[x]").is_none());
        assert!(KeyPath::parse(".a").is_none());
        let mut p = KeyPath::parse("world").unwrap();
        p.push_key("a b");
        assert_eq!(p.to_string(), "world.\"a b\"");
    }

    #[test]
    fn lines_of_keys_and_elements() {
        let text = "a = 1\n[b]\nc = [1,\n  2]\n[[d]]\ne = 1\n[[d]]\nf = { g = 1 }\n";
        let doc = Located::parse(text).ok().unwrap();
        let line = |p: &str| doc.line_of(&KeyPath::parse(p).unwrap());
        assert_eq!(line("a"), 1);
        assert_eq!(line("b"), 2);
        assert_eq!(line("b.c"), 3);
        assert_eq!(line("b.c[1]"), 4);
        assert_eq!(line("d[0]"), 5);
        assert_eq!(line("d[0].e"), 6);
        assert_eq!(line("d[1]"), 7);
        assert_eq!(line("d[1].f.g"), 8);
        // not written: the nearest written ancestor
        assert_eq!(line("d[1].missing"), 7);
        assert_eq!(line("nowhere.at.all"), 1);
    }
}
