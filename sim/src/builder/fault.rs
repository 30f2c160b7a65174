//! The faults of a run built in code: each constructor is a `kind = "..."` of `[[faults]]`,
//! each method one of its keys. A timed fault starts at time 0 and lasts for good unless told
//! otherwise.
//!
//! ```
//! use ringside_sim::builder::fault;
//!
//! let crash = fault::preempt(3).at("10ms").restart_after("2s");
//! let split = fault::partition(&[&[0, 1], &[2, 3]]).at("5ms").lasting("50ms");
//! let lossy = fault::loss_link(0, 1, 0.2).at_call(4);
//! let hang = fault::hang(2, 1);
//! ```
//!
//! A method the fault's kind has no key for (`fault::hang(2, 1).lasting("1s")`) is an error
//! of [`Builder::build`](super::Builder::build), naming the call.

use super::Quantity;
use crate::scenario::{Fault, Trigger};
use crate::units::Duration;

/// One fault (a [`Fault`], as `[[faults]]` writes it).
#[derive(Clone, Debug)]
pub struct FaultSpec {
    pub(super) fault: Fault,
    /// The first call that could not be applied: (method, empty for the constructor; key;
    /// why).
    pub(super) error: Option<(&'static str, &'static str, String)>,
}

const NOW: Trigger = Trigger::At(Duration::ZERO);

/// A fault of any kind, as written.
pub fn of(fault: Fault) -> FaultSpec {
    FaultSpec { fault, error: None }
}

/// The process of `rank` dies (and stays dead unless [`FaultSpec::restart_after`]).
pub fn preempt(rank: u32) -> FaultSpec {
    of(Fault::Preempt {
        rank,
        at: NOW,
        restart_after: None,
    })
}

/// The process of `rank` stops for `duration`, then goes on.
pub fn pause(rank: u32, duration: impl Quantity<Duration>) -> FaultSpec {
    let mut f = of(Fault::Pause {
        rank,
        at: NOW,
        duration: Duration::ZERO,
    });
    f.set("", "duration", duration.value().map(Some));
    f
}

/// Links between different `sides` drop traffic (reliable messages are sent again until the
/// partition heals); a rank named on no side is not affected.
pub fn partition(sides: &[&[u32]]) -> FaultSpec {
    of(Fault::Partition {
        sides: sides.iter().map(|s| s.to_vec()).collect(),
        at: NOW,
        duration: None,
        oneway: false,
    })
}

/// Every message to or from `rank` takes `extra` more.
pub fn delay(rank: u32, extra: impl Quantity<Duration>) -> FaultSpec {
    delayed(Some(rank), None, extra)
}

/// Every message from `from` to `to` takes `extra` more.
pub fn delay_link(from: u32, to: u32, extra: impl Quantity<Duration>) -> FaultSpec {
    delayed(None, Some([from, to]), extra)
}

fn delayed(rank: Option<u32>, link: Option<[u32; 2]>, extra: impl Quantity<Duration>) -> FaultSpec {
    let mut f = of(Fault::Delay {
        rank,
        link,
        at: NOW,
        duration: None,
        extra: Duration::ZERO,
        jitter: None,
    });
    f.set("", "extra", extra.value().map(Some));
    f
}

/// Each message to or from `rank` is lost with probability `rate` (and sent again after the
/// retransmit timeout).
pub fn loss(rank: u32, rate: f64) -> FaultSpec {
    of(Fault::Loss {
        rank: Some(rank),
        link: None,
        at: NOW,
        duration: None,
        rate,
    })
}

/// Each message from `from` to `to` is lost with probability `rate`.
pub fn loss_link(from: u32, to: u32, rate: f64) -> FaultSpec {
    of(Fault::Loss {
        rank: None,
        link: Some([from, to]),
        at: NOW,
        duration: None,
        rate,
    })
}

/// The compute of `rank` takes `factor` times as long (a straggler).
pub fn slow(rank: u32, factor: f64) -> FaultSpec {
    of(Fault::Slow {
        rank,
        at: NOW,
        duration: None,
        factor,
    })
}

/// `rank` stops issuing calls in `iteration` (an application hang).
pub fn hang(rank: u32, iteration: u32) -> FaultSpec {
    of(Fault::Hang { rank, iteration })
}

/// `rank` skips its ops of `iteration` (or only the op of [`FaultSpec::op_index`]).
pub fn skip(rank: u32, iteration: u32) -> FaultSpec {
    of(Fault::Skip {
        rank,
        iteration,
        op_index: None,
    })
}

impl FaultSpec {
    /// Sets the duration field `key` of the fault, or records why it cannot be set.
    fn set(
        &mut self,
        method: &'static str,
        key: &'static str,
        d: Result<Option<Duration>, String>,
    ) {
        let d = match d {
            Ok(d) => d,
            Err(e) => return self.fail(method, key, e),
        };
        let slot = match (&mut self.fault, key) {
            (Fault::Pause { duration, .. }, "duration") => {
                *duration = d.unwrap_or_default();
                return;
            }
            (Fault::Delay { extra, .. }, "extra") => {
                *extra = d.unwrap_or_default();
                return;
            }
            (Fault::Preempt { restart_after, .. }, "restart_after") => restart_after,
            (Fault::Delay { jitter, .. }, "jitter") => jitter,
            (
                Fault::Partition { duration, .. }
                | Fault::Delay { duration, .. }
                | Fault::Loss { duration, .. }
                | Fault::Slow { duration, .. },
                "duration",
            ) => duration,
            _ => return self.no_key(method, key),
        };
        *slot = d;
    }

    fn fail(&mut self, method: &'static str, key: &'static str, why: String) {
        self.error.get_or_insert((method, key, why));
    }

    fn no_key(&mut self, method: &'static str, key: &'static str) {
        let kind = self.fault.kind();
        self.fail(method, key, format!("a `{kind}` fault has no `{key}`"));
    }

    fn trigger(&mut self, method: &'static str, key: &'static str, t: Result<Trigger, String>) {
        let t = match t {
            Ok(t) => t,
            Err(e) => return self.fail(method, key, e),
        };
        match &mut self.fault {
            Fault::Preempt { at, .. }
            | Fault::Pause { at, .. }
            | Fault::Partition { at, .. }
            | Fault::Delay { at, .. }
            | Fault::Loss { at, .. }
            | Fault::Slow { at, .. } => *at = t,
            Fault::Mismatch { .. } | Fault::Skip { .. } | Fault::Hang { .. } => {
                self.no_key(method, key)
            }
        }
    }

    /// Starts the fault at virtual time `t` (`at`).
    pub fn at(mut self, t: impl Quantity<Duration>) -> Self {
        self.trigger("at", "at", t.value().map(Trigger::At));
        self
    }

    /// Starts the fault as its rank issues its `k`-th call, counting from 1 (`at_call`).
    pub fn at_call(mut self, k: u32) -> Self {
        self.trigger("at_call", "at_call", Ok(Trigger::AtCall(k)));
        self
    }

    /// Ends the fault after `d` (`duration`): a partition heals, a delay, a loss or a
    /// slowdown stops.
    pub fn lasting(mut self, d: impl Quantity<Duration>) -> Self {
        self.set("lasting", "duration", d.value().map(Some));
        self
    }

    /// Restarts a preempted process after `d`, as a new incarnation (`restart_after`).
    pub fn restart_after(mut self, d: impl Quantity<Duration>) -> Self {
        self.set("restart_after", "restart_after", d.value().map(Some));
        self
    }

    /// Adds to a delay a uniform random extra time in `[0, d]` per message (`jitter`).
    pub fn jitter(mut self, d: impl Quantity<Duration>) -> Self {
        self.set("jitter", "jitter", d.value().map(Some));
        self
    }

    /// Cuts a partition's traffic one way only, from the first side to the others (`oneway`).
    pub fn oneway(mut self) -> Self {
        match &mut self.fault {
            Fault::Partition { oneway, .. } => *oneway = true,
            _ => self.no_key("oneway", "oneway"),
        }
        self
    }

    /// Skips only the op at `i` in the iteration (`op_index`, from 0).
    pub fn op_index(mut self, i: u32) -> Self {
        match &mut self.fault {
            Fault::Skip { op_index, .. } | Fault::Mismatch { op_index, .. } => *op_index = Some(i),
            _ => self.no_key("op_index", "op_index"),
        }
        self
    }
}
