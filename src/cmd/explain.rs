//! `ringside explain TRACE [--at TIME] [--json | --dot]`

use anyhow::Context;
use clap::Args;
use ringside_sim::diagnose::{diagnose, to_dot, Diagnosis, Fold};
use ringside_sim::report::{explain, explain_stragglers, text, BlockedReport, OpReport};
use ringside_sim::scenario::Outcome;
use ringside_sim::text::safe;
use ringside_sim::trace::TraceReader;
use ringside_sim::units::{fmt_ms, Duration, Nanos};
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
    #[command(flatten)]
    pub exit: super::ExitArgs,
}

pub fn main(a: ExplainArgs) -> anyhow::Result<()> {
    let at = match &a.at {
        Some(s) => Some(Duration::parse(s).context("--at")?.0),
        None => None,
    };
    let mut reader = TraceReader::open(&a.trace)?;
    let mut fold = Fold::of_header(&reader.header);
    let mut to_the_end = true;
    while let Some((t, ev)) = reader.next_event()? {
        if at.is_some_and(|at| t > at) {
            to_the_end = false;
            break;
        }
        fold.apply(t, &ev);
    }
    // the rest is read too, and checked as any trace is (time order, the footer's counts and
    // digest, a torn end): a diagnosis at --at is of a trace known to be whole, or says that
    // it is not
    while reader.next_raw()?.is_some() {}
    if to_the_end {
        // how the run ended tells a group that kept rebuilding from one still recovering
        fold.outcome = reader.footer().map(|f| f.outcome);
    }
    if let Some(at) = at {
        fold.t = at;
    }
    let d = diagnose(&fold);
    // calls that completed with a wrong result: a run can finish and still be wrong
    let wrong: Vec<OpReport> = fold
        .ops
        .values()
        .map(OpReport::from_view)
        .filter(|o| !o.correct)
        .collect();
    // a trace without its footer says nothing of what came after its last line
    let incomplete = reader.incomplete().map(|note| match at {
        Some(_) if !to_the_end => format!(
            "{note}; the state at {} is read from it, but how the run ended is unknown",
            fmt_ms(fold.t)
        ),
        _ => format!("{note}; this is the state after its last whole line, not how the run ended"),
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
            "wrong_results": wrong,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else if a.dot {
        if let Some(note) = &incomplete {
            eprintln!("note: {note}");
        }
        print!("{}", to_dot(&fold, &d));
    } else {
        println!(
            "{}",
            safe(&verdict(
                &d,
                fold.outcome.filter(|_| at.is_none()),
                fold.t,
                wrong.len()
            ))
        );
        if !wrong.is_empty() {
            println!("wrong results:");
            let rebuilt = fold.ops.values().any(|o| o.generation.0 > 0);
            for o in wrong.iter().take(MAX_WRONG_LINES) {
                println!("  {}", o.line(rebuilt));
            }
            if wrong.len() > MAX_WRONG_LINES {
                println!(
                    "  ... and {} more (all in --json)",
                    wrong.len() - MAX_WRONG_LINES
                );
            }
        }
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
    let stuck = !d.causes.is_empty() || !d.blocked.is_empty();
    // at a time before the end, a blocked rank is as good as a stall to a script
    let outcome = match fold.outcome.filter(|_| at.is_none()) {
        None if stuck => Some(Outcome::Stalled),
        o => o,
    };
    Ok(a.exit.check(outcome)?)
}

/// At most this many calls with a wrong result are listed, one per line; `--json` has all.
const MAX_WRONG_LINES: usize = 20;

/// The first line, the answer: how the run ended (or, at an earlier time, what holds it up
/// then) and the root causes; `wrong` calls completed with a wrong result.
fn verdict(d: &Diagnosis, outcome: Option<Outcome>, t: Nanos, wrong: usize) -> String {
    let stuck = !d.causes.is_empty() || !d.blocked.is_empty();
    let results = match wrong {
        0 => String::new(),
        n => format!(", WRONG results in {}", text::count(n, "call")),
    };
    let culprit = || text::culprit(d, &text::Simulated);
    match outcome {
        Some(Outcome::Stalled) if stuck => format!("STALLED: {}", culprit()),
        Some(Outcome::TimedOut) if stuck => {
            format!("TIMED OUT at {}; where it stood: {}", fmt_ms(t), culprit())
        }
        Some(Outcome::TimedOut) => format!("TIMED OUT at {}", fmt_ms(t)),
        Some(Outcome::Rebuilt) if stuck => {
            format!("REBUILT: completed; left behind: {}", culprit())
        }
        Some(Outcome::Completed | Outcome::Rebuilt) => {
            format!("COMPLETED: no rank is blocked at {}{results}", fmt_ms(t))
        }
        _ if stuck => format!("BLOCKED at {}: {}", fmt_ms(t), culprit()),
        _ => format!(
            "NOT BLOCKED at {}: no rank waits in a call{results}",
            fmt_ms(t)
        ),
    }
}
