//! The control channel between `launch` and its workers: one TCP connection per worker to
//! the rendezvous address, carrying JSON lines. It is how workers find each other (the
//! address table), when the job's clock starts, where each rank stands (so `launch` knows
//! when the run is over) and when to stop.

use serde::{Deserialize, Serialize};

/// The longest control line accepted; longer ones close the connection.
pub const MAX_LINE: usize = 64 * 1024;

/// Worker to `launch`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToLaunch {
    /// A worker is up and accepts peers on `port`.
    Hello {
        job: u64,
        rank: u32,
        incarnation: u32,
        port: u16,
    },
    /// Where the worker stands now (sent when it changes).
    Status(Standing),
}

/// Where a worker stands, as its own code knows it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Standing {
    /// Finished the workload.
    pub done: bool,
    /// A restarted process that could not rejoin.
    pub refused: bool,
    /// Elastic: "member", "rendezvous" or "joining" (none without elastic membership).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Elastic: the generation the rank is in.
    pub generation: u32,
    /// A collective watchdog fired.
    pub watchdog: bool,
}

/// `launch` to a worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToWorker {
    /// Where every node listens (`None`: not up, or dead).
    Table { addrs: Vec<Option<String>> },
    /// The job's clock: time 0 is this many ns after the Unix epoch.
    Start { epoch_unix_ns: u64 },
    /// The run ended at protocol time `at`; `dump`: write the flight recorder first (after
    /// another rank's watchdog fired), as of `at`.
    Stop { dump: bool, at: u64 },
}

/// Encodes one control line, newline included.
pub fn line<T: Serialize>(msg: &T) -> Vec<u8> {
    let mut v = serde_json::to_vec(msg).unwrap_or_default();
    v.push(b'\n');
    v
}
