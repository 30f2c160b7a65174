//! `ringside tui TRACE`: the time-travel debugger.

use crate::Failure;
use clap::Args;
use ringside_sim::trace::{read_trace, Trace};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct TuiArgs {
    /// A trace written by `ringside run --trace`.
    pub trace: PathBuf,
}

pub fn main(a: TuiArgs) -> Result<(), Failure> {
    open(&a.trace)
}

/// Reads `trace` and opens the viewer on it.
pub fn open(trace: &Path) -> Result<(), Failure> {
    view(read_trace(trace).map_err(|e| Failure::Input(e.to_string()))?)
}

/// Opens the viewer on a trace in memory.
pub fn view(trace: Trace) -> Result<(), Failure> {
    if !std::io::stdout().is_terminal() {
        return Err(Failure::Input(
            "the viewer needs a terminal: standard output is not one".into(),
        ));
    }
    ringside_tui::view(trace).map_err(|e| Failure::Input(format!("terminal: {e}")))
}
