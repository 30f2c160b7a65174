//! Traces (docs/trace-format.md): JSON Lines, a header with the scenario and seed, one event per line in
//! engine order, a footer with the outcome, the event count and a digest chained over every
//! event.
//!
//! The format stands below everything that writes or reads it: the engine and [`crate::run`]
//! write traces, [`crate::replay`], the diagnosis and the exporters read them, and nothing
//! here depends on any of them (only on the scenario model, the fault and root-cause
//! vocabularies and the protocol's events).

mod digest;
mod encode;
mod event;
mod fast;
pub mod from_proto;
pub mod perfetto;
mod reader;
mod words;
mod writer;

pub use digest::Digest;
pub use encode::encode_line;
pub use event::{timer_fields, Event, FaultPhase, RankList, Sent};
pub use reader::{
    parse_event_line, read_trace, Footer, Header, Program, Trace, TraceError, TraceInput,
    TraceReader, UnparsedEvent,
};
pub use writer::{DigestRecorder, NullRecorder, Recorder, TraceWriter, VecRecorder, TICK_EVERY};

/// The `format` field of every trace header.
pub const FORMAT: &str = "ringside-trace";
/// The trace format version this build writes (it reads this one and version 1).
pub const VERSION: u32 = 2;

/// What a trace holds.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    strum::EnumString,
    strum::Display,
    strum::VariantNames,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Level {
    /// Every event.
    #[default]
    Full,
    /// Calls, steps, waits, faults, processes, membership and the diagnosis: no line per
    /// message (`send`, `deliver`, `drop`) and no timer other than the watchdog. The footer's
    /// digest still covers the full stream, which `replay` re-runs and checks.
    Calls,
}

impl Level {
    /// Whether a trace of this level holds `ev`.
    #[inline]
    pub fn holds(self, ev: &Event) -> bool {
        match self {
            Level::Full => true,
            Level::Calls => !ev.is_message_detail(),
        }
    }
}

/// Why a build of ringside-sim without its `zstd` feature refuses a compressed trace.
#[cfg(not(feature = "zstd"))]
pub(crate) const NO_ZSTD: &str =
    "a zstd-compressed trace, and this build of ringside-sim has no `zstd` feature to read or write one";

/// Whether `path` names a zstd-compressed trace (its name ends in `.zst`).
pub fn is_zstd_path(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|e| e == "zst")
}
