//! Checking runs: reference results, and (with proptest) the properties of DESIGN §5.
//!
//! Checkers live outside the protocol: each property is a plain function of a scenario and
//! what a run produced, returning `Err(why)` when it breaks, so a deliberately broken variant
//! (of the protocol, the engine or the diagnosis) can be plugged in to prove the property can
//! fail.

pub mod properties;
pub mod reference;
pub mod strategies;
