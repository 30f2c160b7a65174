//! Which faults are active, and what they do to a link or a rank right now.

use crate::fault::Trigger;
use crate::scenario::Fault;
use crate::units::{later, Nanos};

use super::rng::Rng;

pub struct FaultSet {
    faults: Vec<Fault>,
    active: Vec<bool>,
    /// Indices of active network faults (partition, delay, loss) and slow faults.
    active_net: Vec<usize>,
}

fn touches(rank: Option<u32>, link: Option<[u32; 2]>, from: u32, to: u32) -> bool {
    match (rank, link) {
        (Some(r), _) => r == from || r == to,
        (None, Some([a, b])) => (a == from && b == to) || (a == to && b == from),
        (None, None) => false,
    }
}

impl FaultSet {
    pub fn new(faults: &[Fault]) -> FaultSet {
        FaultSet {
            faults: faults.to_vec(),
            active: vec![false; faults.len()],
            active_net: Vec::new(),
        }
    }

    pub fn fault(&self, i: usize) -> &Fault {
        &self.faults[i]
    }

    pub fn set_active(&mut self, i: usize, on: bool) {
        self.active[i] = on;
        self.active_net.retain(|&j| j != i);
        if on
            && matches!(
                self.faults[i],
                Fault::Partition { .. }
                    | Fault::Delay { .. }
                    | Fault::Loss { .. }
                    | Fault::Slow { .. }
            )
        {
            self.active_net.push(i);
            self.active_net.sort_unstable();
        }
    }

    /// Whether an active partition blocks traffic from `from` to `to`.
    pub fn partitioned(&self, from: u32, to: u32) -> bool {
        self.active_net
            .iter()
            .any(|&i| self.faults[i].cuts(from, to))
    }

    /// Extra delay of active `delay` faults on the link, jitter drawn from `rng`.
    pub fn extra_delay(&self, from: u32, to: u32, rng: &mut Rng) -> Nanos {
        let mut extra = 0;
        for &i in &self.active_net {
            if let Fault::Delay {
                rank,
                link,
                extra: e,
                jitter,
                ..
            } = &self.faults[i]
            {
                if touches(*rank, *link, from, to) {
                    extra = later(later(extra, e.0), jitter.map_or(0, |j| rng.up_to(j.0)));
                }
            }
        }
        extra
    }

    /// Probability that a message on the link is lost (combined over active `loss` faults).
    pub fn loss_rate(&self, from: u32, to: u32) -> f64 {
        let mut keep = 1.0;
        for &i in &self.active_net {
            if let Fault::Loss {
                rank, link, rate, ..
            } = &self.faults[i]
            {
                if touches(*rank, *link, from, to) {
                    keep *= 1.0 - rate;
                }
            }
        }
        1.0 - keep
    }

    /// How much longer `rank`'s compute takes right now.
    pub fn slow_factor(&self, rank: u32) -> f64 {
        let mut f = 1.0;
        for &i in &self.active_net {
            if let Fault::Slow {
                rank: r, factor, ..
            } = &self.faults[i]
            {
                if *r == rank {
                    f *= factor;
                }
            }
        }
        f
    }

    pub fn has_active_net(&self) -> bool {
        !self.active_net.is_empty()
    }

    /// Whether nothing from `from` reaches `to` right now: a partition, or a loss of every
    /// message.
    pub fn cut(&self, from: u32, to: u32) -> bool {
        self.has_active_net() && (self.partitioned(from, to) || self.loss_rate(from, to) >= 1.0)
    }
}

/// Ranks a fault touches, for traces and diagnosis.
pub fn touched_ranks(f: &Fault) -> Vec<u32> {
    let mut v: Vec<u32> = match f {
        Fault::Preempt { rank, .. }
        | Fault::Pause { rank, .. }
        | Fault::Slow { rank, .. }
        | Fault::Mismatch { rank, .. }
        | Fault::Skip { rank, .. }
        | Fault::Hang { rank, .. } => vec![*rank],
        Fault::Partition { sides, .. } => sides.iter().flatten().copied().collect(),
        Fault::Delay { rank, link, .. } | Fault::Loss { rank, link, .. } => match (rank, link) {
            (Some(r), _) => vec![*r],
            (None, Some([a, b])) => vec![*a, *b],
            _ => vec![],
        },
    };
    v.sort_unstable();
    v.dedup();
    v
}

/// One line describing a fault, for traces and reports; one triggered at a call says which.
pub fn describe_fault(f: &Fault) -> String {
    let what = describe_what(f);
    match f.trigger().and_then(Trigger::call) {
        Some(k) => format!("{what} at its call {k}"),
        None => what,
    }
}

fn describe_what(f: &Fault) -> String {
    let span = |d: Option<crate::units::Duration>| match d {
        Some(d) => format!(" for {d}"),
        None => String::new(),
    };
    let target = |rank: &Option<u32>, link: &Option<[u32; 2]>| match (rank, link) {
        (Some(r), _) => format!("rank {r}'s links"),
        (None, Some([a, b])) => format!("link {a}-{b}"),
        _ => "no link".into(),
    };
    match f {
        Fault::Preempt {
            rank,
            restart_after,
            ..
        } => match restart_after {
            Some(d) => format!("rank {rank} preempted, restarted after {d}"),
            None => format!("rank {rank} preempted"),
        },
        Fault::Pause { rank, duration, .. } => format!("rank {rank} paused for {duration}"),
        Fault::Partition {
            sides,
            duration,
            oneway,
            ..
        } => {
            let s: Vec<String> = sides
                .iter()
                .map(|s| {
                    s.iter()
                        .map(|r| r.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .collect();
            format!(
                "{}partition {}{}",
                if *oneway { "one-way " } else { "" },
                s.join(" | "),
                span(*duration)
            )
        }
        Fault::Delay {
            rank,
            link,
            duration,
            extra,
            jitter,
            ..
        } => format!(
            "{} delayed by {extra}{}{}",
            target(rank, link),
            jitter
                .map(|j| format!(" (+ up to {j} jitter)"))
                .unwrap_or_default(),
            span(*duration)
        ),
        Fault::Loss {
            rank,
            link,
            duration,
            rate,
            ..
        } => format!(
            "{} lose {:.1}% of messages{}",
            target(rank, link),
            rate * 100.0,
            span(*duration)
        ),
        Fault::Slow {
            rank,
            duration,
            factor,
            ..
        } => format!("rank {rank} computes {factor}x slower{}", span(*duration)),
        Fault::Mismatch {
            rank,
            iteration,
            op_index,
            ..
        } => format!(
            "rank {rank} issues mismatched call {} of iteration {iteration}",
            op_index.unwrap_or(0)
        ),
        Fault::Skip {
            rank,
            iteration,
            op_index,
        } => format!(
            "rank {rank} skips call {} of iteration {iteration}",
            op_index.unwrap_or(0)
        ),
        Fault::Hang { rank, iteration } => {
            format!("rank {rank} stops issuing calls at iteration {iteration}")
        }
    }
}
