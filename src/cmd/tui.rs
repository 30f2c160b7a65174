//! `ringside tui TRACE`: the time-travel debugger.

use crate::Failure;
use clap::Args;
use ringside_tui::Loaded;
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
    view(Loaded::open(trace).map_err(|e| Failure::Input(e.to_string()))?)
}

/// Opens the viewer on a loaded trace.
pub fn view(loaded: Loaded) -> Result<(), Failure> {
    if !std::io::stdout().is_terminal() {
        return Err(Failure::Input(
            "the viewer needs a terminal: standard output is not one".into(),
        ));
    }
    ringside_tui::view(loaded).map_err(|e| Failure::Input(format!("terminal: {e}")))
}
