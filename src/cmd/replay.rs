//! `ringside replay TRACE`: re-run the embedded scenario and seed, compare event by event.

use crate::Failure;
use clap::Args;
use ringside_sim::trace::{replay, ReplayOutcome};
use std::path::PathBuf;

#[derive(Args)]
pub struct ReplayArgs {
    /// A trace written by `ringside run --trace`.
    pub trace: PathBuf,
}

pub fn main(a: ReplayArgs) -> Result<(), Failure> {
    match replay(&a.trace).map_err(|e| Failure::Input(e.to_string()))? {
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
        ))),
    }
}
