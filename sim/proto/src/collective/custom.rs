//! Schedules registered under algorithm names of their own: how the author of a collective
//! library brings an algorithm to ringside without changing ringside.
//!
//! A [`ScheduleFactory`] names the algorithm, lists the ops it implements, builds one rank's
//! [`Schedule`] from the call's [`GroupCtx`], and may give the algorithm's cost formula.
//! [`register`] turns it into an [`Algorithm`] like the stock ones: a scenario names it
//! (`algorithm = "bidi_ring"`), the engine, the checker and replay run it, traces and reports
//! spell its name, and [`crate::cost::textbook`]-style checks use its formula.
//!
//! The schedule is held to the contract of the [`Collective`](super::Collective) executor
//! (see [`plans_agree`](super::plans_agree)); its working buffer is laid out as for the stock
//! algorithms of its op ([`prepare`](super::prepare)).
//!
//! Registration is process-wide and permanent: a program registers its algorithms when it
//! starts, before it parses a scenario or reads a trace that names them. A name is registered
//! once; a second registration of it is refused with the algorithm it already is
//! ([`RegisterError::Taken`]), so that tests of one binary may each register and use whichever
//! registration came first. The table only grows, and it never reaches a trace: a trace spells
//! the name, which is why a program that replays a trace must register the same names.

use super::{Ctx, Schedule};
use crate::cost::{Cost, Net};
use crate::vocab::{Algorithm, OpKind};
use std::fmt;
use std::sync::{PoisonError, RwLock};

/// How many algorithms one program may register.
pub const MAX_REGISTERED: usize = 256;

/// What a schedule is built from: the op of the call and this rank's place in its group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupCtx {
    pub op: OpKind,
    /// This rank's index in the group (`me`), the group's size (`p`), the root's index.
    pub ctx: Ctx,
    /// How many consecutive members of the group share a host (1: each on its own).
    pub per_host: u32,
}

type Build = dyn Fn(&GroupCtx) -> Box<dyn Schedule> + Send + Sync;
type Formula = dyn Fn(OpKind, u32, u64, Net) -> Option<Cost> + Send + Sync;

/// An algorithm of one's own: its name, the ops it implements, how a rank's schedule is built,
/// and optionally its cost.
pub struct ScheduleFactory {
    name: &'static str,
    ops: Vec<OpKind>,
    build: Box<Build>,
    cost: Option<Box<Formula>>,
}

impl ScheduleFactory {
    /// The algorithm `name` for `ops`, each rank's schedule built by `build`.
    pub fn new(
        name: &'static str,
        ops: &[OpKind],
        build: impl Fn(&GroupCtx) -> Box<dyn Schedule> + Send + Sync + 'static,
    ) -> ScheduleFactory {
        ScheduleFactory {
            name,
            ops: ops.to_vec(),
            build: Box::new(build),
            cost: None,
        }
    }

    /// The same algorithm with its cost formula: the time of one call of `op` on `p` ranks
    /// for `n` bytes over `net`, every rank calling at once, without faults or contention
    /// (`None` where it has none).
    pub fn with_cost(
        self,
        formula: impl Fn(OpKind, u32, u64, Net) -> Option<Cost> + Send + Sync + 'static,
    ) -> ScheduleFactory {
        ScheduleFactory {
            cost: Some(Box::new(formula)),
            ..self
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The ops this algorithm implements.
    pub fn ops(&self) -> &[OpKind] {
        &self.ops
    }

    /// One rank's schedule.
    pub fn build(&self, g: &GroupCtx) -> Box<dyn Schedule> {
        (self.build)(g)
    }

    /// The cost of one call, by the formula it was given.
    pub fn cost(&self, op: OpKind, p: u32, n: u64, net: Net) -> Option<Cost> {
        self.cost.as_ref().and_then(|f| f(op, p, n, net))
    }
}

impl fmt::Debug for ScheduleFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduleFactory")
            .field("name", &self.name)
            .field("ops", &self.ops)
            .field("cost", &self.cost.is_some())
            .finish()
    }
}

/// An algorithm registered by [`register`] (its place in this program's table).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CustomAlgorithm(u8);

impl CustomAlgorithm {
    /// What it was registered with.
    pub fn factory(self) -> &'static ScheduleFactory {
        table()[usize::from(self.0)]
    }

    pub fn name(self) -> &'static str {
        self.factory().name
    }
}

impl fmt::Debug for CustomAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.name())
    }
}

/// Why [`register`] refused a factory.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    #[error(
        "`{0}` is not an algorithm name: use lowercase letters, digits and `_`, starting with a letter"
    )]
    BadName(&'static str),
    #[error("`{0}` is already an algorithm")]
    Taken(Algorithm),
    #[error("`{0}` implements no collective op (send and recv are not schedules)")]
    NoOps(&'static str),
    #[error("no more than {MAX_REGISTERED} algorithms can be registered")]
    Full,
}

/// Whether `name` can be registered, as an algorithm or a node: lowercase letters, digits and
/// `_`, starting with a letter (a name a scenario writes as it is).
pub(crate) fn registrable(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

static TABLE: RwLock<Vec<&'static ScheduleFactory>> = RwLock::new(Vec::new());

fn table() -> std::sync::RwLockReadGuard<'static, Vec<&'static ScheduleFactory>> {
    TABLE.read().unwrap_or_else(PoisonError::into_inner)
}

/// Registers `factory` under its name, for the rest of the program (see the module doc).
pub fn register(factory: ScheduleFactory) -> Result<Algorithm, RegisterError> {
    let name = factory.name;
    if !registrable(name) {
        return Err(RegisterError::BadName(name));
    }
    if factory.ops.is_empty() || factory.ops.iter().any(|op| op.point_to_point()) {
        return Err(RegisterError::NoOps(name));
    }
    let mut table = TABLE.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(a) = Algorithm::STOCK.iter().find(|a| a.name() == name) {
        return Err(RegisterError::Taken(*a));
    }
    if let Some(i) = table.iter().position(|f| f.name == name) {
        return Err(RegisterError::Taken(Algorithm::Custom(CustomAlgorithm(
            i as u8,
        ))));
    }
    if table.len() >= MAX_REGISTERED {
        return Err(RegisterError::Full);
    }
    table.push(Box::leak(Box::new(factory)));
    Ok(Algorithm::Custom(CustomAlgorithm((table.len() - 1) as u8)))
}

/// The algorithm registered under `name`, if any.
pub fn find(name: &str) -> Option<Algorithm> {
    let table = table();
    let i = table.iter().position(|f| f.name == name)?;
    Some(Algorithm::Custom(CustomAlgorithm(i as u8)))
}

/// Every registered algorithm, in the order registered.
pub fn registered() -> Vec<Algorithm> {
    (0..table().len())
        .map(|i| Algorithm::Custom(CustomAlgorithm(i as u8)))
        .collect()
}
