//! Root causes: which one explains a wait, the culprit of a mismatched collective, and the
//! sentences that explain them.

use super::fold::{CallSig, CallView, FaultView, Fold, RankState, Slot, UnexpectedChunk, Variant};
use super::shift::{self, Shift};
use super::solve::Solution;
use super::Straggler;
use crate::cause::RootCause;
use crate::fault::FaultKind;
use crate::proto::event::AbortReason;
use crate::proto::mutation::Mutation;
use crate::proto::types::Rank;
use crate::proto::workload::{Along, OpCall, Step, WorkloadConfig};
use crate::scenario::OpKind;
use crate::units::{fmt_ms, fmt_time, Nanos};
use std::collections::BTreeMap;

fn join(r: &[u32]) -> String {
    r.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

pub use crate::ranklist::fmt_ranks;

/// "member 3" or "members 1,2": ranks of a group that did not answer.
fn members_phrase(r: &[u32]) -> String {
    if r.len() == 1 {
        format!("member {}", r[0])
    } else {
        format!("members {}", fmt_ranks(r))
    }
}

/// "rank 3" or "ranks 0,1,2".
pub fn ranks_phrase(r: &[u32]) -> String {
    if r.len() == 1 {
        format!("rank {}", r[0])
    } else {
        format!("ranks {}", fmt_ranks(r))
    }
}

fn call_name(sig: &CallSig, seq: u64) -> String {
    format!(
        "{} #{seq} (iteration {}, op {})",
        sig.op, sig.iteration, sig.index
    )
}

/// How `got` differs from `want`, e.g. `bytes 1048576 instead of 67108864`.
fn differences(got: &CallSig, want: &CallSig) -> String {
    let mut d = Vec::new();
    // the two ends of a message differ in op by nature: only what the message carries counts
    let message = got.op.point_to_point() && want.op.point_to_point();
    if got.op != want.op && !message {
        d.push(format!("op {} instead of {}", got.op, want.op));
    }
    if got.algorithm != want.algorithm && got.op == want.op && !message {
        d.push(format!(
            "algorithm {} instead of {}",
            got.algorithm, want.algorithm
        ));
    }
    if got.bytes != want.bytes {
        d.push(format!("bytes {} instead of {}", got.bytes, want.bytes));
    }
    if got.dtype != want.dtype {
        d.push(format!(
            "dtype {} instead of {}",
            got.dtype.name(),
            want.dtype.name()
        ));
    }
    if got.root != want.root {
        d.push(format!("root {} instead of {}", got.root, want.root));
    }
    if got.reduce != want.reduce {
        d.push(format!(
            "reduce {} instead of {}",
            got.reduce.name(),
            want.reduce.name()
        ));
    }
    if got.elements != want.elements {
        d.push(format!(
            "{} elements instead of {}",
            got.elements, want.elements
        ));
    }
    if d.is_empty() {
        "the same parameters".into()
    } else {
        d.join(", ")
    }
}

/// The verdict on one collective that ranks issued with different signatures.
struct SlotVerdict {
    culprits: BTreeMap<u32, RootCause>,
}

/// Collects causes and their explanations while the graph is classified.
#[derive(Default)]
pub(super) struct CauseBook {
    texts: BTreeMap<RootCause, (String, Vec<u32>)>,
    slots: BTreeMap<Slot, SlotVerdict>,
}

impl CauseBook {
    fn note(&mut self, key: &RootCause, text: impl FnOnce() -> (String, Vec<u32>)) {
        if !self.texts.contains_key(key) {
            let t = text();
            self.texts.insert(key.clone(), t);
        }
    }

    /// `slow:r`, explained by `text` (made only the first time the cause is named).
    fn slow(&mut self, r: u32, text: impl FnOnce() -> String) -> RootCause {
        let key = RootCause::Slow(Rank(r));
        self.note(&key, || (text(), vec![r]));
        key
    }

    /// `watchdog_timeout`: `waiter`'s call was aborted, by its watchdog or by a failure
    /// detector that gave up on a peer, while `what` (about a rank no straggler fault touched)
    /// was still under way.
    fn watchdog_timeout(
        &mut self,
        fold: &Fold,
        waiter: u32,
        what: impl FnOnce() -> String,
    ) -> RootCause {
        let key = RootCause::WatchdogTimeout;
        self.note(&key, || {
            let call = fold
                .ranks
                .get(waiter as usize)
                .and_then(|v| v.call.as_ref());
            let reason = call.and_then(|c| c.aborted.as_deref());
            let elastic = fold.workload.as_ref().and_then(|w| w.elastic.as_ref());
            let text = match (reason, elastic) {
                (Some(reason), Some(e)) if !AbortReason::text_is_watchdog(reason) => format!(
                    "the failure detector's window ({} = heartbeat_interval x \
                     heartbeat_misses) is too short for this network: {} when rank {waiter}'s \
                     call was aborted ({reason}), and no fault made it late (raise \
                     `heartbeat_interval` or `heartbeat_misses`)",
                    fmt_time(e.rendezvous_timeout()),
                    what()
                ),
                _ => format!(
                    "the watchdog timeout{} is shorter than the call takes: {} when rank \
                     {waiter}'s watchdog fired, and no fault made it late (raise the group's \
                     `timeout`, or check the network and compute times)",
                    fold.workload
                        .as_ref()
                        .map(|w| format!(" ({})", fmt_time(w.timeout)))
                        .unwrap_or_default(),
                    what()
                ),
            };
            (text, Vec::new())
        });
        key
    }

    /// The sentence and the named ranks of a cause.
    pub fn describe(&self, key: &RootCause) -> (String, Vec<u32>) {
        self.texts
            .get(key)
            .cloned()
            .unwrap_or_else(|| (key.to_string(), Vec::new()))
    }

    /// Rank `r` is dead: preempted, or, in an import of a job's dumps, a rank that left no
    /// dump (the import has it die where the others start waiting for it).
    pub fn gone(&mut self, fold: &Fold, r: u32) -> RootCause {
        if fold.ranks[r as usize].no_dump {
            self.missing(fold, r)
        } else {
            self.preempted(fold, r)
        }
    }

    pub fn missing(&mut self, fold: &Fold, r: u32) -> RootCause {
        let key = RootCause::missing(vec![Rank(r)]);
        self.note(&key, || {
            let v = &fold.ranks[r as usize];
            let text = format!(
                "rank {r} left no Flight Recorder dump: the others wait for it from {} on",
                fmt_ms(v.dead_since.unwrap_or(v.since_ns))
            );
            (text, vec![r])
        });
        key
    }

    pub fn preempted(&mut self, fold: &Fold, r: u32) -> RootCause {
        let key = RootCause::Preempted(Rank(r));
        self.note(&key, || {
            let v = &fold.ranks[r as usize];
            let at = last_fault(fold, FaultKind::Preempt, r)
                .map(|f| f.begin_ns)
                .or(v.dead_since)
                .unwrap_or(v.since_ns);
            let text = if v.state == RankState::Refused {
                format!(
                    "rank {r} was preempted at {}; its restarted process could not rejoin the \
                     group (it is not elastic)",
                    fmt_ms(at)
                )
            } else {
                format!("rank {r} was preempted at {}", fmt_ms(at))
            };
            (text, vec![r])
        });
        key
    }

    pub fn paused(&mut self, fold: &Fold, r: u32) -> RootCause {
        let key = RootCause::Paused(Rank(r));
        self.note(&key, || {
            let v = &fold.ranks[r as usize];
            let since = v.paused_since.unwrap_or(v.since_ns);
            let how = last_fault(fold, FaultKind::Pause, r)
                .and_then(|f| f.detail.rsplit_once(" for ").map(|(_, d)| d.to_string()))
                .map(|d| format!(" for {d}"))
                .unwrap_or_default();
            (
                format!(
                    "rank {r} was paused at {}{how} (frozen: it handles nothing)",
                    fmt_ms(since)
                ),
                vec![r],
            )
        });
        key
    }

    /// The partition `fold.faults[i]`.
    pub fn partitioned(&mut self, fold: &Fold, i: usize) -> RootCause {
        let f = &fold.faults[i];
        let mut sides = f.sides.clone().unwrap_or_default();
        for s in &mut sides {
            s.sort_unstable();
        }
        let key = RootCause::partitioned(
            sides
                .iter()
                .map(|s| s.iter().copied().map(Rank).collect())
                .collect(),
        );
        self.note(&key, || {
            let names: Vec<String> = sides.iter().map(|s| format!("{{{}}}", join(s))).collect();
            let when = match f.end_ns {
                Some(e) if e <= fold.t => format!(
                    "from {} until {} (chunks it dropped are sent again only after the \
                     retransmit timeout)",
                    fmt_ms(f.begin_ns),
                    fmt_ms(e)
                ),
                _ => format!("since {}", fmt_ms(f.begin_ns)),
            };
            let text = if f.oneway {
                format!(
                    "a one-way partition drops all traffic from {} to {} {when}",
                    names[0],
                    names[1..].join(" and ")
                )
            } else {
                format!(
                    "the network is partitioned into {} {when}",
                    names.join(" and ")
                )
            };
            (text, sides.iter().flatten().copied().collect())
        });
        key
    }

    pub fn hung(&mut self, fold: &Fold, r: u32) -> RootCause {
        let key = RootCause::Hung(Rank(r));
        self.note(&key, || {
            let v = &fold.ranks[r as usize];
            let after = match v.last_call {
                Some((it, ix)) => format!(" after iteration {it}, op {ix}"),
                None => " before its first call".into(),
            };
            (
                format!(
                    "rank {r} stopped issuing collectives at {}{after}: it is alive, not \
                     computing and in no collective",
                    fmt_ms(v.since_ns)
                ),
                vec![r],
            )
        });
        key
    }

    /// Rank `r`'s node of the program's own waits for nobody (it works, is idle, or
    /// finished) while `waiter`'s node waits for it: it will not answer (`hung:r`).
    pub fn unanswered(&mut self, fold: &Fold, r: u32, waiter: u32) -> RootCause {
        let key = RootCause::Hung(Rank(r));
        self.note(&key, || {
            let v = &fold.ranks[r as usize];
            let on = fold.ranks[waiter as usize]
                .node_wait
                .as_ref()
                .map_or("", |w| w.on.as_str());
            let state = match v.state {
                RankState::Done => "finished",
                _ => "waits for nobody",
            };
            (
                format!(
                    "rank {r}'s node {state} since {} while rank {waiter} waits for it in `{on}`: \
                     it will not answer",
                    fmt_ms(v.since_ns)
                ),
                vec![r],
            )
        });
        key
    }

    /// Rank `r` never issued `slot`, which `waiter` waits in, and went past it: it finished
    /// its workload, or is in a call further on in its program.
    pub fn skipped(&mut self, fold: &Fold, r: u32, slot: Slot, waiter: u32) -> RootCause {
        let key = RootCause::Skipped(Rank(r));
        self.note(&key, || {
            let what = fold.ranks[waiter as usize]
                .call_at(slot)
                .map(|c| call_name(&c.sig, slot.seq.0))
                .unwrap_or_else(|| format!("collective #{}", slot.seq));
            let v = &fold.ranks[r as usize];
            let text = match site_shift(fold, r, waiter, slot) {
                Some(d) if d.shift == Shift::Skipped => format!(
                    "rank {r} skipped {} #{}, which rank {waiter} called from {}: its \
                     call there is from {}, and every later call is shifted by one; rank \
                     {waiter} waits in {what}",
                    d.op, d.seq, d.theirs, d.mine
                ),
                _ => match v.call.as_ref().filter(|_| v.state != RankState::Done) {
                    Some(c) => format!(
                    "rank {r} never issued {what}, which rank {waiter} waits in, and is already \
                     in a later call of its program (iteration {}, op {}): it skipped a call",
                    c.iteration, c.index
                ),
                    None => format!(
                    "rank {r} finished its workload without issuing {what}, which rank {waiter} \
                     waits in: it skipped a call"
                ),
                },
            };
            (text, vec![r])
        });
        key
    }

    /// Rank `a` waits in `slot`, a call that rank `b`'s program never makes, while `b` runs
    /// the program the scenario declares and `a` a program of its own: `a`'s call is extra.
    pub fn extra(&mut self, fold: &Fold, a: u32, slot: Slot, b: u32) -> RootCause {
        let key = RootCause::Mismatch(Rank(a));
        self.note(&key, || {
            let what = fold.ranks[a as usize]
                .call_at(slot)
                .map(|c| call_name(&c.sig, slot.seq.0))
                .unwrap_or_else(|| format!("call #{}", slot.seq));
            let text = match site_shift(fold, a, b, slot) {
                Some(d) if d.shift == Shift::Extra => format!(
                    "rank {a} called {} #{} from {}, where rank {b} called it from {}: \
                     an extra call with the same parameters, so it matched the others' next call \
                     and every later call is shifted by one; rank {a} waits in {what}, which rank \
                     {b} never issues",
                    d.op, d.seq, d.mine, d.theirs
                ),
                _ => format!(
                    "rank {a} issued {what}, which rank {b} never issues: rank {a} runs a \
                     program of its own with an extra call"
                ),
            };
            (text, vec![a])
        });
        key
    }

    /// Rank `a` waits in a recv from `b`, which never sends to it, while the message `c` sent
    /// it is never taken: `a`'s recv names the wrong peer.
    pub fn wrong_peer(&mut self, a: u32, b: u32, c: u32) -> RootCause {
        let key = RootCause::Mismatch(Rank(a));
        self.note(&key, || {
            (
                format!(
                    "rank {a} posted a recv from rank {b}, which never sends to it, while the \
                     messages rank {c} sent it are never received: rank {a}'s recv names the \
                     wrong peer"
                ),
                vec![a],
            )
        });
        key
    }

    /// The culprits of `slot` among `pair` (all of the slot's culprits if neither is one).
    pub fn mismatch(&mut self, fold: &Fold, slot: Slot, pair: &[u32]) -> Vec<RootCause> {
        if !self.slots.contains_key(&slot) {
            let v = self.judge(fold, slot);
            self.slots.insert(slot, v);
        }
        let verdict = &self.slots[&slot];
        let mut keys: Vec<RootCause> = pair
            .iter()
            .filter_map(|r| verdict.culprits.get(r).cloned())
            .collect();
        if keys.is_empty() {
            keys = verdict.culprits.values().cloned().collect();
        }
        keys.dedup();
        keys
    }

    /// Compares every rank's signature of `slot`. Ranks are grouped by the parameters they
    /// called it with (what their messages carry). Between ranks of one program, the group
    /// with the earliest call site is right: no fault moves a call earlier in a rank's program,
    /// while a skipped call moves the rank's later calls up to its number. Among groups at that
    /// site (or of different programs) the one that calls what its ranks' programs say there
    /// is right (however many ranks share a mismatch); then ranks that run the program the
    /// scenario declares (`[[workload.ops]]`, the pipeline) are right against a
    /// `[[workload.programs]]` entry, which is the deviation; then the largest group, then the
    /// group with the lowest rank. Every rank outside it
    /// is a culprit: `skipped` when it is at a later call of the same program (it skipped the
    /// one the others are in), else `mismatch`. Ranks with the right parameters at another
    /// call site consume the same messages, so they are no culprit here. The two ends of a
    /// message run different programs: there only the declared call and the rank decide.
    fn judge(&mut self, fold: &Fold, slot: Slot) -> SlotVerdict {
        let mut culprits = BTreeMap::new();
        let Some(op) = fold.ops.get(&slot) else {
            return SlotVerdict { culprits };
        };
        if op.variants.len() < 2 {
            return SlotVerdict { culprits };
        }
        let groups = param_groups(&op.variants);
        let sites = Sites::of(fold, slot, &op.variants, &groups);
        let Some(best) = groups.iter().max_by_key(|g| sites.rank_key(g)) else {
            return SlotVerdict { culprits };
        };
        // the right call: the most common variant of the right parameters
        let Some(&main) = best.iter().max_by_key(|&&k| op.variants[k].count) else {
            return SlotVerdict { culprits };
        };
        let majority: Vec<u32> = best
            .iter()
            .flat_map(|&k| op.variants[k].ranks.iter().copied())
            .collect();
        for (k, v) in op.variants.iter().enumerate() {
            if v.sig.same_params(&op.variants[main].sig) {
                continue;
            }
            let skipped = sites.skipped(k, main);
            for &r in &v.ranks {
                let key = if skipped {
                    RootCause::Skipped(Rank(r))
                } else {
                    RootCause::Mismatch(Rank(r))
                };
                let text = sites.culprit_text(r, k, main, skipped, &majority);
                self.texts.entry(key.clone()).or_insert((text, vec![r]));
                culprits.insert(r, key);
            }
        }
        SlotVerdict { culprits }
    }

    pub fn deadlock(&mut self, _fold: &Fold, s: &Solution, ranks: &[u32]) -> RootCause {
        let key = RootCause::deadlock(ranks.iter().copied().map(Rank).collect());
        self.note(&key, || {
            let mut waits = Vec::new();
            for &r in ranks {
                let mut to: Vec<u32> = s.waits_of(r).filter(|x| ranks.contains(x)).collect();
                to.sort_unstable();
                to.dedup();
                waits.push(format!("{r} waits for {}", join(&to)));
            }
            (
                format!(
                    "{} wait for each other in a cycle with no chunk on its way ({}): a \
                     deadlock",
                    ranks_phrase(ranks),
                    waits.join(", ")
                ),
                ranks.to_vec(),
            )
        });
        key
    }

    /// Rank `r` sits in its call while `waiters` (of `cycle`) wait for it in a call of another
    /// group, which the programs of `first` make before the one `r` is in: `r` calls them in
    /// the inverse order (`mismatch:r`).
    pub fn inverted(
        &mut self,
        fold: &Fold,
        r: u32,
        inv: &super::graph::Inversion,
        cycle: &[u32],
    ) -> RootCause {
        let key = RootCause::Mismatch(Rank(r));
        self.note(&key, || {
            let call = |x: u32| {
                fold.ranks
                    .get(x as usize)
                    .and_then(|v| v.call.as_ref())
                    .map(|c| {
                        let group = if c.group.0 == 0 {
                            String::new()
                        } else {
                            format!(" in group {}", c.group.0)
                        };
                        format!(
                            "{} #{}{group} (iteration {}, op {})",
                            c.op, c.seq, c.iteration, c.index
                        )
                    })
                    .unwrap_or_default()
            };
            let waiters = &inv.waiters;
            let theirs = waiters.first().map(|&w| call(w)).unwrap_or_default();
            let how =
                if inv.own {
                    format!(
                    "rank {r} made these two calls the other way round earlier in its program, \
                     as {} {} them",
                    ranks_phrase(&inv.order),
                    if inv.order.len() == 1 { "makes" } else { "make" }
                )
                } else {
                    format!(
                        "rank {r}'s program makes these two calls in the inverse order of the \
                     programs of {}",
                        ranks_phrase(&inv.order)
                    )
                };
            (
                format!(
                    "rank {r} is in {} while {} {} for it in {theirs}: {how} (a call order \
                     inverted across groups)",
                    call(r),
                    ranks_phrase(waiters),
                    if waiters.len() == 1 { "waits" } else { "wait" },
                ),
                cycle.to_vec(),
            )
        });
        key
    }

    /// A pause of `r` that overlapped `[window, now]`: the rank fell behind while frozen.
    fn paused_during(&mut self, fold: &Fold, r: u32, window: Nanos) -> Option<RootCause> {
        let f = fold.faults.iter().rev().find(|f| {
            f.kind == FaultKind::Pause
                && f.ranks == [r]
                && f.begin_ns <= fold.t
                && f.end_ns.is_none_or(|e| e >= window)
        })?;
        let key = RootCause::Paused(Rank(r));
        self.note(&key, || {
            let until = match f.end_ns {
                Some(e) if e <= fold.t => format!(" until {}", fmt_ms(e)),
                _ => String::new(),
            };
            (
                format!(
                    "rank {r} was paused from {}{until} ({}) and fell behind",
                    fmt_ms(f.begin_ns),
                    f.detail
                ),
                vec![r],
            )
        });
        Some(key)
    }

    /// Why rank `a` is outside the group: left out of a generation that formed without it,
    /// or waiting in a rendezvous. Each cause must hold now, not just for a moment:
    /// - a partition that cut `a` off from a member of the newest generation, in either
    ///   direction (its heartbeats count as much as the chunks it waits for), or a pause that
    ///   froze it meanwhile;
    /// - in a rendezvous: a store that is dead, frozen or cut off (store rendezvous), or a
    ///   quorum it cannot reach because members of its generation are dead, frozen or cut off;
    /// - left out: a lossy or slow link that lost or delayed its heartbeats.
    ///
    /// Empty when `a` is a member of the newest generation, or none of these holds.
    pub fn left_out(&mut self, fold: &Fold, a: u32) -> Vec<RootCause> {
        let m = &fold.membership;
        let newest = m.generations.last();
        let left_out = m.joining.contains(&a)
            || newest.is_some_and(|g| {
                !g.members.contains(&a) && m.generation_of.get(&a).is_none_or(|&x| x < g.generation)
            });
        let in_rendezvous = !m.joining.contains(&a)
            && (m.rendezvous.contains_key(&a) || m.waiting.contains_key(&a));
        if !left_out && !in_rendezvous {
            return Vec::new();
        }
        let v = &fold.ranks[a as usize];
        let window = v.call.as_ref().map_or(v.since_ns, |c| c.called_ns);
        let during = |f: &FaultView| f.begin_ns <= fold.t && f.end_ns.is_none_or(|e| e >= window);
        let members = generation_members(fold, newest.map(|g| g.generation));
        let mut keys = Vec::new();
        if let (true, Some(store)) = (in_rendezvous, fold.store) {
            keys.extend(self.store_down(fold, a, store));
        }
        if let Some(i) = fold
            .faults
            .iter()
            .position(|f| during(f) && members.iter().any(|&b| b != a && f.separates(a, b)))
        {
            keys.push(self.partitioned(fold, i));
        }
        keys.extend(self.paused_during(fold, a, window));
        if in_rendezvous && keys.iter().all(|k| !matches!(k, RootCause::Preempted(_))) {
            self.quorum_lost(fold, a, &mut keys);
        }
        if (left_out || in_rendezvous) && keys.is_empty() {
            // its heartbeats, its requests to join or its rendezvous messages were lost or
            // late on a faulty link
            if let Some(f) = fold.faults.iter().rev().find(|f| {
                f.kind.is_link() && during(f) && members.iter().any(|&b| b != a && f.on_link(a, b))
            }) {
                let culprit = f.straggler(a);
                let key = self.slow(culprit, || {
                    if left_out {
                        format!(
                            "rank {a} was left out of the group: its heartbeats and requests \
                             to join went over a faulty link ({})",
                            f.detail
                        )
                    } else {
                        format!(
                            "rank {a} is held in a rendezvous that cannot form a generation: \
                             its messages go over a faulty link ({})",
                            f.detail
                        )
                    }
                });
                keys.push(key);
            }
        }
        keys
    }

    /// Why an elastic group kept rebuilding: for each rank its peers suspected since the last
    /// completed call, the fault that cut it off, froze it or lost or delayed its heartbeats.
    pub fn churn(&mut self, fold: &Fold) -> Vec<RootCause> {
        let since = fold
            .ops
            .values()
            .filter_map(|o| o.end_ns)
            .max()
            .unwrap_or(0);
        let n = fold.ranks.len() as u32;
        let during = |f: &FaultView| f.begin_ns <= fold.t && f.end_ns.is_none_or(|e| e >= since);
        let mut keys = Vec::new();
        for (&peer, &t) in &fold.membership.suspected {
            if t < since || peer >= n {
                continue;
            }
            let key = if let Some(i) = fold
                .faults
                .iter()
                .position(|f| during(f) && (0..n).any(|b| f.cuts(peer, b)))
            {
                self.partitioned(fold, i)
            } else if let Some(k) = self.paused_during(fold, peer, since) {
                k
            } else if let Some(f) = fold
                .faults
                .iter()
                .rev()
                .find(|f| f.kind.is_link() && during(f) && f.ranks.contains(&peer))
            {
                let culprit = f.straggler(peer);
                self.slow(culprit, || {
                    format!(
                        "the group kept rebuilding without getting further: its members \
                         lost sight of rank {peer} again and again, as its heartbeats went \
                         over a faulty link ({})",
                        f.detail
                    )
                })
            } else {
                continue;
            };
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        keys
    }

    /// `a`'s rendezvous cannot reach the quorum it needs, and will not: members of its
    /// generation are dead, frozen or cut off from it now. Adds `quorum_lost` to `keys`, and
    /// before it every member's death, freeze or partition that made it so: each is a root
    /// cause, not only the one a blocked rank happens to wait for.
    fn quorum_lost(&mut self, fold: &Fold, a: u32, keys: &mut Vec<RootCause>) {
        let m = &fold.membership;
        let Some(w) = m.wait_of(a) else { return };
        let reached = w.reachable.len() as u32;
        if !((w.quorum > 0 && reached < w.quorum) || reached < w.min_size) {
            return;
        }
        let members = generation_members(fold, m.generation_of.get(&a).copied());
        let mut gone = Vec::new();
        for &b in members.iter().filter(|&&b| b != a) {
            let Some(v) = fold.ranks.get(b as usize) else {
                continue;
            };
            // dead or frozen, and cut off besides: each holds the member away on its own
            let mut why = Vec::new();
            if matches!(v.state, RankState::Dead | RankState::Refused) {
                why.push(self.preempted(fold, b));
            } else if v.paused {
                why.push(self.paused(fold, b));
            }
            for (i, f) in fold.faults.iter().enumerate() {
                if f.active_at(fold.t) && f.separates(a, b) {
                    why.push(self.partitioned(fold, i));
                }
            }
            if why.is_empty() {
                continue;
            }
            gone.push(b);
            let planted = fold
                .workload
                .as_ref()
                .is_some_and(|w| w.mutations.contains(Mutation::QuorumNamesNoMember));
            for key in why.into_iter().filter(|_| !planted) {
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
        }
        if gone.is_empty() {
            return;
        }
        self.note(&RootCause::QuorumLost, || {
            (
                format!(
                    "the rendezvous for generation {} cannot succeed: {}; {} did not answer",
                    w.target,
                    w.reason,
                    members_phrase(&gone)
                ),
                gone.clone(),
            )
        });
        keys.push(RootCause::QuorumLost);
    }

    /// Why the rendezvous store (node `store`) cannot answer rank `a` now.
    fn store_down(&mut self, fold: &Fold, a: u32, store: u32) -> Option<RootCause> {
        // a restarted store has lost the rendezvous state: its death still counts
        let i = fold.faults.iter().rposition(|f| match f.kind {
            FaultKind::Preempt => f.begin_ns <= fold.t && f.ranks == [store],
            FaultKind::Pause => f.active_at(fold.t) && f.ranks == [store],
            FaultKind::Partition => f.active_at(fold.t) && f.separates(a, store),
            _ => false,
        })?;
        let f = &fold.faults[i];
        let key = match f.kind {
            FaultKind::Preempt => RootCause::Preempted(Rank(store)),
            FaultKind::Pause => RootCause::Paused(Rank(store)),
            _ => return Some(self.partitioned(fold, i)),
        };
        self.note(&key, || {
            let what = if f.kind == FaultKind::Preempt {
                "preempted"
            } else {
                "paused"
            };
            (
                format!(
                    "the rendezvous store (node {store}) was {what} at {}: no new generation \
                     can form without it",
                    fmt_ms(f.begin_ns)
                ),
                vec![store],
            )
        });
        Some(key)
    }

    /// `mismatch:b`: rank b sent the chunk `waiter` waits for in its call `call` to another
    /// rank, which did not expect it (`u`): b's schedule broke the agreement of the others'.
    pub fn misrouted(&mut self, waiter: u32, call: &CallView, u: &UnexpectedChunk) -> RootCause {
        let b = u.from;
        let key = RootCause::Mismatch(Rank(b));
        self.note(&key, || {
            (
                format!(
                    "rank {b} sent its chunk of step {}/{} of {} #{} ({}) to rank {}, which did \
                     not expect it ({}); rank {waiter} waits for it",
                    u.step + 1,
                    call.steps,
                    call.op,
                    call.seq.0,
                    call.algorithm,
                    u.rank,
                    u.why.describe()
                ),
                vec![b],
            )
        });
        key
    }

    /// `waiter`'s watchdog fired while the chunk from `from` was still on its way.
    pub fn late(&mut self, fold: &Fold, waiter: u32, from: u32) -> RootCause {
        let v = &fold.ranks[waiter as usize];
        let window = v.call.as_ref().map_or(v.since_ns, |c| c.called_ns);
        let during = |f: &&FaultView| f.begin_ns <= fold.t && f.end_ns.is_none_or(|e| e >= window);
        if let Some(i) = fold
            .faults
            .iter()
            .position(|f| during(&f) && f.cuts(from, waiter))
        {
            return self.partitioned(fold, i);
        }
        // a frozen receiver takes its chunks only after it resumes
        if let Some(k) = self.paused_during(fold, waiter, window) {
            return k;
        }
        if let Some(f) = fold
            .faults
            .iter()
            .filter(during)
            .find(|f| f.kind.is_link() && f.on_link(waiter, from))
        {
            // a rank the fault touches (its own, or a link's first end), never `from`
            let r = f.ranks.first().copied().unwrap_or(from);
            return self.slow(r, || {
                format!(
                    "rank {r} is a straggler: the chunk rank {waiter} waits for from rank \
                     {from} was still on its way when the watchdog fired ({})",
                    f.detail
                )
            });
        }
        // a sender frozen while its chunk was still leaving it (a real process can be stopped
        // between recording a send and the socket taking the bytes)
        if let Some(k) = self.paused_during(fold, from, window) {
            return k;
        }
        // no fault on this link: a partition, lossy or slow rank elsewhere still holds the
        // network back (retransmissions and late chunks take the ports the others share)
        if let Some(i) = fold
            .faults
            .iter()
            .position(|f| f.kind == FaultKind::Partition && during(&f))
        {
            return self.partitioned(fold, i);
        }
        if let Some(f) = fold.faults.iter().filter(during).find(|f| f.kind.is_link()) {
            // a rank the fault touches (its own, or a link's first end), never `from`
            let r = f.ranks.first().copied().unwrap_or(from);
            return self.slow(r, || {
                format!(
                    "rank {r} is a straggler: chunks were still on their way when the \
                     watchdog fired, as rank {from}'s for rank {waiter} ({})",
                    f.detail
                )
            });
        }
        // a rank frozen during the call catches up late, and its chunks hold the others' ports
        let paused: Vec<u32> = fold
            .faults
            .iter()
            .filter(|f| f.kind == FaultKind::Pause && during(f))
            .flat_map(|f| f.ranks.iter().copied())
            .collect();
        for r in paused {
            if let Some(k) = self.paused_during(fold, r, window) {
                return k;
            }
        }
        if let Some(k) = self.held_back(fold, waiter, from, window) {
            return k;
        }
        if !touched(fold, from) {
            return self.watchdog_timeout(fold, waiter, || {
                format!("rank {from}'s chunk for rank {waiter} was still on its way")
            });
        }
        self.slow(from, || {
            format!(
                "rank {from} is a straggler: its chunk for rank {waiter} was still on its \
                 way when the watchdog fired"
            )
        })
    }

    /// No fault on `waiter` or `from` explains why `waiter`'s call (from `window` on) is still
    /// waiting for `from` (its chunk late, or `from` still working): the lateness comes from
    /// the chain of calls that led here (a message a partition dropped and sent again late, a
    /// frozen or slow rank). The fault that overlapped the oldest call still waiting, if any.
    fn held_back(
        &mut self,
        fold: &Fold,
        waiter: u32,
        from: u32,
        window: Nanos,
    ) -> Option<RootCause> {
        let oldest = fold
            .ranks
            .iter()
            .filter_map(|v| v.call.as_ref().map(|c| c.called_ns))
            .min()
            .map_or(window, |t| t.min(window));
        let earlier = |f: &&FaultView| f.begin_ns <= fold.t && f.end_ns.is_none_or(|e| e >= oldest);
        if let Some(i) = fold
            .faults
            .iter()
            .position(|f| f.kind == FaultKind::Partition && earlier(&f))
        {
            return Some(self.partitioned(fold, i));
        }
        let paused: Vec<u32> = fold
            .faults
            .iter()
            .filter(|f| f.kind == FaultKind::Pause && earlier(f))
            .flat_map(|f| f.ranks.iter().copied())
            .collect();
        for r in paused {
            if let Some(k) = self.paused_during(fold, r, oldest) {
                return Some(k);
            }
        }
        if let Some(f) = fold
            .faults
            .iter()
            .filter(earlier)
            .find(|f| f.kind.is_straggler())
        {
            let r = f.ranks.first().copied().unwrap_or(from);
            return Some(self.slow(r, || {
                format!(
                    "rank {r} is a straggler: it held back the calls that led to rank \
                     {waiter}'s, still waiting for rank {from} when the watchdog fired ({})",
                    f.detail
                )
            }));
        }
        None
    }

    /// A watchdog of `waiter` fired while rank `r`, which it waits for, was still working.
    pub fn working(&mut self, fold: &Fold, waiter: u32, r: u32) -> RootCause {
        let v = &fold.ranks[waiter as usize];
        let window = v.call.as_ref().map_or(v.since_ns, |c| c.called_ns);
        if let Some(k) = self.paused_during(fold, r, window) {
            return k;
        }
        if fold.ranks[r as usize].state == RankState::Done {
            // done, not working: the waiter fell behind on a faulty link of its own, or what
            // `r` sent before it finished was held up on the way
            if let Some(f) = fold
                .faults
                .iter()
                .rev()
                .find(|f| f.kind.is_link() && f.begin_ns <= fold.t && f.ranks.contains(&waiter))
            {
                let culprit = f.straggler(waiter);
                return self.slow(culprit, || {
                    format!(
                        "rank {waiter} fell behind on a faulty link ({}): rank {r} finished \
                         without it",
                        f.detail
                    )
                });
            }
            return self.late(fold, waiter, r);
        }
        if last_fault(fold, FaultKind::Slow, r).is_none() {
            if let Some(k) = self.held_back(fold, waiter, r, window) {
                return k;
            }
        }
        if !touched(fold, r) {
            return self.watchdog_timeout(fold, waiter, || {
                let v = &fold.ranks[r as usize];
                match v.state {
                    RankState::Computing => {
                        format!("rank {r} was still computing iteration {}", v.iteration)
                    }
                    _ => format!(
                        "rank {r} was {} and had not reached the call",
                        v.state.name()
                    ),
                }
            });
        }
        self.slow(r, || {
            let v = &fold.ranks[r as usize];
            let doing = match v.state {
                RankState::Computing => format!("still computing iteration {}", v.iteration),
                _ => format!("{} and had not reached the collective", v.state.name()),
            };
            let why = last_fault(fold, FaultKind::Slow, r)
                .map(|f| format!(" ({})", f.detail))
                .unwrap_or_default();
            format!("rank {r} is a straggler: it was {doing} when the watchdog fired{why}")
        })
    }
}

/// The members of generation `g` as the trace reported them, or the whole world (generation
/// 0, or none formed yet).
fn generation_members(fold: &Fold, g: Option<u32>) -> Vec<u32> {
    g.and_then(|g| {
        fold.membership
            .generations
            .iter()
            .find(|x| x.generation == g)
    })
    .map_or_else(
        || (0..fold.ranks.len() as u32).collect(),
        |x| x.members.clone(),
    )
}

/// The most recent fault of `kind` that touches exactly rank `r`.
fn last_fault(fold: &Fold, kind: FaultKind, r: u32) -> Option<&FaultView> {
    fold.faults
        .iter()
        .rev()
        .find(|f| f.kind == kind && f.ranks == [r] && f.begin_ns <= fold.t)
}

/// Ranks that others waited for while a slow, delay or loss fault touched them.
pub(super) fn stragglers(fold: &Fold) -> Vec<Straggler> {
    let mut by_rank: BTreeMap<u32, (Nanos, Vec<u32>)> = BTreeMap::new();
    for l in fold.lateness_now() {
        if l.waited_ns == 0 {
            continue;
        }
        let e = by_rank.entry(l.rank).or_default();
        e.0 += l.waited_ns;
        if !e.1.contains(&l.fault) {
            e.1.push(l.fault);
        }
    }
    by_rank
        .into_iter()
        .map(|(rank, (waited, mut faults))| {
            faults.sort_unstable();
            let why: Vec<String> = faults
                .iter()
                .filter_map(|i| fold.faults.iter().rev().find(|f| f.index == *i))
                .map(|f| f.detail.clone())
                .collect();
            Straggler {
                straggler: RootCause::Slow(Rank(rank)),
                rank,
                faults,
                waited_ns: waited,
                text: format!(
                    "rank {rank} is a straggler, slow but not stalled: others waited {} for it \
                     in all ({})",
                    fmt_time(waited),
                    why.join("; ")
                ),
            }
        })
        .collect()
}

/// Groups of a slot's variants with equal parameters, as indices into `vs`, each group by the
/// index of its first variant.
fn param_groups(vs: &[Variant]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (k, v) in vs.iter().enumerate() {
        match groups.iter_mut().find(|g| vs[g[0]].sig.same_params(&v.sig)) {
            Some(g) => g.push(k),
            None => groups.push(vec![k]),
        }
    }
    groups
}

/// Where each variant of one slot stands in its ranks' programs, and which of those places
/// compare: what `CauseBook::judge` orders the groups of variants by.
struct Sites<'a> {
    fold: &'a Fold,
    slot: Slot,
    vs: &'a [Variant],
    /// Each variant's call among the collective calls its program makes along the slot's
    /// group, and its place there.
    along: Vec<Option<(Vec<&'a OpCall>, u32)>>,
    /// Every variant's program makes the same collective calls along the group (the stages
    /// of a pipeline).
    same_calls: bool,
    /// Call sites compare: within one program, or between programs of the same calls.
    comparable: bool,
    /// The two ends of a message: where each end's program makes this message's number on
    /// the pair.
    planned: Vec<Option<(u32, u32)>>,
    /// The lowest rank that runs the declared program, when some ranks run programs of their
    /// own.
    reference: Option<u32>,
    /// At least two groups hold ranks of the reference's program: they compare by call site
    /// among themselves.
    by_peers: bool,
}

impl<'a> Sites<'a> {
    fn of(fold: &'a Fold, slot: Slot, vs: &'a [Variant], groups: &[Vec<usize>]) -> Sites<'a> {
        let w = fold.workload.as_deref();
        let callers = || vs.iter().flat_map(|v| v.ranks.iter().copied());
        // call sites compare within one program, or between programs that make the same
        // collective calls along the slot's group (the stages of a pipeline): there by the
        // place of the call among those
        let along: Vec<Option<(Vec<&OpCall>, u32)>> = vs
            .iter()
            .map(|v| w.and_then(|w| along_site(w, v.ranks.first().copied()?, v.sig.index)))
            .collect();
        let same_calls = along.iter().all(|a| {
            a.as_ref()
                .zip(along[0].as_ref())
                .is_some_and(|(a, b)| a.0 == b.0)
        });
        let comparable = slot.pair.is_none()
            && (same_calls || callers().all(|r| callers().all(|q| fold.same_program(r, q))));
        // the two ends of a message: each end's call is in place where its program makes this
        // message's number on the pair; a rank whose program makes it earlier skipped an
        // earlier message, one whose program makes it later made an extra call
        let planned: Vec<Option<(u32, u32)>> = vs
            .iter()
            .map(|v| {
                (slot.generation.0 == 0)
                    .then(|| fold.message_site(*v.ranks.first()?, &slot))
                    .flatten()
            })
            .collect();
        // when some ranks run programs of their own, the ranks that run one declared program
        // still compare by call site among themselves: a skip shows there as anywhere
        let reference = callers().filter(|&r| fold.declared(r)).min();
        let mut sites = Sites {
            fold,
            slot,
            vs,
            along,
            same_calls,
            comparable,
            planned,
            reference,
            by_peers: false,
        };
        sites.by_peers = groups
            .iter()
            .filter(|g| g.iter().any(|&k| sites.peers(k)))
            .count()
            >= 2;
        sites
    }

    /// Variant `k`'s call is in place: where its program makes this message's number.
    fn in_place(&self, k: usize) -> bool {
        self.planned[k] == Some(self.vs[k].sig.site())
    }

    /// Variant `k`'s call site: its place along the group where programs make the same
    /// calls, else its place in its own program.
    fn site_of(&self, k: usize) -> (u32, u32) {
        match (&self.along[k], self.same_calls) {
            (Some((_, at)), true) => (self.vs[k].sig.iteration, *at),
            _ => self.vs[k].sig.site(),
        }
    }

    /// Variant `k`'s ranks run the reference's program, where sites do not compare at large.
    fn peers(&self, k: usize) -> bool {
        !self.comparable
            && self.slot.pair.is_none()
            && self.reference.is_some_and(|q| {
                self.vs[k]
                    .ranks
                    .iter()
                    .all(|&r| self.fold.same_program(r, q))
            })
    }

    /// Variant `v` is the call as its rank's program writes it (a program of its own, or the
    /// declared one).
    fn declared(&self, v: &Variant) -> bool {
        let Some(w) = self.fold.workload.as_deref() else {
            return false;
        };
        v.ranks.iter().any(|&r| {
            let written = (r as usize) < w.program_of.len();
            written
                .then(|| w.program(r).call(v.sig.index))
                .flatten()
                .is_some_and(|o| {
                    o.op == v.sig.op
                        && o.algorithm == v.sig.algorithm
                        && o.bytes == v.sig.bytes
                        && o.root == v.sig.root
                        && o.reduce == v.sig.reduce
                        && o.dtype == v.sig.dtype
                        && w.elements == v.sig.elements
                })
        })
    }

    /// How right a group of variants is, the largest the rightest (see `CauseBook::judge`): the
    /// earliest call site, then in place, the declared call, ranks of the declared program,
    /// the most ranks, the lowest rank.
    #[allow(clippy::type_complexity)]
    fn rank_key(
        &self,
        g: &[usize],
    ) -> (
        std::cmp::Reverse<(u32, u32)>,
        bool,
        bool,
        bool,
        u32,
        std::cmp::Reverse<u32>,
    ) {
        let vs = self.vs;
        let count: u32 = g.iter().map(|&k| vs[k].count).sum();
        let decl = g.iter().any(|&k| self.declared(&vs[k]));
        let conforming = g
            .iter()
            .any(|&k| vs[k].ranks.iter().any(|&r| self.fold.declared(r)));
        let site = if self.comparable {
            g.iter().map(|&k| self.site_of(k)).min().unwrap_or((0, 0))
        } else if self.by_peers {
            g.iter()
                .filter(|&&k| self.peers(k))
                .map(|&k| self.site_of(k))
                .min()
                .unwrap_or((u32::MAX, u32::MAX))
        } else {
            (0, 0)
        };
        let low = g
            .iter()
            .flat_map(|&k| vs[k].ranks.iter().copied())
            .min()
            .unwrap_or(u32::MAX);
        let placed = g.iter().any(|&k| self.in_place(k));
        (
            std::cmp::Reverse(site),
            placed,
            decl,
            conforming,
            count,
            std::cmp::Reverse(low),
        )
    }

    /// Variant `k`, against the right variant `main`, is a skip (its rank is at a later call of
    /// the same program, or its message comes earlier in its program than here) rather than a
    /// mismatch.
    fn skipped(&self, k: usize, main: usize) -> bool {
        let v = &self.vs[k];
        ((self.comparable || (self.by_peers && self.peers(k) && self.peers(main)))
            && self.site_of(k) > self.site_of(main))
            || self.planned[k].is_some_and(|p| p < v.sig.site() && self.in_place(main))
    }

    /// What rank `r` of variant `k` did, against the right variant `main` that `majority`
    /// called.
    fn culprit_text(
        &self,
        r: u32,
        k: usize,
        main: usize,
        skipped: bool,
        majority: &[u32],
    ) -> String {
        let (v, want) = (&self.vs[k], &self.vs[main].sig);
        let seq = self.slot.seq.0;
        if let (true, Some(at), Some(pair)) = (skipped, self.planned[k], self.slot.pair) {
            let (dir, other) = if v.sig.op == OpKind::Send {
                ("to", pair.1)
            } else {
                ("from", pair.0)
            };
            format!(
                "rank {r} skipped an earlier {op} {dir} rank {other}: its call at \
                 iteration {}, op {} is {op} #{seq} on the pair, which its program \
                 makes at iteration {}, op {}, so it meets rank {other}'s {} ({})",
                v.sig.iteration,
                v.sig.index,
                at.0,
                at.1,
                call_name(want, seq),
                differences(&v.sig, want),
                op = v.sig.op,
            )
        } else if skipped {
            format!(
                "rank {r} skipped {}: its call #{seq} is {}, a later call of its \
                 program, while {} called the former",
                call_name(want, seq),
                call_name(&v.sig, seq),
                ranks_phrase(majority)
            )
        } else {
            format!(
                "rank {r} called {} with {}, unlike {}",
                call_name(&v.sig, seq),
                differences(&v.sig, want),
                ranks_phrase(majority)
            )
        }
    }
}

/// The collective calls `rank`'s program (as written) makes along the group of its call
/// `index`, and the place of that call among them.
pub(super) fn along_site(w: &WorkloadConfig, rank: u32, index: u32) -> Option<(Vec<&OpCall>, u32)> {
    if rank as usize >= w.program_of.len() {
        return None;
    }
    let along = w.program(rank).call(index)?.along;
    let calls = collectives_along(w, rank, along);
    let at = calls.iter().position(|c| c.0 == index)? as u32;
    Some((calls.into_iter().map(|c| c.1).collect(), at))
}

/// The collective calls of `rank`'s program (as written) along `along`, with their indices.
fn collectives_along(w: &WorkloadConfig, rank: u32, along: Along) -> Vec<(u32, &OpCall)> {
    if rank as usize >= w.program_of.len() {
        return Vec::new();
    }
    w.program(rank)
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Call { index, call } if call.along == along && !call.op.point_to_point() => {
                Some((*index, call))
            }
            _ => None,
        })
        .collect()
}

/// Where two ranks' calls part in a group, by their call sites.
struct SiteShift {
    /// The seq of the first call from another site.
    seq: u64,
    op: OpKind,
    /// The culprit's site there, and the other's.
    mine: String,
    theirs: String,
    shift: Shift,
}

/// Where the calls `a` and `b` issued in the group (and generation) of `slot` first come from
/// different sites (both named by the scenario), and how `a`'s later calls line up with `b`'s
/// ([`shift`]): a call added or skipped that the engine matched with the next one because its
/// parameters are the same, as a real job does. Reads the calls each rank keeps
/// ([`CALL_HISTORY`](super::fold::CALL_HISTORY)).
fn site_shift(fold: &Fold, a: u32, b: u32, slot: Slot) -> Option<SiteShift> {
    let (w, sites) = (fold.workload.as_deref()?, fold.call_sites.as_deref()?);
    let calls = |r: u32| -> BTreeMap<u64, (&CallSig, Option<&str>)> {
        let Some(v) = fold.ranks.get(r as usize) else {
            return BTreeMap::new();
        };
        (v.history.iter())
            .filter(|c| {
                c.slot.pair.is_none()
                    && (c.slot.group, c.slot.generation) == (slot.group, slot.generation)
            })
            .map(|c| (c.slot.seq.0, (&c.sig, sites.site(w, r, c.sig.index))))
            .collect()
    };
    let (mine, theirs) = (calls(a), calls(b));
    let (&s, &(sig, site)) = mine.iter().find(
        |(s, (_, x))| matches!((x, theirs.get(s)), (Some(p), Some((_, Some(q)))) if p != q),
    )?;
    let agree = |c: u64, r: u64| {
        let ((x, p), (y, q)) = (mine.get(&c)?, theirs.get(&r)?);
        Some(x.same_params(y) && p == q)
    };
    let shift = shift::shift(s, agree)?;
    Some(SiteShift {
        seq: s,
        op: sig.op,
        mine: site?.to_string(),
        theirs: theirs.get(&s)?.1?.to_string(),
        shift,
    })
}

/// Whether ranks `a` and `b` make the same collective calls (as their programs write them)
/// along the group of `a`'s call `index`: then neither's call there is extra.
pub(super) fn same_collectives(fold: &Fold, a: u32, b: u32, index: u32) -> bool {
    let Some(w) = fold.workload.as_deref() else {
        return false;
    };
    let Some((mine, _)) = along_site(w, a, index) else {
        return false;
    };
    let along = mine.first().map_or(Along::World, |c| c.along);
    let theirs: Vec<&OpCall> = collectives_along(w, b, along)
        .into_iter()
        .map(|c| c.1)
        .collect();
    mine == theirs
}

/// Where rank `b`'s program (as written) makes the collective call that is rank `a`'s call
/// `index`, when the two make the same collective calls along its group (the stages of a
/// pipeline): the index of the call at the same place among those.
pub(super) fn site_in(fold: &Fold, a: u32, b: u32, index: u32) -> Option<u32> {
    if !same_collectives(fold, a, b, index) {
        return None;
    }
    let w = fold.workload.as_deref()?;
    let (mine, at) = along_site(w, a, index)?;
    let along = mine.first()?.along;
    collectives_along(w, b, along).get(at as usize).map(|c| c.0)
}

/// Whether a fault that can make rank `r` a straggler (slow, delay, loss) touched it: its
/// process, or a link it is an end of.
fn touched(fold: &Fold, r: u32) -> bool {
    fold.faults
        .iter()
        .any(|f| f.kind.is_straggler() && f.ranks.contains(&r))
}
