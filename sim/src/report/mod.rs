//! The result of `ringside run`: the object `--json` prints, and the same in sentences.
//!
//! Root causes stay [`RootCause`] values in the report; they become strings only as it is
//! written out (serde, sentences). The sentences that say who is blocked, waiting for whom, and
//! why are written by [`text`], for `run`, `explain` and `import` alike.

pub mod text;

use crate::budget::Budget;
use crate::cause::{listed, RootCause};
use crate::diagnose::{Blocked, CallOp, Diagnosis, Fold, OpView, QueryView, Straggler, Via};
use crate::scenario::{Expect, Outcome};
use crate::units::{fmt_ms, fmt_time, Nanos};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpReport {
    pub iteration: u32,
    pub index: u32,
    pub op: CallOp,
    pub algorithm: Via,
    pub group: u32,
    pub generation: u32,
    pub seq: u64,
    pub bytes: u64,
    /// Earliest call.
    pub start_ns: Nanos,
    /// Latest completion (null while some rank has not completed).
    pub end_ns: Option<Nanos>,
    pub ranks_completed: u32,
    pub ranks_called: u32,
    pub correct: bool,
    /// A message (a send and its recv): its sender and receiver; `seq` is its order between
    /// them in `group`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlockedReport {
    pub rank: u32,
    pub op: CallOp,
    pub algorithm: Via,
    pub seq: u64,
    /// 1-based step, and the number of steps.
    pub step: u32,
    pub steps: u32,
    pub waiting_for: Vec<u32>,
    pub since_ns: Nanos,
    /// The root causes this rank waits on.
    pub root_causes: Vec<RootCause>,
    /// The group, when it is not the world (always for a send or recv).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<u32>,
    /// A send or recv: the other end (`op` says the direction).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GenerationReport {
    pub generation: u32,
    pub members: Vec<u32>,
    pub formed_ns: Nanos,
}

/// A registry query: what one rank saw of a group, and what the scenario expected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QueryReport {
    pub t_ns: Nanos,
    pub rank: u32,
    pub scope: String,
    pub group: String,
    pub members: Vec<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<Vec<u32>>,
}

impl QueryReport {
    pub fn from_view(q: &QueryView) -> QueryReport {
        QueryReport {
            t_ns: q.t,
            rank: q.rank,
            scope: q.scope.clone(),
            group: q.group.clone(),
            members: q.members.clone(),
            expected: q.expected.clone(),
        }
    }

    pub fn ok(&self) -> bool {
        self.expected.as_ref().is_none_or(|e| *e == self.members)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ExpectReport {
    pub ok: bool,
    pub failures: Vec<String>,
    /// How many expectations were checked (`[expect]` keys and registry queries' members).
    #[serde(skip)]
    pub checked: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReport {
    pub scenario: String,
    pub seed: u64,
    pub outcome: Outcome,
    pub virtual_time_ns: Nanos,
    pub messages: u64,
    pub events: u64,
    pub digest: String,
    pub ops: Vec<OpReport>,
    pub blocked: Vec<BlockedReport>,
    pub root_causes: Vec<RootCause>,
    /// One paragraph per root cause.
    pub explanation: Vec<String>,
    /// The root causes and where they hold ranks up, in one sentence: the answer the first
    /// line gives (empty when nothing is blocked and no cause was found).
    #[serde(skip)]
    pub culprit: String,
    /// Ranks others waited for while a slow, delay or loss fault touched them (slow, not
    /// stalled).
    pub stragglers: Vec<Straggler>,
    pub generations: Vec<GenerationReport>,
    /// Registry queries (none without a registry workload).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub queries: Vec<QueryReport>,
    /// The budget that ended the run early (`timed_out`), when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    pub expect: ExpectReport,
}

impl OpReport {
    /// The call in one line: `iter 0 op 1: allreduce #2 in group 1 (ring, 1024 bytes) 3.2ms —
    /// 4/4 ranks, WRONG RESULT`; `rebuilt` names its generation (sequence numbers start again
    /// in every generation).
    pub fn line(&self, rebuilt: bool) -> String {
        let o = self;
        let dur = match o.end_ns {
            Some(e) => fmt_time(e - o.start_ns),
            None => "unfinished".into(),
        };
        let group = if o.group == 0 {
            String::new()
        } else {
            format!(" in group {}", o.group)
        };
        let pair = match (o.from, o.to) {
            (Some(a), Some(b)) => format!(" {a}->{b}"),
            _ => String::new(),
        };
        let generation = if rebuilt {
            format!(" in generation {}", o.generation)
        } else {
            String::new()
        };
        format!(
            "iter {} op {}: {} #{}{pair}{group}{generation} ({}, {} bytes) {} — {}/{} ranks{}",
            o.iteration,
            o.index,
            o.op,
            o.seq,
            o.algorithm,
            o.bytes,
            dur,
            o.ranks_completed,
            o.ranks_called,
            if o.correct { "" } else { ", WRONG RESULT" }
        )
    }

    pub fn from_view(o: &OpView) -> OpReport {
        OpReport {
            iteration: o.iteration,
            index: o.index,
            op: o.op.into(),
            algorithm: o.algorithm.into(),
            group: o.group.0,
            generation: o.generation.0,
            seq: o.seq.0,
            bytes: o.bytes,
            start_ns: o.start_ns,
            end_ns: if o.ranks_completed >= o.ranks_called {
                o.end_ns
            } else {
                None
            },
            ranks_completed: o.ranks_completed,
            ranks_called: o.ranks_called,
            // agreement: every rank of an allreduce, broadcast or allgather holds the same
            // bits; a reduce-scatter's ranks hold different blocks
            correct: o.correct && (!o.op.same_result_everywhere() || o.results.len() <= 1),
            from: o.pair.map(|p| p.0),
            to: o.pair.map(|p| p.1),
        }
    }
}

impl BlockedReport {
    pub fn from_blocked(b: &Blocked) -> BlockedReport {
        BlockedReport {
            rank: b.rank,
            op: b.op.clone(),
            algorithm: b.algorithm.clone(),
            seq: b.seq,
            step: b.step + 1,
            steps: b.steps,
            waiting_for: b.waiting_for.clone(),
            since_ns: b.since_ns,
            root_causes: b.causes.clone(),
            group: (b.group != 0 || b.peer.is_some()).then_some(b.group),
            peer: b.peer,
        }
    }
}

fn ranks_list(r: &[u32]) -> String {
    r.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// One paragraph per root cause of a simulated run, as [`text::explain`] writes them.
pub fn explain(d: &Diagnosis) -> Vec<String> {
    text::explain(d, &text::Simulated)
}

/// One sentence per straggler.
pub fn explain_stragglers(d: &Diagnosis) -> Vec<String> {
    d.stragglers.iter().map(|s| s.text.clone()).collect()
}

/// Checks `expect` against a report.
pub fn check_expect(expect: Option<&Expect>, r: &RunReport) -> ExpectReport {
    let mut failures = Vec::new();
    let mut checked = 0;
    if let Some(e) = expect {
        checked += [
            e.outcome.is_some(),
            e.blocked.is_some(),
            e.root_causes.is_some(),
            e.correct.is_some(),
            e.generations.is_some(),
        ]
        .iter()
        .filter(|&&x| x)
        .count() as u32;
        if let Some(o) = e.outcome {
            if o != r.outcome {
                failures.push(format!("outcome: expected {o}, got {}", r.outcome));
            }
        }
        if let Some(b) = &e.blocked {
            let mut want = b.clone();
            want.sort_unstable();
            want.dedup();
            let mut got: Vec<u32> = r.blocked.iter().map(|b| b.rank).collect();
            got.sort_unstable();
            if want != got {
                failures.push(format!(
                    "blocked: expected [{}], got [{}]",
                    ranks_list(&want),
                    ranks_list(&got)
                ));
            }
        }
        if let Some(c) = &e.root_causes {
            // as sets of what the causes name (a deadlock's or a partition's ranks in any order)
            let want: BTreeSet<&RootCause> = c.iter().collect();
            let got: BTreeSet<&RootCause> = r.root_causes.iter().collect();
            if want != got {
                failures.push(format!(
                    "root_causes: expected [{}], got [{}]",
                    canonical_list(&want),
                    canonical_list(&got)
                ));
            }
        }
        if let Some(want) = e.correct {
            let got = r.ops.iter().all(|o| o.correct);
            if want != got {
                failures.push(format!("correct: expected {want}, got {got}"));
            }
        }
        if let Some(g) = e.generations {
            let got = r.generations.len() as u32;
            if g != got {
                failures.push(format!("generations: expected {g}, got {got}"));
            }
        }
    }
    // a registry query's `expect_members` is an expectation of its own
    checked += r.queries.iter().filter(|q| q.expected.is_some()).count() as u32;
    for q in r.queries.iter().filter(|q| !q.ok()) {
        failures.push(format!(
            "registry query by rank {} at {}: {} members [{}], expected [{}]",
            q.rank,
            fmt_ms(q.t_ns),
            q.group,
            ranks_list(&q.members),
            ranks_list(q.expected.as_deref().unwrap_or_default())
        ));
    }
    ExpectReport {
        ok: failures.is_empty(),
        failures,
        checked,
    }
}

/// Causes in canonical form, sorted as text.
fn canonical_list(causes: &BTreeSet<&RootCause>) -> String {
    let mut v: Vec<RootCause> = causes.iter().map(|c| c.canonical()).collect();
    v.sort_by_cached_key(|c| c.to_string());
    listed(&v)
}

impl RunReport {
    /// `12 collectives`, or `12 collectives and 6 sends`: the calls that completed.
    fn done(&self) -> String {
        let done = self.ops.iter().filter(|o| o.end_ns.is_some()).count();
        let sent = self
            .ops
            .iter()
            .filter(|o| o.end_ns.is_some() && o.from.is_some())
            .count();
        match sent {
            0 => text::count(done, "collective"),
            n => format!(
                "{} and {}",
                text::count(done - n, "collective"),
                text::count(n, "send")
            ),
        }
    }

    /// The first line of the report, the answer: `STALLED: hung:2 — ...` with the culprits,
    /// the fault class, the call and where the ranks it holds up are blocked, or `COMPLETED:
    /// 320 collectives on 1024 ranks in 3.2ms, all results correct`.
    pub fn verdict(&self) -> String {
        let t = fmt_ms(self.virtual_time_ns);
        let world = self.generations.first().map_or(0, |g| g.members.len());
        let wrong = self.ops.iter().filter(|o| !o.correct).count();
        let results = match wrong {
            0 => "all results correct".to_string(),
            n => format!("WRONG results in {}", text::count(n, "call")),
        };
        let done = self.done();
        match self.outcome {
            Outcome::Completed => {
                format!("COMPLETED: {done} on {world} ranks in {t}, {results}")
            }
            Outcome::Rebuilt => {
                let members = self.generations.last().map_or(0, |g| g.members.len());
                let left = if self.culprit.is_empty() {
                    String::new()
                } else {
                    format!("; left behind: {}", self.culprit)
                };
                format!(
                    "REBUILT: {} generations, the last of {members} ranks; {done} in {t}, \
                     {results}{left}",
                    self.generations.len()
                )
            }
            Outcome::TimedOut => {
                let why = match self.budget {
                    None => "the scenario's time_limit was reached".to_string(),
                    Some(b) => b.describe().to_string(),
                };
                if self.culprit.is_empty() {
                    format!("TIMED OUT: {why} at {t}, with {done} completed")
                } else {
                    format!("TIMED OUT: {why} at {t}; where it stood: {}", self.culprit)
                }
            }
            Outcome::Stalled if self.culprit.is_empty() => {
                "STALLED: no rank is waiting in a call, yet the work did not finish".into()
            }
            Outcome::Stalled => format!("STALLED: {}", self.culprit),
        }
    }

    /// The calls, one line each; past a screenful, one line per kind of call (op, algorithm,
    /// group size) with the calls that did not finish or went wrong still one line each.
    fn op_lines(&self, s: &mut String) {
        if self.ops.len() <= MAX_OP_LINES {
            self.op_each(s, self.ops.iter());
            return;
        }
        let mut kinds: BTreeMap<(String, String, u32), Kind> = BTreeMap::new();
        for o in &self.ops {
            let k = kinds
                .entry((o.op.to_string(), o.algorithm.to_string(), o.ranks_called))
                .or_default();
            k.calls += 1;
            k.groups.insert(o.group);
            k.bytes += o.bytes;
            if let Some(e) = o.end_ns {
                let d = e - o.start_ns;
                k.fastest = k.fastest.min(d);
                k.slowest = k.slowest.max(d);
            }
        }
        for ((op, algorithm, size), k) in &kinds {
            let took = if k.slowest == 0 && k.fastest == Nanos::MAX {
                "none finished".to_string()
            } else if k.fastest == k.slowest {
                fmt_time(k.fastest)
            } else {
                format!("{}-{}", fmt_time(k.fastest), fmt_time(k.slowest))
            };
            s.push_str(&format!(
                "  {op} ({algorithm}) in groups of {size}: {} calls in {} groups, {} bytes, {took}\n",
                k.calls,
                k.groups.len(),
                k.bytes
            ));
        }
        let odd: Vec<&OpReport> = self
            .ops
            .iter()
            .filter(|o| o.end_ns.is_none() || !o.correct)
            .collect();
        self.op_each(s, odd.iter().copied().take(MAX_OP_LINES));
        if odd.len() > MAX_OP_LINES {
            s.push_str(&format!(
                "  ... and {} more unfinished or wrong calls (all in --json)\n",
                odd.len() - MAX_OP_LINES
            ));
        }
    }

    /// One line per call.
    fn op_each<'a>(&self, s: &mut String, ops: impl Iterator<Item = &'a OpReport>) {
        let rebuilt = self.generations.len() > 1;
        for o in ops {
            s.push_str(&format!("  {}\n", o.line(rebuilt)));
        }
    }

    /// The report in sentences, for a terminal.
    pub fn human(&self) -> String {
        let mut s = self.verdict();
        s.push('\n');
        let t = fmt_ms(self.virtual_time_ns);
        let done = self.done();
        match self.outcome {
            crate::scenario::Outcome::Completed => s.push_str(&format!(
                "completed at {t}: {done} on {} messages, all results {}\n",
                self.messages,
                if self.ops.iter().all(|o| o.correct) {
                    "correct"
                } else {
                    "NOT correct"
                }
            )),
            crate::scenario::Outcome::Rebuilt => {
                s.push_str(&format!(
                    "rebuilt and completed at {t}: {} generations, {done} on {} messages\n",
                    self.generations.len(),
                    self.messages
                ));
                // ranks the rebuilt group went on without, still waiting where they were
                if !self.explanation.is_empty() {
                    s.push_str("left behind:\n");
                    for p in &self.explanation {
                        s.push_str(&format!("  {p}\n"));
                    }
                }
            }
            crate::scenario::Outcome::TimedOut => match self.budget {
                None => s.push_str(&format!(
                    "timed out at {t} (the scenario's time_limit) with {done} completed\n"
                )),
                Some(b) => {
                    // the run could still have gone on: say where it stood
                    s.push_str(&format!(
                        "timed out at {t}: {} with {done} completed\n",
                        b.describe()
                    ));
                    if !self.explanation.is_empty() {
                        s.push_str("where it stood:\n");
                        for p in &self.explanation {
                            s.push_str(&format!("  {p}\n"));
                        }
                    }
                }
            },
            crate::scenario::Outcome::Stalled => {
                s.push_str(&format!("stalled at {t}"));
                if self.explanation.is_empty() {
                    s.push_str(
                        ": no rank is waiting in a collective, but the workload did not finish\n",
                    );
                } else {
                    s.push_str(":\n");
                    for p in &self.explanation {
                        s.push_str(&format!("  {p}\n"));
                    }
                }
            }
        }
        if !self.stragglers.is_empty() {
            s.push_str("stragglers (slow, not stalled):\n");
            for st in &self.stragglers {
                s.push_str(&format!("  {}\n", st.text));
            }
        }
        if self.generations.len() > 1 {
            for g in &self.generations {
                s.push_str(&format!(
                    "  generation {}: ranks {} (formed at {})\n",
                    g.generation,
                    ranks_list(&g.members),
                    fmt_ms(g.formed_ns)
                ));
            }
        }
        for q in &self.queries {
            s.push_str(&format!(
                "  registry: rank {} sees {} = [{}] at {}{}\n",
                q.rank,
                q.group,
                ranks_list(&q.members),
                fmt_ms(q.t_ns),
                match &q.expected {
                    Some(e) if *e != q.members => format!(", EXPECTED [{}]", ranks_list(e)),
                    _ => String::new(),
                }
            ));
        }
        self.op_lines(&mut s);
        s.push_str(&format!(
            "seed {}, {} events, digest {}\n",
            self.seed, self.events, self.digest
        ));
        if self.expect.ok && self.expect.checked > 0 {
            s.push_str("expectations met\n");
        } else if self.expect.ok {
            s.push_str("no expectations to check (the scenario has no [expect])\n");
        } else {
            for f in &self.expect.failures {
                s.push_str(&format!("EXPECTATION FAILED: {f}\n"));
            }
        }
        s
    }
}

/// Past this many calls, the report gives one line per kind of call.
const MAX_OP_LINES: usize = 32;

/// The calls of one kind, summed up.
struct Kind {
    calls: usize,
    groups: BTreeSet<u32>,
    bytes: u64,
    fastest: Nanos,
    slowest: Nanos,
}

impl Default for Kind {
    fn default() -> Kind {
        Kind {
            calls: 0,
            groups: BTreeSet::new(),
            bytes: 0,
            fastest: Nanos::MAX,
            slowest: 0,
        }
    }
}

/// Builds the report of a finished run from its folded events and diagnosis.
#[allow(clippy::too_many_arguments)]
pub fn build(
    name: &str,
    seed: u64,
    outcome: Outcome,
    end_ns: Nanos,
    fold: &Fold,
    diagnosis: &Diagnosis,
    digest: String,
    expect: Option<&Expect>,
) -> RunReport {
    let mut r = RunReport {
        scenario: name.to_string(),
        seed,
        outcome,
        virtual_time_ns: end_ns,
        messages: fold.messages_sent,
        events: fold.events,
        digest,
        ops: fold.ops.values().map(OpReport::from_view).collect(),
        blocked: diagnosis
            .blocked
            .iter()
            .map(BlockedReport::from_blocked)
            .collect(),
        root_causes: diagnosis.root_causes(),
        explanation: explain(diagnosis),
        culprit: if diagnosis.causes.is_empty() && diagnosis.blocked.is_empty() {
            String::new()
        } else {
            text::culprit(diagnosis, &text::Simulated)
        },
        stragglers: diagnosis.stragglers.clone(),
        generations: generations(fold),
        queries: fold
            .membership
            .queries
            .iter()
            .map(QueryReport::from_view)
            .collect(),
        budget: None,
        expect: ExpectReport::default(),
    };
    // in the order the workload issues them; the sub-groups of one call by group number
    r.ops
        .sort_by_key(|o| (o.generation, o.iteration, o.index, o.group, o.seq));
    r.expect = check_expect(expect, &r);
    r
}

/// Generation 0 (the whole world, from the start), then every generation formed, once each.
fn generations(fold: &Fold) -> Vec<GenerationReport> {
    let mut v = vec![GenerationReport {
        generation: 0,
        members: (0..fold.ranks.len() as u32).collect(),
        formed_ns: 0,
    }];
    v.extend(
        fold.membership
            .generations
            .iter()
            .filter(|g| g.generation > 0)
            .map(|g| GenerationReport {
                generation: g.generation,
                members: g.members.clone(),
                formed_ns: g.formed_ns,
            }),
    );
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(causes: &[&str]) -> RunReport {
        RunReport {
            scenario: "s".into(),
            seed: 1,
            outcome: Outcome::Stalled,
            virtual_time_ns: 0,
            messages: 0,
            events: 0,
            digest: String::new(),
            ops: Vec::new(),
            blocked: Vec::new(),
            root_causes: causes.iter().map(|c| c.parse().unwrap()).collect(),
            explanation: Vec::new(),
            culprit: String::new(),
            stragglers: Vec::new(),
            generations: Vec::new(),
            queries: Vec::new(),
            budget: None,
            expect: ExpectReport::default(),
        }
    }

    fn expecting(causes: &[&str]) -> Expect {
        Expect {
            root_causes: Some(causes.iter().map(|c| c.parse().unwrap()).collect()),
            ..Expect::default()
        }
    }

    #[test]
    fn expected_root_causes_compare_as_sets() {
        let r = report(&["partitioned:0,1|2,3", "deadlock:4,5,6"]);
        for want in [
            ["partitioned:0,1|2,3", "deadlock:4,5,6"],
            ["deadlock:6,4,5", "partitioned:3,2|1,0"],
            ["deadlock:5,6,4", "partitioned:2,3|0,1"],
        ] {
            let e = check_expect(Some(&expecting(&want)), &r);
            assert!(e.ok, "{want:?}: {:?}", e.failures);
        }
        let e = check_expect(Some(&expecting(&["deadlock:4,5", "slow:10", "slow:9"])), &r);
        // canonical, sorted as text
        assert_eq!(
            e.failures,
            [
                "root_causes: expected [deadlock:4,5, slow:10, slow:9], got [deadlock:4,5,6, \
                 partitioned:0,1|2,3]"
            ]
        );
    }
}
