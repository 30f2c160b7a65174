//! ringside-sim: a deterministic simulator and debugger for collective communication protocols.
//!
//! - [`proto`]: the real protocol code, sans-IO;
//! - [`engine`]: the discrete-event engine, network model and faults; [`budget`]: the limits
//!   that keep a run bounded;
//! - [`observe`]: what every driver makes of its ranks' protocol events (trace events, result
//!   checks, stop hints); [`verify`]: the reference result of a collective;
//! - [`scenario`]: the scenario format; [`builder`]: a scenario described in code, run and
//!   judged;
//! - [`trace`]: JSON Lines traces and their digests; [`run`]: a scenario run on the engine,
//!   writing a trace; [`replay`]: a trace re-run and compared line by line. Dependencies point
//!   one way: `replay` -> `run` -> `engine` -> `trace`;
//! - [`diagnose`]: wait-for graphs and root causes;
//! - [`cause`]: the root-cause vocabulary, one [`cause::RootCause`] for the diagnosis, the
//!   scenario's `[expect]`, reports and traces;
//! - [`fault`]: the fault kinds, one [`fault::FaultKind`] for the scenario, the engine, traces,
//!   the diagnosis and the checker, and the one rule of what a partition cuts;
//! - [`check`]: properties and proptest strategies;
//! - [`cost`]: the textbook cost of every algorithm, and nccl-tests' bandwidths;
//! - [`driver`]: other drivers of the same protocol code (OS processes over TCP; madsim, with
//!   `--cfg madsim`);
//! - [`sweep`]: every algorithm over a range of sizes, as nccl-tests reports them;
//! - [`fr`]: PyTorch Flight Recorder dumps of a real job: import, diagnosis, export;
//! - [`text`]: text from inputs made safe to show on a terminal; [`input`]: the files a user
//!   names, opened only when they are regular files and read within a size.

//!
//! Cargo features, both on by default: `tcp` builds [`driver`]'s drivers of OS processes
//! (`driver::tcp` for `ringside launch`, `driver::torch` for `ringside torchrun`) and their
//! dependencies (tokio, nix, hmac, sha2, getrandom); `zstd` reads and writes zstd-compressed
//! traces. Without them (`default-features = false`) the engine, scenarios, traces, replay,
//! the diagnosis and the checker build alone; a compressed trace is then refused with an
//! error naming the file.

pub mod budget;
pub mod builder;
pub mod cause;
pub mod check;
pub mod cost;
pub mod diagnose;
pub mod driver;
pub mod engine;
pub mod fault;
pub mod fr;
mod hint;
pub mod input;
pub mod observe;
pub mod ranklist;
pub mod replay;
pub mod report;
pub mod run;
pub mod scenario;
pub mod sweep;
pub mod text;
pub mod trace;
pub mod units;
pub mod verify;

/// The protocol code, in its own crate so that the compiler keeps it free of I/O.
pub use ringside_proto as proto;
