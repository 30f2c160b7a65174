//! A heartbeat failure detector.
//!
//! The owner sends a heartbeat datagram to its targets every `interval` and tells the detector
//! whenever it hears from a watched peer. A watched peer that has been silent for more than
//! `misses` intervals is suspected. Heartbeats are unreliable: a lost one is simply missed, so
//! loss, partitions, pauses and deaths all look alike here — silence.
//!
//! The detector only knows what it heard; it never reads a clock (time arrives as `now`).

use crate::time::Nanos;
use crate::types::Rank;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Watch {
    rank: Rank,
    last: Nanos,
    suspected: bool,
}

/// What hearing from a peer meant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heard {
    /// Not a watched peer.
    Unwatched,
    /// A watched peer, already believed alive.
    Alive,
    /// A suspected peer spoke again.
    Recovered,
}

#[derive(Clone, Debug)]
pub struct Detector {
    interval: Nanos,
    misses: u32,
    /// Watched peers, sorted by rank.
    peers: Vec<Watch>,
}

impl Detector {
    pub fn new(interval: Nanos, misses: u32) -> Detector {
        Detector {
            interval: interval.max(1),
            misses: misses.max(1),
            peers: Vec::new(),
        }
    }

    pub fn interval(&self) -> Nanos {
        self.interval
    }

    /// How long a peer may stay silent before it is suspected.
    pub fn timeout(&self) -> Nanos {
        self.interval * Nanos::from(self.misses)
    }

    /// Watches exactly `peers` from now on, each as if just heard.
    pub fn watch(&mut self, now: Nanos, peers: impl IntoIterator<Item = Rank>) {
        self.peers = peers
            .into_iter()
            .map(|rank| Watch {
                rank,
                last: now,
                suspected: false,
            })
            .collect();
        self.peers.sort_by_key(|w| w.rank);
        self.peers.dedup_by_key(|w| w.rank);
    }

    pub fn watched(&self) -> impl Iterator<Item = Rank> + '_ {
        self.peers.iter().map(|w| w.rank)
    }

    pub fn heard(&mut self, now: Nanos, from: Rank) -> Heard {
        match self.peers.binary_search_by_key(&from, |w| w.rank) {
            Ok(i) => {
                let w = &mut self.peers[i];
                w.last = w.last.max(now);
                if std::mem::take(&mut w.suspected) {
                    Heard::Recovered
                } else {
                    Heard::Alive
                }
            }
            Err(_) => Heard::Unwatched,
        }
    }

    pub fn suspects(&self, r: Rank) -> bool {
        self.peers
            .binary_search_by_key(&r, |w| w.rank)
            .is_ok_and(|i| self.peers[i].suspected)
    }

    /// Peers newly suspected at `now`, with how long each has been silent.
    pub fn check(&mut self, now: Nanos) -> Vec<(Rank, Nanos)> {
        let timeout = self.timeout();
        let mut out = Vec::new();
        for w in &mut self.peers {
            let silent = now.saturating_sub(w.last);
            if !w.suspected && silent > timeout {
                w.suspected = true;
                out.push((w.rank, silent));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silent_peer_is_suspected_after_the_misses_and_recovers_when_heard() {
        let mut d = Detector::new(100, 3);
        d.watch(0, [Rank(2), Rank(1), Rank(2)]);
        assert_eq!(d.watched().collect::<Vec<_>>(), vec![Rank(1), Rank(2)]);
        for t in [100, 200, 300] {
            assert_eq!(d.heard(t, Rank(1)), Heard::Alive);
            assert!(d.check(t).is_empty(), "three missed intervals are not more");
        }
        assert_eq!(d.check(301), vec![(Rank(2), 301)]);
        assert!(d.check(350).is_empty(), "suspected once");
        assert!(d.suspects(Rank(2)) && !d.suspects(Rank(1)));
        assert_eq!(d.heard(360, Rank(2)), Heard::Recovered);
        assert_eq!(d.heard(360, Rank(7)), Heard::Unwatched);
        assert!(!d.suspects(Rank(2)));
    }
}
