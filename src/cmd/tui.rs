//! `ringside tui TRACE`: the time-travel debugger.

use anyhow::{bail, Context};
use clap::Args;
use ringside_tui::Loaded;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct TuiArgs {
    /// A trace written by `ringside run --trace`.
    pub trace: PathBuf,
}

pub fn main(a: TuiArgs) -> anyhow::Result<()> {
    open(&a.trace)
}

/// Reads `trace` and opens the viewer on it.
pub fn open(trace: &Path) -> anyhow::Result<()> {
    view(Loaded::open(trace)?)
}

/// Opens the viewer on a loaded trace.
pub fn view(loaded: Loaded) -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() {
        bail!("the viewer needs a terminal: standard output is not one");
    }
    ringside_tui::view(loaded).context("terminal")
}
