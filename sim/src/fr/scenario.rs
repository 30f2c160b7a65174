//! A scenario that reproduces an imported job in the simulator.

use super::analyze::Analysis;
use super::model::Dump;

/// The scenario as TOML, or why the job cannot be written as one.
pub fn write(_dumps: &[Dump], _a: &Analysis) -> Result<String, String> {
    Err("not written yet".into())
}
