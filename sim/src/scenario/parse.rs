//! TOML -> [`Scenario`], with errors that name the file, line and key.

use super::model::Scenario;
use std::path::Path;

/// A scenario that cannot be used, located in its file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {key}: {message}")]
pub struct ScenarioError {
    pub file: String,
    /// 1-based line, 0 when the error has no position (e.g. the file cannot be read).
    pub line: usize,
    /// Dotted key path, e.g. `faults[1].rank`; empty when the error is not about a key.
    pub key: String,
    pub message: String,
}

/// Reads and validates a scenario file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        file: file.clone(),
        line: 0,
        key: String::new(),
        message: format!("cannot read the scenario: {e}"),
    })?;
    parse(&text, &file)
}

/// Parses and validates scenario text; `file` is used in error messages.
pub fn parse(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
    let scenario: Scenario = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
            .unwrap_or(0);
        ScenarioError {
            file: file.to_string(),
            line,
            key: String::new(),
            message: e.message().to_string(),
        }
    })?;
    super::validate(&scenario).map_err(|(key, message)| ScenarioError {
        file: file.to_string(),
        line: 0,
        key,
        message,
    })?;
    Ok(scenario)
}

/// Parses a scenario embedded as JSON (a trace header), and validates it.
pub fn parse_json(value: &serde_json::Value, file: &str) -> Result<Scenario, ScenarioError> {
    let scenario: Scenario = serde_json::from_value(value.clone()).map_err(|e| ScenarioError {
        file: file.to_string(),
        line: 1,
        key: "scenario".into(),
        message: e.to_string(),
    })?;
    super::validate(&scenario).map_err(|(key, message)| ScenarioError {
        file: file.to_string(),
        line: 1,
        key: format!("scenario.{key}"),
        message,
    })?;
    Ok(scenario)
}
