//! `ringside`: simulate, diagnose, replay and view collective communication under faults.

use std::process::ExitCode;

/// mimalloc: the 4,096-rank ring took 6.0 s through `ringside run` with the system allocator
/// and 4.1 s with mimalloc, before the engine's cache hints (README, "Speed", for the figures
/// since). mimalloc keeps allocations of one size together in pages of their own, so the state
/// of thousands of ranks, touched once per round of a collective, most likely spans fewer
/// pages; the run's instructions per message are the same either way.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    ringside::main()
}
