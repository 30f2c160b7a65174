//! Other drivers of the same sans-IO protocol code (DESIGN §1.1).
//!
//! The engine is the primary driver. [`tcp`] runs each rank as an OS process whose inputs are
//! real sockets and real timers: `ringside launch` starts the processes, applies the
//! scenario's process faults with signals and merges their traces.

pub mod tcp;

#[cfg(madsim)]
pub mod madsim;
