//! `ringside tui TRACE`: the time-travel debugger.

use anyhow::Context;
use clap::Args;
use ringside_tui::{Loaded, Options};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct TuiArgs {
    /// A trace written by `ringside run --trace`, `ringside launch` or `ringside import`.
    pub trace: PathBuf,
    #[command(flatten)]
    pub viewer: ViewerArgs,
}

/// How the viewer starts (`tui`, and `run --tui`).
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct ViewerArgs {
    /// Leaves the mouse to the terminal (selecting and scrolling text); `m` in the viewer
    /// turns mouse reporting on and off.
    #[arg(long)]
    pub no_mouse: bool,
    /// Draws in colours for a light background (`t` in the viewer switches).
    #[arg(long)]
    pub light: bool,
}

impl ViewerArgs {
    pub fn options(self) -> Options {
        Options {
            mouse: !self.no_mouse,
            light: self.light,
        }
    }
}

pub fn main(a: TuiArgs) -> anyhow::Result<()> {
    // a bad trace is said to be one first, whatever the output
    let loaded = Loaded::open(&a.trace)?;
    needs_terminal()?;
    view(loaded, a.viewer.options())
}

/// Refuses to go on when standard output is not a terminal.
pub fn needs_terminal() -> anyhow::Result<()> {
    if std::io::stdout().is_terminal() {
        Ok(())
    } else {
        Err(anyhow::anyhow!(
            "the viewer needs a terminal: standard output is not one"
        ))
    }
}

/// Reads `trace` and opens the viewer on it.
pub fn open(trace: &Path, opts: Options) -> anyhow::Result<()> {
    let loaded = Loaded::open(trace)?;
    needs_terminal()?;
    view(loaded, opts)
}

/// Opens the viewer on a loaded trace. A trace without its footer is said to be incomplete on
/// standard error, where it stays once the viewer has closed.
pub fn view(loaded: Loaded, opts: Options) -> anyhow::Result<()> {
    let note = loaded.trace.incomplete.clone().map(|n| {
        format!("note: {n}; the viewer shows it up to its last whole line, not how the run ended")
    });
    let shown = ringside_tui::view(loaded, opts).context("terminal");
    if let Some(note) = note {
        eprintln!("{}", ringside_sim::text::safe(&note));
    }
    shown
}
