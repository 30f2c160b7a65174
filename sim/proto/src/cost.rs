//! The parameters and the result of a cost formula: what an alpha-beta-gamma network charges,
//! and the predicted time of one call. The formulas of the stock algorithms live with the
//! simulator (`ringside_sim::cost`); a registered algorithm brings its own
//! ([`ScheduleFactory::with_cost`](crate::collective::custom::ScheduleFactory::with_cost)).

/// The parameters of an alpha-beta-gamma network, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Net {
    /// Latency per message.
    pub a: f64,
    /// Time per byte on the wire: 1/bandwidth.
    pub b: f64,
    /// Time per byte reduced: 1/reduce bandwidth, 0 when reductions are free.
    pub g: f64,
}

impl Net {
    /// A network of `latency_ns` and `bandwidth` bytes per second, whose reductions are free.
    pub fn new(latency_ns: u64, bandwidth: u64) -> Net {
        Net {
            a: latency_ns as f64,
            b: 1e9 / bandwidth as f64,
            g: 0.0,
        }
    }

    /// The same network, reducing at `reduce_bandwidth` bytes per second.
    pub fn reducing(self, reduce_bandwidth: u64) -> Net {
        Net {
            g: 1e9 / reduce_bandwidth as f64,
            ..self
        }
    }
}

/// The predicted time of one call, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cost {
    /// Exactly `ns`, over `rounds` messages and reductions in sequence.
    Exact { ns: f64, rounds: u32 },
    /// Between `lo` and `hi` (binomial trees on a non-power of two), over at most `rounds`
    /// messages and reductions in sequence.
    Between { lo: f64, hi: f64, rounds: u32 },
}

impl Cost {
    /// Whether `t` ns is the cost, give or take `slack` ns of rounding (at most one per
    /// message or reduction in sequence: [`Cost::rounds`]).
    pub fn admits(&self, t: f64, slack: f64) -> bool {
        match *self {
            Cost::Exact { ns, .. } => (t - ns).abs() <= slack,
            Cost::Between { lo, hi, .. } => t >= lo && t <= hi + slack,
        }
    }

    /// How many messages and reductions lie in sequence on the critical path.
    pub fn rounds(&self) -> u32 {
        match *self {
            Cost::Exact { rounds, .. } | Cost::Between { rounds, .. } => rounds,
        }
    }
}
