//! What the engine implements today, and rejecting scenarios that need more.

use super::Invalid;
use crate::fault::FaultKind;
use crate::scenario::model::*;
use crate::units::Duration;

/// Which features of the scenario format the engine implements today.
///
/// The format (scenarios/README.md) runs ahead of the engine; a scenario that uses a feature the engine
/// lacks is rejected by [`unsupported`] with `not supported yet: <key>` instead of being run
/// with the feature silently ignored. Start from [`Support::ALL`] and switch off what is missing:
/// `Support { mesh: false, ..Support::ALL }`.
#[derive(Clone, Copy, Debug)]
pub struct Support {
    /// `network.model = "loggp"`.
    pub loggp: bool,
    /// `world.ranks_per_host > 1` (two-level topology, `[network.intra_host]`).
    pub two_level: bool,
    /// `network.reduce_bandwidth` (the gamma term).
    pub reduce_bandwidth: bool,
    /// A non-zero `network.jitter`, and `jitter` on `delay` faults.
    pub jitter: bool,
    /// `engine.tie_break = "shuffle"`.
    pub shuffle: bool,
    /// `[group.elastic]`.
    pub elastic: bool,
    /// `group.elastic.rendezvous = "store"`.
    pub store_rendezvous: bool,
    /// `[group.mesh]` and ops with a `group`.
    pub mesh: bool,
    /// `[[workload.registry]]` steps.
    pub registry: bool,
    /// `restart_after` on `preempt` faults.
    pub restart: bool,
    /// Fault kinds the engine injects, as written in `kind = "..."`.
    pub fault_kinds: &'static [FaultKind],
    /// Whether the engine runs `op` with this algorithm.
    pub algorithm: fn(OpKind, Algorithm) -> bool,
}

fn every_algorithm(_: OpKind, _: Algorithm) -> bool {
    true
}

impl Support {
    /// Everything in the format is supported.
    pub const ALL: Support = Support {
        loggp: true,
        two_level: true,
        reduce_bandwidth: true,
        jitter: true,
        shuffle: true,
        elastic: true,
        store_rendezvous: true,
        mesh: true,
        registry: true,
        restart: true,
        fault_kinds: FaultKind::ALL,
        algorithm: every_algorithm,
    };
}

fn not_yet<T>(key: impl Into<String>, what: &str) -> Result<T, Invalid> {
    let key = key.into();
    let message = format!("not supported yet: {key} ({what})");
    Err((key, message))
}

/// The algorithm a call of `op` runs when `explicit` (the op's own `algorithm`) may be absent.
fn effective_algorithm(s: &Scenario, op: OpKind, explicit: Option<Algorithm>) -> Algorithm {
    explicit
        .or(match op {
            OpKind::Allreduce => s.group.algorithm,
            _ => None,
        })
        .unwrap_or(op.default_algorithm())
}

fn supported_algorithms(op: OpKind, support: &Support) -> String {
    let names: Vec<&str> = op
        .algorithms()
        .iter()
        .filter(|a| (support.algorithm)(op, **a))
        .map(|a| a.name())
        .collect();
    if names.is_empty() {
        format!("no {op} algorithm runs in the engine yet")
    } else {
        format!("the engine runs {op} with {}", names.join(", "))
    }
}

/// Rejects a valid scenario that uses a feature `supported` says the engine lacks; the error
/// names the key of the first such use. Run it after [`validate`](super::validate).
pub fn unsupported(s: &Scenario, supported: &Support) -> Result<(), Invalid> {
    unsupported_settings(s, supported)?;
    unsupported_ops(s, supported)?;
    if !s.workload.registry.is_empty() && !supported.registry {
        return not_yet("workload.registry", "registry workloads");
    }
    unsupported_faults(s, supported)
}

/// The engine, world, network and group settings.
fn unsupported_settings(s: &Scenario, sup: &Support) -> Result<(), Invalid> {
    if s.engine.tie_break == TieBreak::Shuffle && !sup.shuffle {
        return not_yet(
            "engine.tie_break",
            "shuffled tie-breaking of simultaneous events",
        );
    }
    if s.world.ranks_per_host > 1 && !sup.two_level {
        return not_yet("world.ranks_per_host", "the two-level host topology");
    }
    let n = &s.network;
    if n.model == NetModel::Loggp && !sup.loggp {
        return not_yet("network.model", "the LogGP network model");
    }
    if n.reduce_bandwidth.is_some() && !sup.reduce_bandwidth {
        return not_yet(
            "network.reduce_bandwidth",
            "charging time for local reductions",
        );
    }
    if n.jitter != Duration::ZERO && !sup.jitter {
        return not_yet("network.jitter", "random per-message jitter");
    }
    if let Some(e) = &s.group.elastic {
        if !sup.elastic {
            return not_yet("group.elastic", "failure detection and group rebuild");
        }
        if e.rendezvous == RendezvousKind::Store && !sup.store_rendezvous {
            return not_yet(
                "group.elastic.rendezvous",
                "store-based rendezvous; \"quorum\" is the alternative",
            );
        }
    }
    if s.group.mesh.is_some() && !sup.mesh {
        return not_yet("group.mesh", "device meshes and their sub-groups");
    }
    if let Some(a) = s.group.algorithm {
        if !(sup.algorithm)(OpKind::Allreduce, a) {
            let why = supported_algorithms(OpKind::Allreduce, sup);
            return not_yet("group.algorithm", &format!("allreduce `{a}`; {why}"));
        }
    }
    Ok(())
}

/// The algorithm of every collective call, shared or in a program.
fn unsupported_ops(s: &Scenario, sup: &Support) -> Result<(), Invalid> {
    let programs = s
        .workload
        .programs
        .iter()
        .enumerate()
        .flat_map(|(p, prog)| {
            let at = format!("workload.programs[{p}].ops");
            prog.ops
                .iter()
                .enumerate()
                .map(move |(i, op)| (format!("{at}[{i}]"), op))
        });
    let shared = s.workload.ops.iter().enumerate();
    let all = shared
        .map(|(i, op)| (format!("workload.ops[{i}]"), op))
        .chain(programs);
    for (at, op) in all {
        // a send or recv is one message, which every driver carries: no schedule to support
        if op.op.point_to_point() {
            continue;
        }
        let a = effective_algorithm(s, op.op, op.algorithm);
        if !(sup.algorithm)(op.op, a) {
            let why = supported_algorithms(op.op, sup);
            let key = if op.algorithm.is_some() {
                format!("{at}.algorithm")
            } else {
                format!("{at}.op")
            };
            return not_yet(key, &format!("{} `{a}`; {why}", op.op));
        }
    }
    Ok(())
}

/// Each fault's kind, and what it asks of the engine beyond its kind.
fn unsupported_faults(s: &Scenario, sup: &Support) -> Result<(), Invalid> {
    for (i, f) in s.faults.iter().enumerate() {
        let k = format!("faults[{i}]");
        if !sup.fault_kinds.contains(&f.kind()) {
            return not_yet(
                format!("{k}.kind"),
                &format!(
                    "`{}` faults; the engine injects {}",
                    f.kind(),
                    sup.fault_kinds
                        .iter()
                        .map(|k| k.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
        match f {
            Fault::Preempt {
                restart_after: Some(_),
                ..
            } if !sup.restart => {
                return not_yet(format!("{k}.restart_after"), "restarting a preempted rank");
            }
            Fault::Delay {
                jitter: Some(j), ..
            } if *j != Duration::ZERO && !sup.jitter => {
                return not_yet(format!("{k}.jitter"), "random per-message jitter");
            }
            Fault::Mismatch {
                op: Some(kind),
                op_index,
                ..
            } => {
                // the mismatched call keeps its algorithm when the other op has it
                let target = s.workload.ops.get(op_index.unwrap_or(0) as usize);
                let a = target
                    .map(|t| effective_algorithm(s, t.op, t.algorithm))
                    .filter(|a| kind.algorithms().contains(a))
                    .unwrap_or(kind.default_algorithm());
                if !(sup.algorithm)(*kind, a) {
                    let why = supported_algorithms(*kind, sup);
                    return not_yet(format!("{k}.op"), &format!("{kind} `{a}`; {why}"));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::examples::{ANNOTATED, EVERY_KEY};
    use crate::scenario::{parse, parse_with};

    /// 1-based line of the first line of `text` that starts with `prefix`.
    fn line_starting(text: &str, prefix: &str) -> usize {
        text.lines()
            .position(|l| l.starts_with(prefix))
            .map(|i| i + 1)
            .unwrap_or_else(|| panic!("no line starts with {prefix:?}"))
    }

    #[track_caller]
    fn not_yet(text: &str, support: Support, key: &str, line_prefix: &str, fragment: &str) {
        let e = parse_with(text, "s.toml", &support).unwrap_err();
        let line = line_starting(text, line_prefix);
        assert_eq!((e.key.as_str(), e.line), (key, line), "{e}");
        assert!(
            e.message
                .starts_with(&format!("not supported yet: {key} (")),
            "{e}"
        );
        assert!(e.message.contains(fragment), "{e}");
        // plain parsing does not ask what the engine supports
        assert!(parse(text, "s.toml").is_ok());
    }

    #[test]
    fn everything_is_supported_by_support_all() {
        for text in [ANNOTATED, EVERY_KEY] {
            assert_eq!(
                parse_with(text, "s.toml", &Support::ALL).unwrap(),
                parse(text, "s.toml").unwrap()
            );
        }
    }

    #[test]
    fn unsupported_features_name_their_key() {
        let all = Support::ALL;
        let t = EVERY_KEY;
        not_yet(
            t,
            Support {
                shuffle: false,
                ..all
            },
            "engine.tie_break",
            "tie_break",
            "shuffled",
        );
        not_yet(
            t,
            Support {
                loggp: false,
                ..all
            },
            "network.model",
            "model",
            "LogGP",
        );
        not_yet(
            t,
            Support {
                elastic: false,
                ..all
            },
            "group.elastic",
            "[group.elastic]",
            "rebuild",
        );
        not_yet(
            t,
            Support {
                store_rendezvous: false,
                ..all
            },
            "group.elastic.rendezvous",
            "rendezvous",
            "\"quorum\"",
        );
        not_yet(
            t,
            Support { mesh: false, ..all },
            "group.mesh",
            "[group.mesh]",
            "mesh",
        );
        not_yet(
            t,
            Support {
                registry: false,
                ..all
            },
            "workload.registry",
            "[[workload.registry]]",
            "registry",
        );
        not_yet(
            t,
            Support {
                restart: false,
                ..all
            },
            "faults[0].restart_after",
            "restart_after",
            "restart",
        );
        let t2 = t.replace("tie_break = \"shuffle\"", "");
        not_yet(
            &t2,
            Support {
                jitter: false,
                ..all
            },
            "faults[3].jitter",
            "jitter",
            "jitter",
        );
        let kinds = Support {
            fault_kinds: &[FaultKind::Preempt, FaultKind::Pause],
            ..all
        };
        not_yet(
            t,
            kinds,
            "faults[2].kind",
            "kind = \"partition\"",
            "the engine injects preempt, pause",
        );

        let d = ANNOTATED;
        not_yet(
            d,
            Support {
                two_level: false,
                ..all
            },
            "world.ranks_per_host",
            "ranks_per_host",
            "two-level",
        );
        not_yet(
            d,
            Support {
                reduce_bandwidth: false,
                ..all
            },
            "network.reduce_bandwidth",
            "reduce_bandwidth",
            "reductions",
        );
        let d2 = d.replace("jitter = \"0s\"", "jitter = \"1us\"");
        not_yet(
            &d2,
            Support {
                jitter: false,
                ..all
            },
            "network.jitter",
            "jitter",
            "jitter",
        );
        // a zero jitter is no jitter
        assert!(parse_with(
            d,
            "s.toml",
            &Support {
                jitter: false,
                ..all
            }
        )
        .is_ok());
    }

    #[test]
    fn unsupported_algorithms_name_the_op_or_its_algorithm() {
        let all = Support::ALL;
        let t = EVERY_KEY;
        let no_direct_reduce = Support {
            algorithm: |op, a| !(op == OpKind::Reduce && a == Algorithm::Direct),
            ..all
        };
        not_yet(
            t,
            no_direct_reduce,
            "workload.ops[1].algorithm",
            "algorithm = \"direct\"",
            "the engine runs reduce with binomial",
        );
        let no_barrier = Support {
            algorithm: |op, _| op != OpKind::Barrier,
            ..all
        };
        not_yet(
            t,
            no_barrier,
            "workload.ops[2].op",
            "op = \"barrier\"",
            "no barrier algorithm runs",
        );
        let no_broadcast = Support {
            algorithm: |op, _| op != OpKind::Broadcast,
            ..all
        };
        not_yet(
            t,
            no_broadcast,
            "faults[6].op",
            "op = \"broadcast\"",
            "broadcast `direct`",
        );
        let d = ANNOTATED;
        let ring_only = Support {
            algorithm: |_, a| a != Algorithm::Ring,
            ..all
        };
        not_yet(
            d,
            ring_only,
            "group.algorithm",
            "algorithm = \"ring\"",
            "allreduce `ring`",
        );
    }
}
