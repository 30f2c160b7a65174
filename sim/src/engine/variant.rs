//! Deliberately broken variants of a run, for proving that the properties of DESIGN §5 fail
//! when they should. Nothing in a scenario file can switch them on.

use crate::proto::data::mix;
use crate::proto::mutation::Mutation;
use std::sync::atomic::{AtomicU64, Ordering};

/// What to break in a run; the default breaks nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Variant {
    /// A planted bug in the protocol code.
    pub mutation: Option<Mutation>,
    /// Breaks ties between events at the same virtual time by a process-wide counter instead
    /// of by insertion order, so two runs of the same scenario and seed differ.
    pub nondeterministic_ties: bool,
}

impl Variant {
    /// The variant with `mutation` planted.
    pub fn mutated(mutation: Mutation) -> Variant {
        Variant {
            mutation: Some(mutation),
            ..Variant::default()
        }
    }

    /// Whether this is the real code.
    pub fn is_none(&self) -> bool {
        *self == Variant::default()
    }
}

/// A tie-break key that depends on how many keys this process has drawn before: hidden
/// global state of exactly the kind that makes a simulator nondeterministic.
pub(super) fn unstable_key() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    mix(NEXT.fetch_add(1, Ordering::Relaxed))
}
