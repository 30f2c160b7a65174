//! Checking runs: reference results, and (with proptest) the properties of DESIGN §5.

pub mod membership;
pub mod reference;
