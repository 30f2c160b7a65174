//! The TCP driver: the same protocol code as OS processes over real sockets (`ringside launch`).
//!
//! `launch` ([`launch`]) listens on a rendezvous address and starts one `ringside worker`
//! process per node (each rank, plus the store of a store rendezvous). Each worker
//! ([`worker`]) listens on its own port, registers on the control channel ([`control`]), learns
//! every peer's address, and at the job's start time hands `Input::Start` to its
//! [`RankProcess`](crate::proto::RankProcess); from then on its inputs are frames from peers
//! ([`wire`]), real timers and the ends of real compute phases.
//!
//! Every connection, data or control, first proves that its opener knows the job's key, a
//! random secret `launch` hands each worker on its standard input ([`auth`]).
//!
//! Time: protocol time (`now`, timer deadlines, the trace's `t`) is wall-clock time since the
//! job's start divided by the time scale ([`TimeScale`], 1 by default): with `0.5`, a scenario's
//! `10ms` compute, `2s` timeout and a fault `at = "1s"` take 5ms, 1s and 500ms of real time.
//!
//! What is real: processes, sockets, timers, compute (a sleep), the reduction of the real
//! buffers, `preempt` (SIGKILL), `pause` (SIGSTOP/SIGCONT), `restart_after` (a new process with
//! the next incarnation), `slow` (longer compute), and the application bugs (`mismatch`,
//! `skip`, `hang`, which live in the protocol's configuration). What is not: the network model
//! (latency and bandwidth are loopback's), and the network faults `partition`, `delay` and
//! `loss`, which `launch` refuses unless told to ignore them.

pub mod ahead;
pub mod auth;
mod config;
pub mod control;
mod gate;
pub mod launch;
mod merge;
mod peers;
mod rendezvous;
pub mod wire;
pub mod worker;

use crate::scenario::Scenario;
use crate::units::Nanos;
use tokio::time::Instant;

/// Wall-clock seconds per second of protocol time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeScale(pub f64);

impl Default for TimeScale {
    fn default() -> Self {
        TimeScale(1.0)
    }
}

impl TimeScale {
    /// The wall-clock duration of `ns` of protocol time.
    pub fn wall(self, ns: Nanos) -> std::time::Duration {
        std::time::Duration::from_nanos((ns as f64 * self.0).round() as u64)
    }
}

/// Protocol time of a real run: nanoseconds since the job's start, scaled.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: Instant,
    scale: TimeScale,
}

impl Clock {
    /// A clock whose time 0 is `start`.
    pub fn new(start: Instant, scale: TimeScale) -> Clock {
        Clock { start, scale }
    }

    /// A clock whose time 0 is `epoch_unix_ns` (as `launch` tells its workers: every process
    /// on this machine then agrees on the job's time).
    pub fn from_unix_epoch(epoch_unix_ns: u64, scale: TimeScale) -> Clock {
        let (now, unix_now) = paired_now();
        let start = if epoch_unix_ns >= unix_now {
            now + std::time::Duration::from_nanos(epoch_unix_ns - unix_now)
        } else {
            now.checked_sub(std::time::Duration::from_nanos(unix_now - epoch_unix_ns))
                .unwrap_or(now)
        };
        Clock { start, scale }
    }

    /// Protocol time now (0 before the start).
    pub fn now(&self) -> Nanos {
        let wall = Instant::now().saturating_duration_since(self.start);
        (wall.as_nanos() as f64 / self.scale.0) as Nanos
    }

    /// When protocol time `t` comes.
    pub fn instant(&self, t: Nanos) -> Instant {
        self.start + self.scale.wall(t)
    }
}

/// The monotonic clock and the wall clock read together. Each process of a job maps the job's
/// wall-clock epoch onto its own monotonic clock with such a pair, so a pair read apart (the
/// process descheduled between the two reads) would set its clock off the others' by as much:
/// of a few tries, the pair read closest together is taken, stamped at the middle.
fn paired_now() -> (Instant, u64) {
    const CLOSE: std::time::Duration = std::time::Duration::from_micros(2);
    let read = || {
        let before = Instant::now();
        let unix = unix_now_ns();
        let gap = before.elapsed();
        (gap, before + gap / 2, unix)
    };
    let mut best = read();
    for _ in 0..8 {
        if best.0 <= CLOSE {
            break;
        }
        best = best.min(read());
    }
    (best.1, best.2)
}

/// Nanoseconds since the Unix epoch: the only clock two processes share.
#[allow(clippy::disallowed_methods)] // a real run's driver reads the wall clock, by design
pub fn unix_now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// How many processes a run of `s` has: its ranks, and the store of a store rendezvous.
pub fn nodes(s: &Scenario) -> u32 {
    s.nodes()
}
