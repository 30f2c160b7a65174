//! Scenarios: the TOML model of scenarios/README.md, its units, and validation.
//!
//! `load` and `parse` return either a validated [`Scenario`] or a [`ScenarioError`] that names
//! the file, the line and the key at fault. `load_with` and `parse_with` also reject what the
//! engine does not implement yet, as described by a [`Support`].

#[cfg(test)]
mod examples;
mod fault_de;
pub mod groups;
mod locate;
mod model;
mod parse;
mod validate;

pub use crate::cause::{RootCause, RootCauseError};
pub use crate::fault::{FaultKind, Trigger};
pub use model::*;
pub use parse::{
    key_line, key_line_in, load, load_with, parse, parse_json, parse_with, ScenarioError,
};
pub mod program;
pub mod resolve;
pub use validate::{
    unsupported, validate, Invalid, Support, MAX_ELEMENTS, MAX_ITERATIONS, MAX_MESH_DIMS,
    MAX_WORLD_SIZE,
};
