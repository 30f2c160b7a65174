//! `ringside replay TRACE`: re-run the embedded scenario and seed, compare event by event.

use super::mutation_names;
use crate::Failure;
use clap::Args;
use ringside_sim::proto::mutation::Mutation;
use ringside_sim::replay::{replay_reader, ReplayOutcome};
use ringside_sim::trace::TraceReader;
use std::path::PathBuf;

#[derive(Args)]
pub struct ReplayArgs {
    /// A trace written by `ringside run --trace` (or `ringside check`, or `ringside torchrun`,
    /// whose program runs again).
    pub trace: PathBuf,
    /// Re-run the code with this bug planted, as `ringside check --mutation` ran it (any
    /// number of them).
    #[arg(long = "mutation", value_name = "NAME", value_parser = mutation_names())]
    pub mutations: Vec<Mutation>,
    #[command(flatten)]
    pub memory: super::MemoryLimit,
}

/// Exit 0 when the re-run is identical (up to where a wall-clock budget ended the recorded
/// run); 1 and the first diverging line when it is not; 2 when
/// the trace is malformed or incomplete (the line is named).
pub fn main(a: ReplayArgs) -> anyhow::Result<()> {
    let mutations = a.mutations.iter().copied().collect();
    let reader = TraceReader::open(&a.trace)?;
    // the header's scenario is re-run: a tiny trace may claim a world no machine can hold
    a.memory.admit(
        &reader.header.scenario,
        &format_args!(
            "{}:1: the embedded scenario is not re-run",
            a.trace.display()
        ),
    )?;
    // the trace of a real program replays by running the program again
    let program = reader.header.program.clone();
    let out = match &program {
        Some(_) => {
            let flag = super::interrupt_flag();
            ringside_sim::driver::torch::replay(reader, mutations, Some(&flag))?
        }
        None => replay_reader(reader, mutations)?,
    };
    if let Some(p) = &program {
        eprintln!(
            "ran `{}` again",
            ringside_sim::text::safe(&p.argv.join(" "))
        );
    }
    match out {
        ReplayOutcome::Identical { events, digest } => {
            println!(
                "{}: identical: {events} events replayed, digest {digest}",
                a.trace.display()
            );
            Ok(())
        }
        ReplayOutcome::WallClockCut { events, line } => {
            println!(
                "{}: identical as far as it goes: {events} events replayed; the recorded run was \
                 ended by its wall-clock budget (--max-wall), whose diagnosis at line {line} \
                 depended on the machine and is not re-run",
                a.trace.display()
            );
            Ok(())
        }
        ReplayOutcome::Diverged {
            line,
            expected,
            actual,
        } => Err(Failure::Check(format!(
            "{}: diverged at line {line}\n  expected: {expected}\n  actual:   {actual}",
            a.trace.display()
        ))
        .into()),
    }
}
