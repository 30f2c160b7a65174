//! `ringside replay TRACE`: re-run the embedded scenario and seed, compare event by event.

use crate::Failure;
use clap::Args;
use ringside_sim::engine::Variant;
use ringside_sim::proto::mutation::Mutation;
use ringside_sim::trace::{replay_with, ReplayOutcome};
use std::path::PathBuf;

#[derive(Args)]
pub struct ReplayArgs {
    /// A trace written by `ringside run --trace` (or `ringside check`).
    pub trace: PathBuf,
    /// Re-run a deliberately broken variant of the protocol code (as `check --mutation`).
    #[arg(long, hide = true)]
    pub mutation: Option<Mutation>,
    /// Re-run with nondeterministic tie-breaking (as `check --nondeterministic-ties`).
    #[arg(long, hide = true)]
    pub nondeterministic_ties: bool,
}

/// Exit 0 when the re-run is identical; 1 and the first diverging line when it is not; 2 when
/// the trace is malformed or incomplete (the line is named).
pub fn main(a: ReplayArgs) -> anyhow::Result<()> {
    let variant = Variant {
        mutation: a.mutation,
        nondeterministic_ties: a.nondeterministic_ties,
    };
    match replay_with(&a.trace, variant)? {
        ReplayOutcome::Identical { events, digest } => {
            println!(
                "{}: identical: {events} events replayed, digest {digest}",
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
