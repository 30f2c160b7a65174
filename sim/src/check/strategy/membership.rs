//! Elastic training jobs and registry workloads under random fault schedules.
//!
//! Each case is a scenario written out as TOML (so a failing case prints a file that `ringside
//! run` reproduces) with a safety phase of faults in the first [`SAFETY_MS`] milliseconds.
//! When `heals` is set, every fault then ends — partitions, losses and pauses have a duration,
//! every preempted process restarts — and the liveness phase begins: the run's time limit is
//! the heal time plus a bound computed from the timeouts ([`ElasticCase::bound_ns`]).
//! Timeouts are short (10ms heartbeats) so that cases are cheap.

use crate::check::Case;
use crate::scenario::{parse, Scenario};
use crate::units::Nanos;
use proptest::prelude::*;

/// Faults start within this many milliseconds.
pub const SAFETY_MS: u32 = 250;

const MS: Nanos = 1_000_000;

/// One injected fault, in milliseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultCase {
    Preempt {
        rank: u32,
        at: u32,
        restart_after: Option<u32>,
    },
    Partition {
        sides: [Vec<u32>; 2],
        at: u32,
        duration: Option<u32>,
    },
    Loss {
        rank: u32,
        at: u32,
        duration: Option<u32>,
        percent: u32,
    },
    Pause {
        rank: u32,
        at: u32,
        duration: u32,
    },
}

impl FaultCase {
    /// When the fault is over (None: never).
    pub fn healed_ms(&self) -> Option<u32> {
        match self {
            FaultCase::Preempt {
                at, restart_after, ..
            } => restart_after.map(|d| at + d),
            FaultCase::Partition { at, duration, .. } | FaultCase::Loss { at, duration, .. } => {
                duration.map(|d| at + d)
            }
            FaultCase::Pause { at, duration, .. } => Some(at + duration),
        }
    }

    fn toml(&self) -> String {
        let opt = |k: &str, v: &Option<u32>| match v {
            Some(v) => format!("{k} = \"{v}ms\"\n"),
            None => String::new(),
        };
        match self {
            FaultCase::Preempt {
                rank,
                at,
                restart_after,
            } => format!(
                "[[faults]]\nkind = \"preempt\"\nrank = {rank}\nat = \"{at}ms\"\n{}",
                opt("restart_after", restart_after)
            ),
            FaultCase::Partition {
                sides,
                at,
                duration,
            } => format!(
                "[[faults]]\nkind = \"partition\"\nsides = [{:?}, {:?}]\nat = \"{at}ms\"\n{}",
                sides[0],
                sides[1],
                opt("duration", duration)
            ),
            FaultCase::Loss {
                rank,
                at,
                duration,
                percent,
            } => format!(
                "[[faults]]\nkind = \"loss\"\nrank = {rank}\nat = \"{at}ms\"\nrate = {}\n{}",
                f64::from(*percent) / 100.0,
                opt("duration", duration)
            ),
            FaultCase::Pause { rank, at, duration } => format!(
                "[[faults]]\nkind = \"pause\"\nrank = {rank}\nat = \"{at}ms\"\nduration = \"{duration}ms\"\n"
            ),
        }
    }
}

/// Faults on `nodes` nodes; with `heals`, every one of them ends. Times are drawn for 10ms
/// heartbeats and multiplied by `scale`.
fn faults(
    nodes: u32,
    heals: bool,
    max: usize,
    scale: u32,
) -> impl Strategy<Value = Vec<FaultCase>> {
    let rank = 0..nodes;
    let at = (0..SAFETY_MS).prop_map(move |t| t * scale);
    let span = (5u32..300).prop_map(move |t| t * scale);
    let pause_span = span.clone();
    let ending = move || {
        if heals {
            span.clone().prop_map(Some).boxed()
        } else {
            proptest::option::weighted(0.7, span.clone()).boxed()
        }
    };
    let preempt = (rank.clone(), at.clone(), ending()).prop_map(|(rank, at, restart_after)| {
        FaultCase::Preempt {
            rank,
            at,
            restart_after,
        }
    });
    let partition =
        (1u32..(1 << nodes) - 1, at.clone(), ending()).prop_map(move |(mask, at, d)| {
            let (a, b): (Vec<u32>, Vec<u32>) = (0..nodes).partition(|r| mask & (1 << r) != 0);
            FaultCase::Partition {
                sides: [a, b],
                at,
                duration: d,
            }
        });
    let loss = (rank.clone(), at.clone(), ending(), 10u32..=100).prop_map(
        |(rank, at, duration, percent)| FaultCase::Loss {
            rank,
            at,
            duration,
            percent,
        },
    );
    let pause = (rank, at, pause_span).prop_map(|(rank, at, duration)| FaultCase::Pause {
        rank,
        at,
        duration,
    });
    let one = prop_oneof![3 => preempt, 3 => partition, 2 => loss, 2 => pause];
    proptest::collection::vec(one, 0..=max)
}

/// An elastic training job under a fault schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElasticCase {
    pub size: u32,
    pub min_size: u32,
    pub iterations: u32,
    pub compute_ms: u32,
    pub algorithm: &'static str,
    /// A second op of the iteration, as TOML lines (none: the allreduce alone).
    pub second: Option<&'static str>,
    pub store: bool,
    pub faults: Vec<FaultCase>,
    pub heals: bool,
    pub seed: u64,
}

impl ElasticCase {
    /// The last moment a fault is still on (the end of the safety phase when none lasts
    /// longer).
    pub fn heal_ms(&self) -> u32 {
        self.faults
            .iter()
            .filter_map(|f| f.healed_ms())
            .fold(SAFETY_MS, u32::max)
    }

    /// How long after the heal the job must be finished: detection, a few rendezvous rounds at
    /// their longest backoff, a watchdog, and the whole workload again.
    pub fn bound_ns(&self) -> Nanos {
        let interval = 10 * MS;
        let rendezvous = 3 * interval;
        let watchdog = 200 * MS;
        let retransmit = 20 * MS;
        let workload = Nanos::from(self.iterations) * (Nanos::from(self.compute_ms) + 5) * MS;
        let rounds = 4 * (8 * rendezvous + Nanos::from(self.size) * rendezvous / 4);
        2 * (5 * interval + rounds + 2 * watchdog + 4 * retransmit + 2 * workload)
    }

    pub fn time_limit_ns(&self) -> Nanos {
        if self.heals {
            Nanos::from(self.heal_ms()) * MS + self.bound_ns()
        } else {
            5_000 * MS
        }
    }

    pub fn toml(&self) -> String {
        let mut s = format!(
            "name = \"elastic-case\"\nseed = {}\ntime_limit = \"{}ns\"\n\
             [world]\nsize = {}\n\
             [network]\nlatency = \"5us\"\nbandwidth = \"25GB/s\"\nretransmit_timeout = \"20ms\"\n\
             [group]\ntimeout = \"200ms\"\n\
             [group.elastic]\nmin_size = {}\nmax_size = {}\nheartbeat_interval = \"10ms\"\n\
             heartbeat_misses = 3\nrendezvous = \"{}\"\n\
             [workload]\niterations = {}\ncompute = \"{}ms\"\nelements = 8\ndtype = \"i64\"\n\
             [[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\nalgorithm = \"{}\"\n",
            self.seed,
            self.time_limit_ns(),
            self.size,
            self.min_size,
            self.size,
            if self.store { "store" } else { "quorum" },
            self.iterations,
            self.compute_ms,
            self.algorithm,
        );
        if let Some(op) = self.second {
            s.push_str(&format!("[[workload.ops]]\n{op}\n"));
        }
        for f in &self.faults {
            s.push_str(&f.toml());
        }
        s
    }

    pub fn scenario(&self) -> Scenario {
        let text = self.toml();
        parse(&text, "elastic-case.toml").unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    pub fn case(&self) -> Case {
        Case::new(self.scenario())
    }
}

/// Elastic jobs of 3 to 5 ranks, running longer than the safety phase, under up to four
/// faults; `heals`: every fault ends.
pub fn elastic_case(heals: bool) -> impl Strategy<Value = ElasticCase> {
    (3u32..=5, any::<bool>()).prop_flat_map(move |(size, small_quorum)| {
        (
            15u32..=30,
            5u32..=12,
            prop_oneof![Just("ring"), Just("recursive_doubling"), Just("tree")],
            proptest::option::of(prop_oneof![
                // roots past a shrunken generation's end are clamped to its last member
                Just("op = \"broadcast\"\nbytes = \"256KiB\"\nroot = 2"),
                Just("op = \"reduce\"\nbytes = \"256KiB\"\nroot = 1\nreduce = \"max\""),
                Just("op = \"reduce_scatter\"\nbytes = \"256KiB\""),
                Just("op = \"allgather\"\nbytes = \"256KiB\""),
                Just("op = \"barrier\""),
            ]),
            proptest::bool::weighted(0.2),
            faults(size, heals, 4, 1),
            any::<u64>(),
        )
            .prop_map(
                move |(iterations, compute_ms, algorithm, second, store, faults, seed)| {
                    ElasticCase {
                        size,
                        min_size: if small_quorum { 1 } else { 2 },
                        iterations,
                        compute_ms,
                        algorithm,
                        second,
                        // in the liveness phase the store must survive: it cannot be restarted
                        store: store && (heals || faults.is_empty()),
                        faults,
                        heals,
                        seed,
                    }
                },
            )
    })
}

/// One `[[workload.registry]]` step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepCase {
    pub at: u32,
    pub rank: u32,
    pub action: &'static str,
    pub group: &'static str,
}

/// A registry workload under a fault schedule that heals; every node queries every group once
/// everything has settled. Registry heartbeats are the default 100ms, so times are ten times
/// those of [`ElasticCase`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryCase {
    pub nodes: u32,
    pub steps: Vec<StepCase>,
    pub faults: Vec<FaultCase>,
    pub seed: u64,
}

pub const REGISTRY_GROUPS: [&str; 2] = ["todo", "done"];

impl RegistryCase {
    pub fn heal_ms(&self) -> u32 {
        self.faults
            .iter()
            .filter_map(|f| f.healed_ms())
            .fold(10 * SAFETY_MS, u32::max)
    }

    /// When views must have converged, and every node queries every group: detection of a
    /// silent peer (four intervals of 100ms), then a state exchange, retransmitted (every
    /// 200ms) if lost. The liveness property derives the same wait from the scenario, after
    /// the last fault and the last join or leave: no later than this.
    pub fn settled_ms(&self) -> u32 {
        self.heal_ms() + 4 * 100 + 3 * 200
    }

    pub fn toml(&self) -> String {
        let settled = self.settled_ms();
        let mut s = format!(
            "name = \"registry-case\"\nseed = {}\ntime_limit = \"{}ms\"\n[world]\nsize = {}\n\
             [workload]\n",
            self.seed,
            settled + 10,
            self.nodes,
        );
        let mut push = |at: u32, rank: u32, action: &str, group: &str| {
            s.push_str(&format!(
                "[[workload.registry]]\nat = \"{at}ms\"\nrank = {rank}\naction = \"{action}\"\ngroup = \"{group}\"\n"
            ));
            if action == "broadcast" {
                s.push_str(&format!("message = \"item at {at}ms\"\n"));
            }
        };
        for st in &self.steps {
            push(st.at, st.rank, st.action, st.group);
        }
        for rank in 0..self.nodes {
            for g in REGISTRY_GROUPS {
                push(settled, rank, "query", g);
            }
        }
        for f in &self.faults {
            s.push_str(&f.toml());
        }
        s
    }

    pub fn scenario(&self) -> Scenario {
        let text = self.toml();
        parse(&text, "registry-case.toml").unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    pub fn case(&self) -> Case {
        Case::new(self.scenario())
    }
}

/// Registries of 2 to 4 nodes, with joins, leaves, broadcasts and monitors during the safety
/// phase, and up to four faults that all heal.
pub fn registry_case() -> impl Strategy<Value = RegistryCase> {
    (2u32..=4).prop_flat_map(|nodes| {
        let step = (
            (0..SAFETY_MS).prop_map(|t| t * 10),
            0..nodes,
            prop_oneof![
                4 => Just("join"),
                2 => Just("leave"),
                1 => Just("broadcast"),
                1 => Just("monitor")
            ],
            prop_oneof![Just(REGISTRY_GROUPS[0]), Just(REGISTRY_GROUPS[1])],
        )
            .prop_map(|(at, rank, action, group)| StepCase {
                at,
                rank,
                action,
                group,
            });
        (
            proptest::collection::vec(step, 1..12),
            faults(nodes, true, 4, 10),
            any::<u64>(),
        )
            .prop_map(move |(steps, faults, seed)| RegistryCase {
                nodes,
                steps,
                faults,
                seed,
            })
    })
}
