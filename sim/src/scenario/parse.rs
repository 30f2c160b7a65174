//! TOML -> [`Scenario`], with errors that name the file, line and key.
//!
//! Three stages, each mapped back to the text: TOML syntax (toml's recoverable parser gives the
//! position), the typed model (serde errors carry a byte span, mapped to the innermost key
//! written there), and validation (a key path, mapped to the line where that key is written, or
//! where its nearest written ancestor is when the key itself was left out).

use super::locate::{KeyPath, Located};
use super::model::Scenario;
use super::validate::{unsupported, validate, Invalid, Support};
use serde::Deserialize;
use std::fmt;
use std::path::Path;

/// A scenario that cannot be used, located in its file.
///
/// Displayed as `file:line: key: message`; the key is left out when the error is not about one
/// key (the file cannot be read, or is not TOML at all), and the line when there is no position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub file: String,
    /// 1-based line, 0 when the error has no position (e.g. the file cannot be read).
    pub line: usize,
    /// Dotted key path, e.g. `faults[1].rank`; empty when the error is not about a key.
    pub key: String,
    pub message: String,
}

/// One line, the scenario's own text in it (a quoted value may hold line breaks or escape
/// sequences) [`safe`](crate::text::safe) for a terminal.
impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::text::safe;
        write!(f, "{}:", safe(&self.file))?;
        if self.line > 0 {
            write!(f, "{}:", self.line)?;
        }
        if !self.key.is_empty() {
            write!(f, " {}:", safe(&self.key))?;
        }
        write!(f, " {}", safe(&self.message))
    }
}

impl std::error::Error for ScenarioError {}

impl ScenarioError {
    fn new(file: &str, line: usize, key: impl ToString, message: impl Into<String>) -> Self {
        ScenarioError {
            file: file.to_string(),
            line,
            key: key.to_string(),
            message: message.into(),
        }
    }
}

/// Reads and validates a scenario file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let text = read(path, &file)?;
    parse(&text, &file)
}

/// Reads and validates a scenario file, and rejects features the engine does not support yet.
pub fn load_with(path: &Path, support: &Support) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let text = read(path, &file)?;
    parse_with(&text, &file, support)
}

/// The most a scenario file may hold (a scenario written by `import` from the dumps of
/// thousands of ranks, each with a program of its own, is tens of MiB).
pub const MAX_SCENARIO_BYTES: u64 = 256 << 20;

fn read(path: &Path, file: &str) -> Result<String, ScenarioError> {
    let mut bytes = Vec::new();
    crate::input::read(path, MAX_SCENARIO_BYTES, &mut bytes)
        .map_err(|e| ScenarioError::new(file, 0, "", format!("cannot read the scenario: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..valid]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        ScenarioError::new(file, line, "", "the file is not UTF-8 text")
    })
}

/// The line of scenario file `path` where the dotted key `key` is written (see [`key_line`]),
/// read under the same size cap as a scenario; 1 when the file cannot be read.
pub fn key_line_in(path: &Path, key: &str) -> usize {
    read(path, &path.display().to_string()).map_or(1, |text| key_line(&text, key))
}

/// The line of scenario text `text` where the dotted key `key` (e.g. `world.size`) is written,
/// or of its nearest written ancestor; 1 when nothing of it is, or the text is not TOML.
pub fn key_line(text: &str, key: &str) -> usize {
    match (
        super::locate::Located::parse(text),
        super::locate::KeyPath::parse(key),
    ) {
        (Ok(located), Some(path)) => located.line_of(&path),
        _ => 1,
    }
}

/// Parses and validates scenario text; `file` is used in error messages.
pub fn parse(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
    parse_inner(text, file, None)
}

/// Parses and validates scenario text, and rejects features the engine does not support yet.
pub fn parse_with(text: &str, file: &str, support: &Support) -> Result<Scenario, ScenarioError> {
    parse_inner(text, file, Some(support))
}

fn parse_inner(
    text: &str,
    file: &str,
    support: Option<&Support>,
) -> Result<Scenario, ScenarioError> {
    let doc =
        Located::parse(text).map_err(|e| ScenarioError::new(file, e.line, e.key, e.message))?;
    let scenario: Scenario = toml::from_str(text).map_err(|e| {
        let (key, line, message) = doc.serde_error(e.span(), e.message());
        let message = name_wanted(text, e.span(), &message).unwrap_or(message);
        ScenarioError::new(file, line, key, message)
    })?;
    let workload = KeyPath::parse("workload").is_some_and(|p| doc.has(&p));
    if scenario.torch.is_none() && !workload {
        // only a program (`[torch]`) stands in for the workload
        return Err(ScenarioError::new(
            file,
            1,
            "workload",
            "missing required key `workload`",
        ));
    }
    let at_key = |(key, message): Invalid| {
        let line = KeyPath::parse(&key).map_or(1, |p| doc.line_of(&p));
        ScenarioError::new(file, line, key, message)
    };
    validate(&scenario).map_err(at_key)?;
    if let Some(support) = support {
        unsupported(&scenario, support).map_err(at_key)?;
    }
    Ok(scenario)
}

/// Where a name (an op, an algorithm, a fault kind, an outcome...) is wanted and another type
/// is written, toml says "wanted string or table" or "wanted exactly 1 element, found 0
/// elements", which names neither what was found nor what is accepted. This says both: the
/// value found, and the names accepted there, as toml lists them for a string that is none of
/// them (the text is parsed once more with such a string in the value's place).
fn name_wanted(text: &str, span: Option<std::ops::Range<usize>>, message: &str) -> Option<String> {
    if message != "wanted string or table" && !message.starts_with("wanted exactly 1 element") {
        return None;
    }
    let span = span.filter(|s| s.end <= text.len() && text.is_char_boundary(s.start))?;
    let value = text.get(span.clone())?.trim();
    let found = toml_type(value);
    let found = if value.len() <= 40 && !value.contains('\n') {
        format!("{found} `{value}`")
    } else {
        found.to_string()
    };
    let probe = format!("{}\"?\"{}", &text[..span.start], &text[span.end..]);
    let accepted = match toml::from_str::<Scenario>(&probe) {
        Err(e) if e.span().map(|s| s.start) == Some(span.start) => e
            .message()
            .split_once("expected ")
            .map(|(_, names)| names.trim().to_string()),
        _ => None,
    };
    Some(match accepted {
        Some(names) => format!("invalid type: {found}, expected a string, {names}"),
        None => format!("invalid type: {found}, expected a string"),
    })
}

/// The TOML type of a value as written: `table`, `array`, `date-time`...
fn toml_type(value: &str) -> &'static str {
    let b = value.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    match b.first() {
        Some(b'{') => "table",
        Some(b'[') => "array",
        Some(b'"' | b'\'') => "string",
        _ if value == "true" || value == "false" => "boolean",
        _ if (digits(0..4) && b.get(4) == Some(&b'-'))
            || (digits(0..2) && b.get(2) == Some(&b':')) =>
        {
            "date-time"
        }
        _ if value.contains(['.', 'e', 'E']) || value.contains("inf") || value.contains("nan") => {
            "float"
        }
        _ => "integer",
    }
}

/// Parses a scenario embedded as JSON (a trace header), and validates it. Errors are reported
/// on line 1 (the header line) under the key `scenario`.
pub fn parse_json(value: &serde_json::Value, file: &str) -> Result<Scenario, ScenarioError> {
    let scenario = Scenario::deserialize(value)
        .map_err(|e| ScenarioError::new(file, 1, "scenario", e.to_string()))?;
    validate(&scenario).map_err(|(key, message)| {
        ScenarioError::new(file, 1, format!("scenario.{key}"), message)
    })?;
    Ok(scenario)
}

#[cfg(test)]
mod tests;
