//! What `launch` and each worker are told: the configurations the driver's parts share, below
//! all of them.

use super::auth::JobKey;
use super::TimeScale;
use crate::scenario::Scenario;
use crate::units::Nanos;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

/// How to launch a scenario.
#[derive(Clone, Debug)]
pub struct LaunchConfig {
    pub scenario: Scenario,
    pub seed: u64,
    /// The `ringside` binary to start workers with.
    pub exe: PathBuf,
    /// Where the rendezvous and the workers listen.
    pub bind: IpAddr,
    pub scale: TimeScale,
    /// Per-process traces and logs go here.
    pub workdir: PathBuf,
    /// Stop the run at this protocol time (default: `time_limit`, else a bound).
    pub deadline: Option<Nanos>,
    /// Told about each worker's address (for people and tests that want to reach one).
    pub verbose: bool,
    /// The job's key, handed to each worker on its standard input.
    pub key: JobKey,
}

/// What a worker is told on its command line.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    pub scenario: Scenario,
    pub seed: u64,
    /// The node: a rank, or the store (node `world.size`).
    pub rank: u32,
    pub incarnation: u32,
    /// Where `launch` listens.
    pub rendezvous: SocketAddr,
    /// The address peers connect to.
    pub bind: IpAddr,
    /// The job id every frame must carry.
    pub job: u64,
    /// The job's key, which every connection proves (see [`super::auth`]).
    pub key: JobKey,
    /// This process's own trace (event lines only).
    pub trace: PathBuf,
    pub scale: TimeScale,
}
