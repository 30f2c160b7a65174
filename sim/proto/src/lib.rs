//! The real protocol code of a process group, sans-IO.
//!
//! Every protocol here — the collective algorithms, the process group with its watchdog and
//! flight recorder, elastic membership (failure detection, rendezvous, generations), the
//! `:pg`-style registry, the workload that drives them — is a deterministic state machine in the style
//! of quinn-proto and stateright actors. It is handed `(now, input)` (a message from a rank, a
//! timer firing, the end of a compute phase) and pushes what it wants done into an [`Outbox`]:
//! send a message, set or cancel a timer, compute for a while, emit an event.
//!
//! Contract, kept true by `clippy.toml` and by review:
//! - no clock is read: time only arrives as `now`;
//! - no socket, thread or file is touched: the driver (the engine, a TCP driver, madsim) moves bytes;
//! - no global RNG: randomness arrives as seeded values in the configuration;
//! - no iteration over hash maps: state lives in vectors and `BTreeMap`s, so every output
//!   sequence is a pure function of the inputs.
//!
//! Nothing in this module imports the engine, traces, diagnosis or checks. [`standalone`] runs
//! these state machines (or a protocol of one's own, through its [`standalone::Node`] trait)
//! against each other on an in-memory network, without any engine: how the protocols' own
//! tests drive them, and how a library user tries a state machine before running it under
//! faults.

pub mod collective;
pub mod cost;
pub mod data;
pub mod elastic;
pub mod event;
pub mod group;
pub mod mesh;
pub mod msg;
pub mod mutation;
pub mod node;
pub mod process;
pub mod registry;
pub mod standalone;
pub mod time;
pub mod types;
pub mod vocab;
pub mod wait;
pub mod workload;

pub use data::Buffer;
pub use event::{Outbox, Output, ProtoEvent, StepEvent, WaitList};
pub use msg::{CollMsg, Fingerprint, Msg, P2pBody, P2pMsg, P2pSig};
pub use process::{
    AppCall, AppDone, AppGroup, AppOutcome, Input, ProcConfig, RankProcess, RankStatus,
};
pub use types::{Generation, GroupId, Rank, SendToken, SeqNo, TimerKey};
pub use wait::WaitState;
