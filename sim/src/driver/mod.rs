//! Other drivers of the same sans-IO protocol code: the protocol never reads a clock or a
//! socket, so whatever hands it inputs and carries out its outputs can run it.
//!
//! The engine is the primary driver. [`tcp`] runs each rank as an OS process whose inputs are
//! real sockets and real timers: `ringside launch` starts the processes, applies the
//! scenario's process faults with signals and merges their traces. Every driver makes the same
//! of its ranks' protocol events through one [`Observer`](crate::observe::Observer).

#[cfg(feature = "tcp")]
pub mod tcp;
#[cfg(feature = "tcp")]
pub mod torch;

#[cfg(madsim)]
pub mod madsim;
