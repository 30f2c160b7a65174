//! Traces (docs/trace-format.md): JSON Lines, a header with the scenario and seed, one event per line in
//! engine order, a footer with the outcome, the event count and a digest chained over every
//! event line.

mod encode;
mod event;
mod fast;
pub mod from_proto;
pub mod perfetto;
mod reader;
mod replay;
mod writer;

pub use encode::encode_line;
pub use event::{timer_fields, Event, FaultPhase};
pub use reader::{
    parse_event_line, read_trace, Footer, Header, Trace, TraceError, TraceReader, UnparsedEvent,
};
pub use replay::{replay, replay_reader, ReplayOutcome};
pub use writer::{Digest, NullRecorder, Recorder, TraceWriter, VecRecorder};

/// The `format` field of every trace header.
pub const FORMAT: &str = "ringside-trace";
/// The trace format version this build writes and reads.
pub const VERSION: u32 = 1;
