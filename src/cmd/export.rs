//! `ringside export TRACE --perfetto FILE`: Chrome trace-event JSON for Perfetto UI.

use crate::Failure;
use clap::Args;
use ringside_sim::trace::perfetto::{export_chrome, ExportError};
use ringside_sim::trace::TraceReader;
use std::path::PathBuf;

#[derive(Args)]
pub struct ExportArgs {
    /// A trace written by `ringside run --trace`.
    pub trace: PathBuf,
    /// Writes Chrome trace-event JSON (open it in ui.perfetto.dev or chrome://tracing);
    /// `-` writes to standard output.
    #[arg(long, value_name = "FILE")]
    pub perfetto: PathBuf,
}

pub fn main(a: ExportArgs) -> Result<(), Failure> {
    let mut reader = TraceReader::open(&a.trace).map_err(|e| Failure::Input(e.to_string()))?;
    let fail = |e: ExportError| Failure::Input(e.to_string());
    if a.perfetto.as_os_str() == "-" {
        export_chrome(&mut reader, std::io::stdout().lock()).map_err(fail)?;
        return Ok(());
    }
    let out = std::fs::File::create(&a.perfetto)
        .map_err(|e| Failure::Input(format!("cannot create {}: {e}", a.perfetto.display())))?;
    let stats = export_chrome(&mut reader, out).map_err(fail)?;
    eprintln!(
        "{}: {} trace events, {} message flows",
        a.perfetto.display(),
        stats.trace_events,
        stats.flows
    );
    Ok(())
}
