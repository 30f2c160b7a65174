//! Small jobs under random fault schedules in which a minority of ranks run a buggy program
//! (a mismatched, skipped or hung call): the cases of the diagnosis property, whose root causes
//! must name the culprits.
//!
//! A generated case is the text of a scenario file, so a failing case prints exactly the
//! scenario that reproduces it (save it as a `.toml` and `ringside run` it).

use crate::check::Case;
use crate::scenario::{self, Dtype, Fault, OpKind, Scenario, Trigger};
use crate::units::{Duration, Size};
use proptest::prelude::*;
use std::fmt;

/// A generated scenario, kept as TOML text.
#[derive(Clone, PartialEq, Eq)]
pub struct ScenarioText(pub String);

impl ScenarioText {
    /// The scenario; generated text is always valid.
    pub fn scenario(&self) -> Scenario {
        scenario::parse(&self.0, "generated.toml")
            .unwrap_or_else(|e| panic!("a generated scenario is invalid: {e}\n{}", self.0))
    }

    /// The case of the scenario, with its own seed.
    pub fn case(&self) -> Case {
        Case::new(self.scenario())
    }
}

impl fmt::Debug for ScenarioText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\n----- scenario -----\n{}--------------------", self.0)
    }
}

#[derive(Clone, Debug)]
enum Target {
    Rank(u32),
    Link(u32, u32),
}

#[derive(Clone, Debug)]
enum FaultGen {
    Preempt {
        rank: u32,
        at_us: u64,
    },
    Pause {
        rank: u32,
        at_us: u64,
        dur_us: u64,
    },
    Partition {
        side_of: Vec<u8>,
        at_us: u64,
        dur_us: Option<u64>,
        oneway: bool,
    },
    Delay {
        target: Target,
        at_us: u64,
        extra_us: u64,
        dur_us: Option<u64>,
    },
    Loss {
        target: Target,
        at_us: u64,
        rate_pct: u32,
    },
    Slow {
        rank: u32,
        factor_tenths: u32,
    },
    Mismatch {
        rank: u32,
        iteration: u32,
        op_index: u32,
        what: u8,
    },
    Skip {
        rank: u32,
        iteration: u32,
        op_index: u32,
    },
    Hang {
        rank: u32,
        iteration: u32,
    },
}

impl FaultGen {
    /// The rank of an application bug (mismatch, skip, hang).
    fn bug_rank(&self) -> Option<u32> {
        match self {
            FaultGen::Mismatch { rank, .. }
            | FaultGen::Skip { rank, .. }
            | FaultGen::Hang { rank, .. } => Some(*rank),
            _ => None,
        }
    }
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        (0..8u32).prop_map(Target::Rank),
        (0..8u32, 1..8u32).prop_map(|(a, d)| Target::Link(a, a + d)),
    ]
}

fn fault() -> impl Strategy<Value = FaultGen> {
    let at = 0..8_000u64;
    prop_oneof![
        (0..8u32, at.clone()).prop_map(|(rank, at_us)| FaultGen::Preempt { rank, at_us }),
        (0..8u32, at.clone(), 100..150_000u64).prop_map(|(rank, at_us, dur_us)| {
            FaultGen::Pause {
                rank,
                at_us,
                dur_us,
            }
        }),
        (
            proptest::collection::vec(0..4u8, 8),
            at.clone(),
            proptest::option::of(100..150_000u64),
            any::<bool>()
        )
            .prop_map(|(side_of, at_us, dur_us, oneway)| FaultGen::Partition {
                side_of,
                at_us,
                dur_us,
                oneway,
            }),
        (
            target(),
            at.clone(),
            1..80_000u64,
            proptest::option::of(100..100_000u64)
        )
            .prop_map(|(target, at_us, extra_us, dur_us)| FaultGen::Delay {
                target,
                at_us,
                extra_us,
                dur_us,
            }),
        (target(), at, 5..50u32).prop_map(|(target, at_us, rate_pct)| FaultGen::Loss {
            target,
            at_us,
            rate_pct,
        }),
        (0..8u32, 11..60u32).prop_map(|(rank, factor_tenths)| FaultGen::Slow {
            rank,
            factor_tenths,
        }),
        (0..8u32, 0..3u32, 0..2u32, 0..4u8).prop_map(|(rank, iteration, op_index, what)| {
            FaultGen::Mismatch {
                rank,
                iteration,
                op_index,
                what,
            }
        }),
        (0..8u32, 0..3u32, 0..2u32).prop_map(|(rank, iteration, op_index)| FaultGen::Skip {
            rank,
            iteration,
            op_index,
        }),
        (0..8u32, 0..3u32).prop_map(|(rank, iteration)| FaultGen::Hang { rank, iteration }),
    ]
}

fn us(v: u64) -> Duration {
    Duration(v * 1_000)
}

/// The rank or link of a delay or loss on `p` ranks; None for a link of one rank.
fn target_on(t: &Target, p: u32) -> Option<(Option<u32>, Option<[u32; 2]>)> {
    match *t {
        Target::Rank(r) => Some((Some(r % p), None)),
        Target::Link(a, b) => {
            let (a, b) = (a % p, b % p);
            (a != b).then_some((None, Some([a, b])))
        }
    }
}

/// The sides of a partition of `p` ranks, rank `r` on side `side_of[r]` (none past the
/// third); None with fewer than two sides.
fn sides(side_of: &[u8], p: u32) -> Option<Vec<Vec<u32>>> {
    let mut sides: Vec<Vec<u32>> = vec![Vec::new(); 3];
    for r in 0..p {
        if let Some(side) = sides.get_mut(side_of[r as usize] as usize) {
            side.push(r);
        }
    }
    sides.retain(|s| !s.is_empty());
    (sides.len() >= 2).then_some(sides)
}

/// One fault on `p` ranks running `iterations` of `ops` (in order); bug iterations wrap into
/// `0..iterations`. None when the generated fault means nothing there (e.g. a partition with
/// a single side).
fn fault_on(f: &FaultGen, p: u32, iterations: u32, ops: &[OpKind]) -> Option<Fault> {
    Some(match f {
        FaultGen::Preempt { rank, at_us } => Fault::Preempt {
            rank: rank % p,
            at: Trigger::At(us(*at_us)),
            restart_after: None,
        },
        FaultGen::Pause {
            rank,
            at_us,
            dur_us,
        } => Fault::Pause {
            rank: rank % p,
            at: Trigger::At(us(*at_us)),
            duration: us(*dur_us),
        },
        FaultGen::Partition {
            side_of,
            at_us,
            dur_us,
            oneway,
        } => Fault::Partition {
            sides: sides(side_of, p)?,
            at: Trigger::At(us(*at_us)),
            duration: dur_us.map(us),
            oneway: *oneway,
        },
        FaultGen::Delay {
            target,
            at_us,
            extra_us,
            dur_us,
        } => {
            let (rank, link) = target_on(target, p)?;
            Fault::Delay {
                rank,
                link,
                at: Trigger::At(us(*at_us)),
                duration: dur_us.map(us),
                extra: us(*extra_us),
                jitter: None,
            }
        }
        FaultGen::Loss {
            target,
            at_us,
            rate_pct,
        } => {
            let (rank, link) = target_on(target, p)?;
            Fault::Loss {
                rank,
                link,
                at: Trigger::At(us(*at_us)),
                duration: None,
                rate: f64::from(*rate_pct) / 100.0,
            }
        }
        FaultGen::Slow {
            rank,
            factor_tenths,
        } => Fault::Slow {
            rank: rank % p,
            at: Trigger::At(Duration::ZERO),
            duration: None,
            factor: f64::from(*factor_tenths) / 10.0,
        },
        FaultGen::Mismatch {
            rank,
            iteration,
            op_index,
            what,
        } => {
            let index = op_index % ops.len() as u32;
            let (mut op, mut bytes, mut root, mut dtype) = (None, None, None, None);
            match what {
                0 => bytes = Some(Size(3 << 10)),
                1 if ops[index as usize] == OpKind::Barrier => op = Some(OpKind::Allreduce),
                1 => op = Some(OpKind::Barrier),
                2 => dtype = Some(Dtype::F64),
                _ => root = Some(1),
            }
            Fault::Mismatch {
                rank: rank % p,
                iteration: iteration % iterations,
                op_index: Some(index),
                op,
                bytes,
                root,
                dtype,
            }
        }
        FaultGen::Skip {
            rank,
            iteration,
            op_index,
        } => Fault::Skip {
            rank: rank % p,
            iteration: iteration % iterations,
            op_index: Some(op_index % ops.len() as u32),
        },
        FaultGen::Hang { rank, iteration } => Fault::Hang {
            rank: rank % p,
            iteration: iteration % iterations,
        },
    })
}

/// The TOML of one `[[faults]]` entry.
fn fault_toml(f: &Fault) -> String {
    let body = toml::to_string(f).unwrap_or_else(|e| panic!("a fault serializes: {e}"));
    format!("\n[[faults]]\n{body}")
}

/// Small worlds (2-6 ranks, 1-3 iterations of an allreduce and maybe a barrier) under 0-3
/// random faults of every kind. Application bugs hit fewer than half of the ranks, one bug
/// per rank: a majority of ranks must run the program as written for a culprit to be named.
pub fn scenarios() -> impl Strategy<Value = ScenarioText> {
    (
        2..=6u32,
        1..=3u32,
        any::<bool>(),
        prop_oneof![Just("4KiB"), Just("1MiB")],
        any::<u64>(),
        proptest::collection::vec(fault(), 0..=3),
    )
        .prop_map(|(p, iterations, barrier, bytes, seed, faults)| {
            let ops: Vec<OpKind> = if barrier {
                vec![OpKind::Allreduce, OpKind::Barrier]
            } else {
                vec![OpKind::Allreduce]
            };
            let mut s = format!(
                "name = \"generated\"\nseed = {}\n\n[world]\nsize = {p}\n\n[network]\n\
                 latency = \"5us\"\nbandwidth = \"25GB/s\"\nretransmit_timeout = \"5ms\"\n\n\
                 [group]\ntimeout = \"50ms\"\n\n[workload]\niterations = {iterations}\n\
                 compute = \"1ms\"\nelements = 8\n\n[[workload.ops]]\nop = \"allreduce\"\n\
                 bytes = \"{bytes}\"\n",
                seed % 1000
            );
            if barrier {
                s += "\n[[workload.ops]]\nop = \"barrier\"\n";
            }
            let mut bug_ranks: Vec<u32> = Vec::new();
            for f in &faults {
                if let Some(r) = f.bug_rank() {
                    let r = r % p;
                    if bug_ranks.contains(&r) || 2 * (bug_ranks.len() as u32 + 1) >= p {
                        continue;
                    }
                    bug_ranks.push(r);
                }
                if let Some(f) = fault_on(f, p, iterations, &ops) {
                    s += &fault_toml(&f);
                }
            }
            ScenarioText(s)
        })
}
