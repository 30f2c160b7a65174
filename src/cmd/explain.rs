//! `ringside explain TRACE [--at TIME] [--json | --dot]`

use anyhow::Context;
use clap::Args;
use ringside_sim::diagnose::{diagnose, to_dot, Fold};
use ringside_sim::report::{explain, explain_stragglers, BlockedReport};
use ringside_sim::text::safe;
use ringside_sim::trace::TraceReader;
use ringside_sim::units::{fmt_ms, Duration};
use std::path::PathBuf;

#[derive(Args)]
pub struct ExplainArgs {
    /// A trace written by `ringside run --trace` (or `ringside launch`).
    pub trace: PathBuf,
    /// Diagnose the state at this virtual time (e.g. "25ms") instead of the end of the trace.
    #[arg(long, allow_hyphen_values = true)]
    pub at: Option<String>,
    /// Prints one JSON object.
    #[arg(long, conflicts_with = "dot")]
    pub json: bool,
    /// Prints the wait-for graph in Graphviz DOT.
    #[arg(long)]
    pub dot: bool,
}

pub fn main(a: ExplainArgs) -> anyhow::Result<()> {
    let at = match &a.at {
        Some(s) => Some(Duration::parse(s).context("--at")?.0),
        None => None,
    };
    let mut reader = TraceReader::open(&a.trace)?;
    let mut fold = Fold::new(&reader.header.scenario);
    let mut to_the_end = true;
    while let Some((t, ev)) = reader.next_event()? {
        if at.is_some_and(|at| t > at) {
            to_the_end = false;
            break;
        }
        fold.apply(t, &ev);
    }
    if to_the_end {
        // how the run ended tells a group that kept rebuilding from one still recovering
        fold.outcome = reader.footer().map(|f| f.outcome);
    }
    if let Some(at) = at {
        fold.t = at;
    }
    let d = diagnose(&fold);
    // a trace without its footer says nothing of what came after its last line
    let incomplete = reader.incomplete().filter(|_| to_the_end).map(|note| {
        format!("{note}; this is the state after its last whole line, not how the run ended")
    });
    if a.json {
        let v = serde_json::json!({
            "trace": a.trace.display().to_string(),
            "scenario": reader.header.scenario.name,
            "seed": reader.header.seed,
            "at_ns": fold.t,
            "complete": incomplete.is_none(),
            "trace_level": reader.header.level,
            "blocked": d.blocked.iter().map(BlockedReport::from_blocked).collect::<Vec<_>>(),
            "root_causes": d.root_causes(),
            "causes": d.causes,
            "explanation": explain(&d),
            "stragglers": d.stragglers,
            "in_progress": d.in_progress,
            "edges": d.edges().collect::<Vec<_>>(),
            "waits": d.waits,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else if a.dot {
        if let Some(note) = &incomplete {
            eprintln!("note: {note}");
        }
        print!("{}", to_dot(&fold, &d));
    } else {
        let lines = explain(&d);
        if lines.is_empty() {
            print!("at {}: no rank is blocked in a collective", fmt_ms(fold.t));
            if d.in_progress.is_empty() {
                println!();
            } else {
                println!(
                    "; {} in progress",
                    ringside_sim::diagnose::ranks_phrase(&d.in_progress)
                );
            }
        } else {
            println!("at {}:", fmt_ms(fold.t));
            for l in lines {
                println!("  {}", safe(&l));
            }
            if !d.in_progress.is_empty() {
                println!(
                    "  {} in progress",
                    ringside_sim::diagnose::ranks_phrase(&d.in_progress)
                );
            }
        }
        let st = explain_stragglers(&d);
        if !st.is_empty() {
            println!("stragglers (slow, not stalled):");
            for l in st {
                println!("  {}", safe(&l));
            }
        }
        if let Some(note) = &incomplete {
            println!("note: {note}");
        }
    }
    Ok(())
}
