//! `ringside export TRACE --perfetto FILE`: Chrome trace-event JSON for Perfetto UI.

use anyhow::Context;
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

pub fn main(a: ExportArgs) -> anyhow::Result<()> {
    let mut reader = TraceReader::open(&a.trace)?;
    // the message of an I/O error already names its cause
    let fail = |e: ExportError| anyhow::Error::msg(e.to_string());
    if a.perfetto.as_os_str() == "-" {
        export_chrome(&mut reader, std::io::stdout().lock()).map_err(fail)?;
        return Ok(());
    }
    let out = std::fs::File::create(&a.perfetto)
        .with_context(|| format!("cannot create {}", a.perfetto.display()))?;
    let stats = export_chrome(&mut reader, out).map_err(fail)?;
    eprintln!(
        "{}: {} trace events, {} message flows",
        a.perfetto.display(),
        stats.trace_events,
        stats.flows
    );
    Ok(())
}
