//! Small jobs under random fault schedules in which a minority of ranks run a buggy program
//! (a mismatched, skipped or hung call): the cases of the diagnosis property, whose root causes
//! must name the culprits.
//!
//! A generated case is the text of a scenario file, so a failing case prints exactly the
//! scenario that reproduces it (save it as a `.toml` and `ringside run` it).

use crate::check::Case;
use crate::scenario::{self, Scenario};
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

fn us(v: u64) -> String {
    format!("\"{v}us\"")
}

fn target_toml(t: &Target, p: u32) -> Option<String> {
    match *t {
        Target::Rank(r) => Some(format!("rank = {}", r % p)),
        Target::Link(a, b) => {
            let (a, b) = (a % p, b % p);
            (a != b).then(|| format!("link = [{a}, {b}]"))
        }
    }
}

/// The TOML of one fault on `p` ranks running `iterations` of `ops` (the op kinds, in order);
/// bug iterations wrap into `0..iterations`. None when the
/// generated fault means nothing there (e.g. a partition with a single side).
fn fault_toml(f: &FaultGen, p: u32, iterations: u32, ops: &[&str]) -> Option<String> {
    let mut s = String::from("\n[[faults]]\n");
    match f {
        FaultGen::Preempt { rank, at_us } => {
            s += &format!(
                "kind = \"preempt\"\nrank = {}\nat = {}\n",
                rank % p,
                us(*at_us)
            );
        }
        FaultGen::Pause {
            rank,
            at_us,
            dur_us,
        } => {
            s += &format!(
                "kind = \"pause\"\nrank = {}\nat = {}\nduration = {}\n",
                rank % p,
                us(*at_us),
                us(*dur_us)
            );
        }
        FaultGen::Partition {
            side_of,
            at_us,
            dur_us,
            oneway,
        } => {
            let mut sides: Vec<Vec<u32>> = vec![Vec::new(); 3];
            for r in 0..p {
                if let Some(side) = sides.get_mut(side_of[r as usize] as usize) {
                    side.push(r);
                }
            }
            sides.retain(|s| !s.is_empty());
            if sides.len() < 2 {
                return None;
            }
            let sides: Vec<String> = sides.iter().map(|s| format!("{s:?}")).collect();
            s += &format!(
                "kind = \"partition\"\nsides = [{}]\nat = {}\n",
                sides.join(", "),
                us(*at_us)
            );
            if let Some(d) = dur_us {
                s += &format!("duration = {}\n", us(*d));
            }
            if *oneway {
                s += "oneway = true\n";
            }
        }
        FaultGen::Delay {
            target,
            at_us,
            extra_us,
            dur_us,
        } => {
            s += &format!(
                "kind = \"delay\"\n{}\nat = {}\nextra = {}\n",
                target_toml(target, p)?,
                us(*at_us),
                us(*extra_us)
            );
            if let Some(d) = dur_us {
                s += &format!("duration = {}\n", us(*d));
            }
        }
        FaultGen::Loss {
            target,
            at_us,
            rate_pct,
        } => {
            s += &format!(
                "kind = \"loss\"\n{}\nat = {}\nrate = {}\n",
                target_toml(target, p)?,
                us(*at_us),
                f64::from(*rate_pct) / 100.0
            );
        }
        FaultGen::Slow {
            rank,
            factor_tenths,
        } => {
            s += &format!(
                "kind = \"slow\"\nrank = {}\nat = \"0s\"\nfactor = {}\n",
                rank % p,
                f64::from(*factor_tenths) / 10.0
            );
        }
        FaultGen::Mismatch {
            rank,
            iteration,
            op_index,
            what,
        } => {
            let index = op_index % ops.len() as u32;
            let change = match what {
                0 => "bytes = \"3KiB\"".to_string(),
                1 => format!(
                    "op = \"{}\"",
                    if ops[index as usize] == "barrier" {
                        "allreduce"
                    } else {
                        "barrier"
                    }
                ),
                2 => "dtype = \"f64\"".to_string(),
                _ => "root = 1".to_string(),
            };
            s += &format!(
                "kind = \"mismatch\"\nrank = {}\niteration = {}\nop_index = {index}\n{change}\n",
                rank % p,
                iteration % iterations
            );
        }
        FaultGen::Skip {
            rank,
            iteration,
            op_index,
        } => {
            s += &format!(
                "kind = \"skip\"\nrank = {}\niteration = {}\nop_index = {}\n",
                rank % p,
                iteration % iterations,
                op_index % ops.len() as u32
            );
        }
        FaultGen::Hang { rank, iteration } => {
            s += &format!(
                "kind = \"hang\"\nrank = {}\niteration = {}\n",
                rank % p,
                iteration % iterations
            );
        }
    }
    Some(s)
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
            let ops: Vec<&str> = if barrier {
                vec!["allreduce", "barrier"]
            } else {
                vec!["allreduce"]
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
                if let Some(t) = fault_toml(f, p, iterations, &ops) {
                    s += &t;
                }
            }
            ScenarioText(s)
        })
}
