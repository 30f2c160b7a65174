//! Property testing: proptest strategies for scenarios and fault schedules, the named
//! properties of DESIGN §5, and the swarm behind `ringside check`.
//!
//! - [`strategy`]: worlds, networks, workloads and fault schedules of every kind, as proptest
//!   strategies whose values always pass validation and the engine's support gate;
//! - [`props`]: agreement, validity, liveness and determinism as [`Property`] values — a name
//!   and a plain function of a [`Case`] and its [`RunOutput`];
//! - [`bound`]: the cost-model bounds the liveness property uses;
//! - [`shrink`]: structural shrinking of a failing scenario, after proptest's;
//! - [`swarm`]: many seeded cases, sharded, under a wall-clock budget; a failure is shrunk to
//!   a minimal scenario and written with its trace, ready to replay;
//! - [`properties`]: diagnosis soundness, with pluggable (deliberately broken) diagnosers;
//! - [`strategies`]: scenarios as TOML text with application bugs on a minority of ranks, for
//!   the diagnosis property.
//!
//! Other crates use the same pieces in their own tests. A property test of the protocol under
//! random fault schedules:
//!
//! ```
//! use proptest::prelude::*;
//! use ringside_sim::check::{props, strategy, Gen};
//!
//! proptest! {
//!     #![proptest_config(ProptestConfig { cases: 4, failure_persistence: None, ..ProptestConfig::default() })]
//!
//!     // in a test crate, put `#[test]` on this function
//!     fn collectives_survive_faults(case in strategy::cases(&Gen::ranks(4))) {
//!         let out = case.run();
//!         for p in props::registry() {
//!             if let Err(why) = (p.check)(&case, &out) {
//!                 prop_assert!(false, "{} failed: {}\n{:#?}", p.name, why, case.scenario);
//!             }
//!         }
//!     }
//! }
//! # collectives_survive_faults();
//! ```
//!
//! Deliberately broken variants ([`Mutations`]: planted bugs in the protocol code, or a
//! nondeterministic engine) exist so that tests can prove each property fails when it should;
//! a [`Case`] carries the ones it runs.

pub mod bound;
pub mod membership;
pub mod properties;
pub mod props;
pub mod shrink;
pub mod strategies;
pub mod strategy;
pub mod swarm;

pub use crate::proto::mutation::{Mutation, Mutations};
pub use props::Property;
pub use strategy::Gen;

use crate::run::{run, RunOptions, RunOutput};
use crate::scenario::Scenario;

/// One input of a property: a scenario, the seed it runs with, and the code it runs on.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub scenario: Scenario,
    pub seed: u64,
    /// The real code unless a test plants a bug.
    #[doc(hidden)]
    pub mutations: Mutations,
}

/// How big a case is, as shrinking measures it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub ranks: u32,
    pub iterations: u32,
    pub ops: usize,
    pub faults: usize,
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |n: usize| if n == 1 { "" } else { "s" };
        write!(
            f,
            "{} rank{}, {} iteration{}, {} op{}, {} fault{}",
            self.ranks,
            s(self.ranks as usize),
            self.iterations,
            s(self.iterations as usize),
            self.ops,
            s(self.ops),
            self.faults,
            s(self.faults)
        )
    }
}

impl Case {
    /// The case of `scenario` with its own seed, on the real code.
    pub fn new(scenario: Scenario) -> Case {
        Case {
            seed: scenario.seed,
            scenario,
            mutations: Mutations::NONE,
        }
    }

    /// The same case with `mutations` planted.
    #[doc(hidden)]
    pub fn with_mutations(mut self, mutations: impl Into<Mutations>) -> Case {
        self.mutations = mutations.into();
        self
    }

    /// The options of a run of the case: its seed and its mutations.
    pub fn options(&self) -> RunOptions<'static> {
        RunOptions {
            mutations: self.mutations,
            ..RunOptions::seeded(self.seed)
        }
    }

    /// Runs the case (no trace file) and returns what the properties look at.
    pub fn run(&self) -> RunOutput {
        run(&self.scenario, &self.options()).expect("a run that writes no file cannot fail")
    }

    pub fn size(&self) -> Size {
        Size {
            ranks: self.scenario.world.size,
            iterations: self.scenario.workload.iterations,
            ops: self.scenario.workload.ops.len(),
            faults: self.scenario.faults.len(),
        }
    }
}
