//! `ringside export TRACE --perfetto FILE`: Chrome trace-event JSON for Perfetto UI;
//! `ringside export TRACE --fr DIR [--pickle]`: one Flight Recorder dump per rank.

use anyhow::Context;
use clap::Args;
use ringside_sim::trace::perfetto::{export_chrome, ExportError};
use ringside_sim::trace::TraceReader;
use std::path::PathBuf;

#[derive(Args)]
#[command(group(clap::ArgGroup::new("to").required(true).args(["perfetto", "fr"])))]
pub struct ExportArgs {
    /// A trace written by `ringside run --trace`.
    pub trace: PathBuf,
    /// Writes Chrome trace-event JSON (open it in ui.perfetto.dev or chrome://tracing);
    /// `-` writes to standard output.
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
    /// Writes one PyTorch Flight Recorder dump per rank into this directory (JSON; see
    /// --pickle), as a real job's ranks would have written them.
    #[arg(long, value_name = "DIR")]
    pub fr: Option<PathBuf>,
    /// With --fr: pickle dumps named as torch names them (`comm_lib_trace_rank_<R>`).
    #[arg(long, requires = "fr")]
    pub pickle: bool,
}

pub fn main(a: ExportArgs) -> anyhow::Result<()> {
    if let Some(dir) = &a.fr {
        let out = ringside_sim::fr::export::export(&a.trace, dir, a.pickle)
            .map_err(anyhow::Error::msg)?;
        eprintln!(
            "{}: {} dumps{}",
            dir.display(),
            out.files.len(),
            if out.silent.is_empty() {
                String::new()
            } else {
                format!(
                    " (none from {}: dead or frozen at the end, or without a dump in the imported job)",
                    ringside_sim::diagnose::ranks_phrase(&out.silent)
                )
            }
        );
        if let Some(note) = &out.incomplete {
            eprintln!("note: {note}; {NOTE}");
        }
        return Ok(());
    }
    let Some(perfetto) = a.perfetto else {
        anyhow::bail!("give --perfetto FILE or --fr DIR");
    };
    let mut reader = TraceReader::open(&a.trace)?;
    // the message of an I/O error already names its cause
    let fail = |e: ExportError| anyhow::Error::msg(e.to_string());
    if perfetto.as_os_str() == "-" {
        export_chrome(&mut reader, std::io::stdout().lock()).map_err(fail)?;
        incomplete(&reader);
        return Ok(());
    }
    let out = std::fs::File::create(&perfetto)
        .with_context(|| format!("cannot create {}", perfetto.display()))?;
    let stats = export_chrome(&mut reader, out).map_err(fail)?;
    eprintln!(
        "{}: {} trace events, {} message flows",
        perfetto.display(),
        stats.trace_events,
        stats.flows
    );
    incomplete(&reader);
    Ok(())
}

/// What an export of a trace without its footer holds.
const NOTE: &str = "the export ends at its last whole line, not where the run ended";

/// Says on standard error when the trace read has no footer.
fn incomplete<R: std::io::BufRead>(reader: &TraceReader<R>) {
    if let Some(note) = reader.incomplete() {
        eprintln!("note: {note}; {NOTE}");
    }
}
