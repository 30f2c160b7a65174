//! `ringside tui TRACE`: the time-travel debugger.

use anyhow::Context;
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

/// Opens the viewer on a loaded trace. A trace without its footer is said to be incomplete on
/// standard error, where it stays once the viewer has closed.
pub fn view(loaded: Loaded) -> anyhow::Result<()> {
    let note = loaded.trace.incomplete.clone().map(|n| {
        format!("note: {n}; the viewer shows it up to its last whole line, not how the run ended")
    });
    let shown = if !std::io::stdout().is_terminal() {
        Err(anyhow::anyhow!(
            "the viewer needs a terminal: standard output is not one"
        ))
    } else {
        ringside_tui::view(loaded).context("terminal")
    };
    if let Some(note) = note {
        eprintln!("{note}");
    }
    shown
}
