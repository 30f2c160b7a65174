//! PyTorch Flight Recorder dumps: importing a real job's dumps into a diagnosis, a scenario and
//! a trace, and exporting a simulated run as dumps.
//!
//! A hung PyTorch job leaves one dump per rank: the last records of every collective each rank
//! issued, in every process group, with its state when that rank dumped. The import
//!
//! - [`read`]s the files (pickle or JSON, every layout from PyTorch 2.2's bare list to FR 2.10+,
//!   told apart by the keys present), bounded so that a corrupt or hostile file is an error and
//!   never a crash;
//! - [`groups`]: works out each process group's members, from `pg_config` where it is right and
//!   from which ranks' records name the group where it is not (gloo writes a wrong one);
//! - [`analyze`]s them: collectives matched by (group, `collective_seq_id`), point-to-point calls
//!   by (group, peer pair, order); the earliest divergence of each group (an extra or skipped
//!   call, other parameters, a stopped rank, a rank without a dump) judged by the majority of the
//!   group and by the call sites' history, never by file order; victims kept apart from
//!   culprits; ring-buffer windows ("overwritten" is not "never issued"); `pg_status` as a
//!   second progress signal; and a wait-for graph for who is blocked on what;
//! - [`report`]s it like `run` does, in sentences or JSON;
//! - writes it as a [`scenario`] that `ringside run` replays, and as a ringside [`trace`];
//! - and [`export`]s a simulated trace as one dump per rank.

pub mod analyze;
pub mod export;
pub mod groups;
pub mod model;
pub mod read;
pub mod report;
pub mod scenario;
pub mod trace;

pub use analyze::{analyze, analyze_in, Analysis};
pub use read::{read_paths, ReadError, ReadOptions};
