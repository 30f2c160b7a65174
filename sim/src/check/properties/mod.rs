//! The registry of properties: every property a run of ringside is held to, with its name, its
//! kind and its check. docs/properties.md states them for users; `ringside check` checks every
//! case against all of them, in the order of [`Property::all`] (cheapest first).
//!
//! Checks live outside the protocol (TigerBeetle's habit): each is a function of a [`Case`] and
//! what its one [`Run`] kept — the folded state, the diagnosis, the report, the trace and the
//! events read back from it — and returns a [`Violation`] naming the property, saying
//! precisely what broke, and carrying the ranks and the collective it is about when there are
//! some. Only determinism runs the case again.

mod collectives;
mod contract;
mod determinism;
mod diagnosis;
mod fault_free;
mod liveness;
mod membership;

use super::{Case, Run};
use crate::cause::RootCause;
use crate::diagnose::Slot;
use crate::scenario::{Outcome, Scenario};
use std::fmt;
use strum::{Display, EnumIter, EnumMessage, EnumString, IntoEnumIterator, IntoStaticStr};

/// A property of a finished run. Its name (`Display`, `FromStr`) is the snake_case of the
/// variant, as `ringside check` prints it and names a failing case's files.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Display,
    EnumIter,
    EnumMessage,
    EnumString,
    IntoStaticStr,
)]
#[strum(serialize_all = "snake_case")]
pub enum Property {
    /// Every call of a registered algorithm keeps the schedule contract on the groups it runs
    /// on: each step's sends and receives agree across the group's ranks.
    #[strum(
        message = "every call of a registered algorithm keeps the schedule contract: each step's sends and receives agree across its group"
    )]
    ScheduleContract,
    /// All ranks that complete collective (group, generation, seq) hold identical results
    /// (reduce-scatter excepted: there each rank holds its own block, which validity checks).
    #[strum(message = "the ranks that complete a collective hold identical results")]
    Agreement,
    /// Every completed result equals the reduction of exactly the inputs of the call's
    /// members, and every call of a rebuilt generation has that generation's members.
    #[strum(
        message = "every completed result is the reduction of exactly the inputs of the call's members"
    )]
    Validity,
    /// Every root cause of a stall names ranks or links that a fault really touched, with a
    /// fault of a kind that can cause it; every blocked rank has a root cause.
    #[strum(
        message = "every root cause names ranks that a fault able to cause it touched; every blocked rank has one"
    )]
    DiagnosisSound,
    /// Every injected fault that still holds a rank or link a blocked rank transitively waits
    /// for (a rank dead for good, a pause not over, a partition not healed) is named among the
    /// root causes.
    #[strum(
        message = "every fault that still holds a rank or link a blocked rank transitively waits for is named among the root causes"
    )]
    DiagnosisComplete,
    /// Elastic runs: no two member lists share a generation, every rank's generations
    /// increase, and every generation's size is within `min_size..=max_size`.
    #[strum(
        message = "an elastic group has one member list per generation, and each rank's generations increase"
    )]
    OneWorldPerGeneration,
    /// Once every fault has healed, the workload finishes in time, an elastic group rebuilds
    /// and registry views converge; otherwise the run completes or stops at a stall that the
    /// diagnosis locates.
    #[strum(
        message = "once every fault heals the run finishes in time (elastic groups rebuild, registry views converge); otherwise it stops at a diagnosed stall"
    )]
    Liveness,
    /// The workload, run on the same code with the same seed but without its faults,
    /// completes with every result right. Never excused by a run: only a scenario whose own
    /// timeouts are too tight for its network, or whose ranks run programs of their own that
    /// the diagnosis finds deviating, is not held to it.
    #[strum(
        message = "without its faults, the workload completes with every result right (never excused by a run)"
    )]
    FaultFreeCompletes,
    /// The same scenario and seed give the same digest, and replaying the trace agrees.
    #[strum(message = "a second run gives the same digest, and replaying the trace reproduces it")]
    Determinism,
}

/// Whether a property says that nothing bad ever happens, or that something good eventually
/// does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Display, IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Kind {
    /// Holds at every moment of every run, under any faults: a violation is a finite prefix.
    Safety,
    /// Demanded once the faults are over (a liveness phase after the safety phase).
    Liveness,
}

impl Property {
    /// Every property, in the order `ringside check` checks them.
    pub fn all() -> impl Iterator<Item = Property> {
        Property::iter()
    }

    pub fn name(self) -> &'static str {
        self.into()
    }

    pub fn kind(self) -> Kind {
        match self {
            Property::Liveness => Kind::Liveness,
            Property::ScheduleContract
            | Property::Agreement
            | Property::Validity
            | Property::DiagnosisSound
            | Property::DiagnosisComplete
            | Property::OneWorldPerGeneration
            | Property::Determinism => Kind::Safety,
            Property::FaultFreeCompletes => Kind::Liveness,
        }
    }

    /// What the property demands, in one line (`ringside check --help` lists them).
    pub fn statement(self) -> &'static str {
        self.get_message().unwrap_or_default()
    }

    /// Checks the property on `case`, whose run is `run`.
    pub fn check(self, case: &Case, run: &Run) -> Result<(), Violation> {
        match self {
            Property::ScheduleContract => contract::schedule_contract(case, run),
            Property::Agreement => collectives::agreement(case, run),
            Property::Validity => collectives::validity(case, run),
            Property::DiagnosisSound => diagnosis::diagnosis_sound(case, run),
            Property::DiagnosisComplete => diagnosis::diagnosis_complete(case, run),
            Property::OneWorldPerGeneration => membership::one_world_per_generation(case, run),
            Property::Liveness => liveness::liveness(case, run),
            Property::FaultFreeCompletes => fault_free::fault_free_completes(case, run),
            Property::Determinism => determinism::determinism(case, run),
        }
    }
}

/// A property of the program's own, checked beside the built-in ones: a [`Swarm`] checks
/// every case against its
/// [`user_properties`](crate::check::swarm::Swarm::user_properties) after the built-in
/// properties, shrinks a case that breaks one while it still breaks it, and writes it as
/// `<name>-<case seed>.toml` with its trace, as it does for a built-in property.
///
/// [`Swarm`]: crate::check::swarm::Swarm
pub trait UserProperty: Send + Sync {
    /// The property's name: lowercase letters, digits and `_`, neither a built-in property's
    /// nor `no_panic` or `generator` (a swarm refuses a case otherwise, naming the property).
    fn name(&self) -> &'static str;
    /// What the property demands, in one line.
    fn statement(&self) -> &'static str;
    /// Whether it says that nothing bad ever happens (the default) or that something good
    /// eventually does; reports say which.
    fn kind(&self) -> Kind {
        Kind::Safety
    }
    /// Checks the property on `case`, whose one run is `run`: what broke, precisely, when it
    /// does not hold.
    fn check(&self, case: &Case, run: &Run) -> Result<(), String>;
}

impl fmt::Debug for dyn UserProperty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UserProperty({})", self.name())
    }
}

/// The name under which a panic in a run is reported.
pub const NO_PANIC: &str = "no_panic";

/// The name under which a case the strategies could not generate, or generated invalid, is
/// reported.
pub const GENERATOR: &str = "generator";

/// Why `name` cannot name a user property, if it cannot.
pub(crate) fn bad_user_name(name: &str) -> Option<String> {
    let word = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !word {
        return Some(format!(
            "the user property `{name}` is not named with lowercase letters, digits and `_`"
        ));
    }
    let taken = Property::all().any(|p| p.name() == name) || [NO_PANIC, GENERATOR].contains(&name);
    taken.then(|| format!("the user property `{name}` takes the name of a built-in one"))
}

/// A broken property: which one, what broke, and whom it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub property: Property,
    /// What broke, precisely (one line, or a few for a divergence).
    pub message: String,
    /// The ranks at fault or in question, when the violation names some.
    pub ranks: Vec<u32>,
    /// The collective in question, when there is one.
    pub op: Option<Slot>,
}

impl Violation {
    pub fn new(property: Property, message: impl Into<String>) -> Violation {
        Violation {
            property,
            message: message.into(),
            ranks: Vec::new(),
            op: None,
        }
    }

    /// The same violation about `ranks`.
    pub fn ranks(mut self, ranks: impl IntoIterator<Item = u32>) -> Violation {
        self.ranks = ranks.into_iter().collect();
        self
    }

    /// The same violation about the collective `op`.
    pub fn op(mut self, op: Slot) -> Violation {
        self.op = Some(op);
        self
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.property, self.message)
    }
}

impl std::error::Error for Violation {}

/// How the case's workload ends by itself: run on the real code with the case's seed and none
/// of its faults. Its outcome, and its root causes (the workload's own bugs).
pub(crate) fn workload_alone(case: &Case) -> (Outcome, Vec<RootCause>) {
    let scenario = Scenario {
        faults: Vec::new(),
        ..case.scenario.clone()
    };
    let opts = crate::run::RunOptions::seeded(case.seed);
    match crate::run::run_to(&scenario, &opts, std::io::sink()) {
        Ok(out) => (out.result.outcome, out.diagnosis.root_causes()),
        Err(_) => (Outcome::Completed, Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_keep_the_order_check_prints() {
        let names: Vec<&str> = Property::all().map(Property::name).collect();
        assert_eq!(
            names,
            [
                "schedule_contract",
                "agreement",
                "validity",
                "diagnosis_sound",
                "diagnosis_complete",
                "one_world_per_generation",
                "liveness",
                "fault_free_completes",
                "determinism"
            ]
        );
        for p in Property::all() {
            assert_eq!(p.name().parse::<Property>(), Ok(p));
            assert_eq!(p.to_string(), p.name());
        }
        assert!("no_such_property".parse::<Property>().is_err());
        assert!(Property::all().all(|p| !p.statement().is_empty()));
        assert_eq!(Property::Liveness.kind(), Kind::Liveness);
        assert_eq!(Kind::Safety.to_string(), "safety");
    }
}
