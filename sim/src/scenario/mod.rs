//! Scenarios: the TOML model of DESIGN §2, its units, and validation.
//!
//! `load` and `parse` return either a validated [`Scenario`] or a [`ScenarioError`] that names
//! the file, the line and the key at fault.

mod model;
mod parse;
mod validate;

pub use model::*;
pub use parse::{load, parse, parse_json, ScenarioError};
pub use validate::validate;
