//! Other drivers of the same sans-IO protocol code (DESIGN §1.1).

#[cfg(madsim)]
pub mod madsim;
