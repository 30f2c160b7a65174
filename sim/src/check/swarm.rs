//! The swarm behind `ringside check`: many seeded cases, each checked against every property;
//! the first failure is shrunk to a minimal scenario and written out with its trace.
//!
//! Case `i` of a swarm with seed `S` is generated from its own seed `case_seed(S, i)` (a fixed
//! SplitMix mix of the two): a proptest [`TestRunner`] seeded with it (ChaCha) draws the
//! case's value tree, so the same `S` and `i` give the same case on every machine, whatever
//! the shard or the order cases run in. Sharding splits one seed range among N machines:
//! case `i` belongs to shard `i % N`.
//!
//! On a failure the value tree shrinks it (`simplify` while the same property still fails,
//! `complicate` when a step went too far), then [`shrink::smaller`] keeps proposing
//! structurally smaller scenarios while the property still fails. The minimal case is written as
//! `<property>-<case seed>.toml` (a scenario file that `ringside run` accepts, checked to parse
//! back to the same scenario) and `<property>-<case seed>.jsonl` (its trace, for
//! `ringside replay`): the trace its last run kept, under the header of the renamed scenario.
//!
//! Wall-clock time is read here and only here — for the `--time` budget and the summary; it
//! never reaches a run.

use super::properties::{bad_user_name, Property, UserProperty, Violation};
pub use super::properties::{GENERATOR, NO_PANIC};
use super::shrink;
use super::strategy::{cases, cases_on, Gen};
use super::{Case, Mutations, Run};
use crate::budget::{Budget, Limits};
use crate::engine::SUPPORT;
use crate::proto::data::mix;
use crate::replay::{replay, ReplayOutcome};
use crate::scenario::{self, unsupported, validate, Scenario};
use crate::trace::TraceWriter;
use proptest::strategy::{BoxedStrategy, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The one place wall-clock time is read.
#[allow(clippy::disallowed_methods)] // the swarm's budget and summary, never a simulated run
fn wall_clock() -> Instant {
    Instant::now()
}

/// The seed of case `i` of a swarm seeded with `seed`.
pub fn case_seed(seed: u64, i: u64) -> u64 {
    mix(seed ^ mix(i ^ 0x6368_6563_6b21_2121))
}

/// Which cases this process runs: case `i` belongs to shard `i % count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    /// `I/N`, with `I < N`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}` is not a shard: write I/N with 0 <= I < N, e.g. 0/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u64 = i.trim().parse().map_err(|_| bad())?;
        let count: u64 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// How many of `cases` (across all shards) fall in this one: the i < cases with
    /// i % count == index.
    pub fn cases_of(&self, cases: u64) -> u64 {
        let count = self.count.max(1);
        cases / count + u64::from(self.index < cases % count)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What a swarm runs.
#[derive(Clone, Debug)]
pub struct Swarm {
    pub seed: u64,
    /// Cases across all shards.
    pub cases: u64,
    pub shard: Shard,
    /// Stop starting new cases after this much wall-clock time.
    pub budget: Option<Duration>,
    /// Lay generated fault schedules on these scenarios; empty: generate whole scenarios.
    pub scenarios: Vec<Scenario>,
    pub gen: Gen,
    /// What each case is checked against, in order (by default every property).
    pub properties: Vec<Property>,
    /// The program's own properties, checked after `properties`, in order.
    pub user_properties: Vec<Arc<dyn UserProperty>>,
    /// Where a failing case's files go; None writes nothing.
    pub out_dir: Option<PathBuf>,
    /// Most shrink steps (each runs the case once). Shrinking a failure found near the end of
    /// the budget may run past it: a small scenario is worth the wait.
    pub max_shrink_steps: u32,
    #[doc(hidden)]
    pub mutations: Mutations,
    /// Events a case's run may process. A case is checked from its trace, which is kept in
    /// memory (about 300 bytes an event at most, with the events read back from it): a case
    /// whose run reaches this budget is counted as too long, and its properties are not
    /// checked.
    pub max_events: u64,
}

/// Events a case's run may process unless told otherwise: generated cases take a few
/// thousand, and a million keeps a case's trace within about 300 MB.
pub const CASE_MAX_EVENTS: u64 = 1_000_000;

impl Default for Swarm {
    fn default() -> Self {
        Swarm {
            seed: 0,
            cases: 256,
            shard: Shard::default(),
            budget: None,
            scenarios: Vec::new(),
            gen: Gen::default(),
            properties: Property::all().collect(),
            user_properties: Vec::new(),
            out_dir: None,
            max_shrink_steps: 2_000,
            mutations: Mutations::NONE,
            max_events: CASE_MAX_EVENTS,
        }
    }
}

/// Hears how a swarm is going (the CLI draws a progress bar or prints lines).
pub trait Observer {
    /// After each case: cases done in this shard, the shard's total, wall time so far.
    fn progress(&mut self, _done: u64, _total: u64, _elapsed: Duration) {}
    /// A case failed `property`; shrinking starts.
    fn failed(&mut self, _property: &str, _case: u64) {}
    /// One shrink step was tried.
    fn shrink_step(&mut self, _steps: u32) {}
}

/// Hears nothing.
pub struct Quiet;
impl Observer for Quiet {}

/// The files written for a failing case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Files {
    pub scenario: PathBuf,
    pub trace: PathBuf,
    /// Whether both files were written (why not, when they were not).
    pub written: Result<(), String>,
    /// Whether `ringside replay` of the trace reproduces it (a determinism failure does not).
    pub replay: Result<(), String>,
}

/// Why a case failed.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// A property broke.
    Violated(Violation),
    /// A user property broke: its name, and what broke.
    User {
        property: &'static str,
        message: String,
    },
    /// The run, or a check, panicked: the message.
    Panicked(String),
    /// The strategies generated a case that cannot run, or none at all (a bug in them); or a
    /// user property cannot be told from the others by its name.
    Invalid(String),
}

impl Failure {
    /// The name the failure is reported and its files are named under: the property's,
    /// [`NO_PANIC`] or [`GENERATOR`].
    pub fn name(&self) -> &'static str {
        match self {
            Failure::Violated(v) => v.property.name(),
            Failure::User { property, .. } => property,
            Failure::Panicked(_) => NO_PANIC,
            Failure::Invalid(_) => GENERATOR,
        }
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        match self {
            Failure::Violated(v) => &v.message,
            Failure::User { message, .. } => message,
            Failure::Panicked(m) | Failure::Invalid(m) => m,
        }
    }

    /// The built-in property that broke, if one did.
    pub fn property(&self) -> Option<Property> {
        match self {
            Failure::Violated(v) => Some(v.property),
            Failure::User { .. } | Failure::Panicked(_) | Failure::Invalid(_) => None,
        }
    }
}

/// A case that failed, shrunk.
#[derive(Clone, Debug)]
pub struct Found {
    /// Why the shrunk case fails.
    pub failure: Failure,
    /// Index and seed of the case that failed first.
    pub case_index: u64,
    pub case_seed: u64,
    pub original: Case,
    pub shrunk: Case,
    /// Shrink steps tried.
    pub shrink_steps: u32,
    pub files: Option<Files>,
}

impl Found {
    /// Base name of the files: `<property>-<case seed>`.
    pub fn file_stem(&self) -> String {
        format!("{}-{}", self.failure.name(), self.case_seed)
    }
}

/// How a swarm ended.
#[derive(Clone, Debug)]
pub struct Summary {
    /// Cases run in this shard.
    pub cases: u64,
    /// Property checks made (cases x properties, fewer when a case fails).
    pub checks: u64,
    pub properties: usize,
    pub elapsed: Duration,
    /// The wall-clock budget ran out before every case of the shard ran.
    pub out_of_time: bool,
    /// Cases whose run reached the event budget ([`Swarm::max_events`]): counted in `cases`,
    /// their properties not checked.
    pub too_long: u64,
    pub found: Option<Box<Found>>,
}

impl Summary {
    pub fn cases_per_sec(&self) -> f64 {
        self.cases as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

fn rng_for(case_seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    let mut x = case_seed;
    for chunk in bytes.chunks_mut(8) {
        x = mix(x);
        chunk.copy_from_slice(&x.to_le_bytes());
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// Why a generated scenario cannot be run (a bug in the strategies).
fn invalid(s: &Scenario) -> Option<String> {
    validate(s)
        .and_then(|()| unsupported(s, &SUPPORT))
        .err()
        .map(|(key, message)| format!("generated an invalid scenario: {key}: {message}"))
}

/// A case checked: how many property checks were made, the trace its run kept (up to the
/// panic, if it panicked), and the first failure.
struct Checked {
    checks: u64,
    trace: Vec<u8>,
    failure: Option<Failure>,
    /// The run reached the event budget: nothing was checked.
    too_long: bool,
}

/// A property a swarm checks: a built-in one, or one of the program's own.
#[derive(Clone, Copy)]
enum Judge<'a> {
    Builtin(Property),
    User(&'a dyn UserProperty),
}

impl Judge<'_> {
    fn name(&self) -> &'static str {
        match self {
            Judge::Builtin(p) => p.name(),
            Judge::User(u) => u.name(),
        }
    }

    fn check(&self, case: &Case, run: &Run) -> Result<(), Failure> {
        match self {
            Judge::Builtin(p) => p.check(case, run).map_err(Failure::Violated),
            Judge::User(u) => u.check(case, run).map_err(|message| Failure::User {
                property: u.name(),
                message,
            }),
        }
    }
}

/// Runs `case` once, within `max_events`, and checks `properties` in order, up to the first
/// that fails. A panic in the run or a check is a failure of [`NO_PANIC`].
fn check(case: &Case, properties: &[Judge<'_>], max_events: u64) -> Checked {
    let mut trace = Vec::new();
    let limits = Limits {
        events: Some(max_events),
        ..Limits::default()
    };
    let run = match catch_unwind(AssertUnwindSafe(|| case.run_within(&mut trace, limits))) {
        Ok(out) if out.result.stop.budget() == Some(Budget::Events) => {
            return Checked {
                checks: 0,
                trace,
                failure: None,
                too_long: true,
            }
        }
        Ok(out) => Run::new(out, trace),
        Err(e) => {
            return Checked {
                checks: 0,
                trace,
                failure: Some(Failure::Panicked(panic_message(e.as_ref()))),
                too_long: false,
            }
        }
    };
    let mut checks = 0;
    let mut failure = None;
    for p in properties {
        checks += 1;
        match catch_unwind(AssertUnwindSafe(|| p.check(case, &run))) {
            Ok(Ok(())) => continue,
            Ok(Err(f)) => failure = Some(f),
            Err(e) => failure = Some(Failure::Panicked(panic_message(e.as_ref()))),
        }
        break;
    }
    Checked {
        checks,
        trace: run.trace,
        failure,
        too_long: false,
    }
}

fn panic_message(e: &(dyn std::any::Any + Send)) -> String {
    let what = e
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| e.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into());
    format!("the run panicked: {what}")
}

/// Whether `case` still fails the way named `name` (a panic counts for [`NO_PANIC`]): the
/// failure and the trace, if it does.
/// Whether the workload of `case` runs to completion on the real code once its faults are
/// taken away.
fn healthy_workload(case: &Case) -> bool {
    super::properties::workload_alone(case).0 == scenario::Outcome::Completed
}

fn still_fails(
    case: &Case,
    name: &str,
    properties: &[Judge<'_>],
    max_events: u64,
) -> Option<(Failure, Vec<u8>)> {
    if invalid(&case.scenario).is_some() {
        return None;
    }
    let only: Vec<Judge<'_>> = properties
        .iter()
        .copied()
        .filter(|p| p.name() == name)
        .collect();
    let checked = check(case, &only, max_events);
    match checked.failure {
        Some(f) if f.name() == name => Some((f, checked.trace)),
        _ => None,
    }
}

impl Swarm {
    /// What each case is checked against: the built-in properties, then the user's.
    fn judges(&self) -> Vec<Judge<'_>> {
        let builtin = self.properties.iter().map(|p| Judge::Builtin(*p));
        let user = self.user_properties.iter().map(|u| Judge::User(u.as_ref()));
        builtin.chain(user).collect()
    }

    /// Why the user properties cannot be told apart by name, if they cannot.
    fn bad_user_properties(&self) -> Option<String> {
        let mut seen = std::collections::BTreeSet::new();
        self.user_properties.iter().find_map(|u| {
            bad_user_name(u.name()).or_else(|| {
                (!seen.insert(u.name()))
                    .then(|| format!("two user properties are named `{}`", u.name()))
            })
        })
    }

    fn strategies(&self) -> Vec<BoxedStrategy<Case>> {
        if self.scenarios.is_empty() {
            vec![cases(&self.gen).boxed()]
        } else {
            self.scenarios
                .iter()
                .map(|s| cases_on(s, &self.gen).boxed())
                .collect()
        }
    }

    /// Case `i`: its value tree (for shrinking).
    fn tree(
        &self,
        strategies: &[BoxedStrategy<Case>],
        i: u64,
    ) -> Result<Box<dyn ValueTree<Value = Case>>, String> {
        let seed = case_seed(self.seed, i);
        let strategy = &strategies[(seed >> 32) as usize % strategies.len()];
        let mut runner = TestRunner::new_with_rng(
            Config {
                failure_persistence: None,
                ..Config::default()
            },
            rng_for(seed),
        );
        strategy
            .new_tree(&mut runner)
            .map(|t| Box::new(t) as Box<dyn ValueTree<Value = Case>>)
            .map_err(|r| format!("case {i} could not be generated: {r}"))
    }

    /// Case `i` of this swarm, as generated (before any shrinking).
    pub fn case(&self, i: u64) -> Result<Case, String> {
        let strategies = self.strategies();
        Ok(self
            .tree(&strategies, i)?
            .current()
            .with_mutations(self.mutations))
    }

    /// Runs this shard's cases until one fails or the budget runs out.
    pub fn run(&self, obs: &mut dyn Observer) -> Summary {
        let start = wall_clock();
        let strategies = self.strategies();
        let count = self.shard.count.max(1);
        let total = self.shard.cases_of(self.cases);
        let judges = self.judges();
        let mut summary = Summary {
            cases: 0,
            checks: 0,
            properties: judges.len(),
            elapsed: Duration::ZERO,
            out_of_time: false,
            too_long: 0,
            found: None,
        };
        if let Some(why) = self.bad_user_properties() {
            summary.found = Some(Box::new(self.report(Failure::Invalid(why), 0, None, 0)));
            return summary;
        }
        for i in (self.shard.index..self.cases).step_by(count as usize) {
            if self.budget.is_some_and(|b| start.elapsed() >= b) {
                summary.out_of_time = true;
                break;
            }
            let found = match self.tree(&strategies, i) {
                Err(why) => Some(self.report(Failure::Invalid(why), i, None, 0)),
                Ok(mut tree) => {
                    let case = tree.current().with_mutations(self.mutations);
                    match invalid(&case.scenario) {
                        Some(why) => Some(self.report(Failure::Invalid(why), i, Some(case), 0)),
                        None => {
                            let checked = check(&case, &judges, self.max_events);
                            summary.checks += checked.checks;
                            summary.too_long += u64::from(checked.too_long);
                            checked.failure.map(|failure| {
                                obs.failed(failure.name(), i);
                                let failing = (case, failure, checked.trace);
                                self.shrink(tree.as_mut(), failing, i, obs)
                            })
                        }
                    }
                }
            };
            summary.cases += 1;
            if let Some(f) = found {
                summary.found = Some(Box::new(f));
                break;
            }
            obs.progress(summary.cases, total, start.elapsed());
        }
        summary.elapsed = start.elapsed();
        summary
    }

    /// Shrinks the failing case (with its failure and the trace its run kept), then writes
    /// the smallest case that still fails the same way.
    fn shrink(
        &self,
        tree: &mut dyn ValueTree<Value = Case>,
        failing: (Case, Failure, Vec<u8>),
        i: u64,
        obs: &mut dyn Observer,
    ) -> Found {
        let original = failing.0.clone();
        let name = failing.1.name();
        let judges = self.judges();
        // A smaller workload may be broken by itself (a recv whose send was removed): when the
        // case's own workload runs to completion without its faults, so must every smaller
        // one's, or the shrinking would trade the failure found for one it planted.
        let healthy = healthy_workload(&original);
        let fails = |case: &Case| {
            if healthy && !healthy_workload(case) {
                return None;
            }
            still_fails(case, name, &judges, self.max_events)
        };
        let mut best = failing;
        let mut steps = 0;
        if tree.simplify() {
            while steps < self.max_shrink_steps {
                steps += 1;
                obs.shrink_step(steps);
                let case = tree.current().with_mutations(self.mutations);
                let more = match fails(&case) {
                    Some((failure, trace)) => {
                        best = (case, failure, trace);
                        tree.simplify()
                    }
                    None => tree.complicate(),
                };
                if !more {
                    break;
                }
            }
        }
        // then structurally, on the scenario itself, until no smaller scenario still fails
        let mut improved = true;
        while improved && steps < self.max_shrink_steps {
            improved = false;
            for candidate in shrink::smaller(&best.0.scenario) {
                if steps >= self.max_shrink_steps {
                    break;
                }
                steps += 1;
                obs.shrink_step(steps);
                let case = Case::new(candidate).with_mutations(self.mutations);
                if let Some((failure, trace)) = fails(&case) {
                    best = (case, failure, trace);
                    improved = true;
                    break;
                }
            }
        }
        let (shrunk, failure, trace) = best;
        let mut f = self.report(failure, i, Some(original), steps);
        f.shrunk = shrunk;
        if let Some(dir) = &self.out_dir {
            f.files = Some(write_files(dir, &mut f, &trace));
        }
        f
    }

    /// The failure of case `i` (`original`: as generated, when it was), not shrunk and with no
    /// files.
    fn report(&self, failure: Failure, i: u64, original: Option<Case>, steps: u32) -> Found {
        let original = original.unwrap_or_else(|| {
            Case::new(Scenario {
                name: "not generated".into(),
                ..placeholder()
            })
        });
        Found {
            failure,
            case_index: i,
            case_seed: case_seed(self.seed, i),
            shrunk: original.clone(),
            original,
            shrink_steps: steps,
            files: None,
        }
    }
}

fn placeholder() -> Scenario {
    scenario::parse(
        "name = \"x\"\n[world]\nsize = 1\n[workload]\n",
        "placeholder.toml",
    )
    .expect("a constant scenario parses")
}

/// Writes the shrunk case of `f` into `dir` (names it after the failure), with `trace`, the
/// trace its run kept; returns the paths.
fn write_files(dir: &Path, f: &mut Found, trace: &[u8]) -> Files {
    let name = f.file_stem();
    let scenario_path = dir.join(format!("{name}.toml"));
    let trace_path = dir.join(format!("{name}.jsonl"));
    let first_line = f.failure.message().lines().next().unwrap_or("").to_string();
    let s = &mut f.shrunk.scenario;
    s.name = name.clone();
    s.description = Some(format!(
        "Found by `ringside check` (case {}, case seed {}): {} failed: {first_line}",
        f.case_index,
        f.case_seed,
        f.failure.name()
    ));
    s.seed = f.shrunk.seed;
    let files = |written: Result<(), String>, replay| Files {
        scenario: scenario_path.clone(),
        trace: trace_path.clone(),
        replay: match &written {
            Ok(()) => replay,
            Err(why) => Err(why.clone()),
        },
        written,
    };
    let unwritten = |why: String| files(Err(why), Ok(()));
    if let Err(e) = std::fs::create_dir_all(dir) {
        return unwritten(format!("cannot create {}: {e}", dir.display()));
    }
    let text = match toml::to_string(s) {
        Ok(t) => t,
        Err(e) => return unwritten(format!("cannot write the scenario as TOML: {e}")),
    };
    match scenario::parse(&text, &scenario_path.display().to_string()) {
        Ok(back) if back == *s => {}
        Ok(_) => {
            return unwritten("the scenario file does not parse back to the same scenario".into())
        }
        Err(e) => return unwritten(format!("the scenario file does not parse back: {e}")),
    }
    if let Err(e) = std::fs::write(&scenario_path, text) {
        return unwritten(format!("cannot write {}: {e}", scenario_path.display()));
    }
    let written =
        renamed(trace, s, f.shrunk.seed).and_then(|trace| std::fs::write(&trace_path, trace));
    if let Err(e) = written {
        return unwritten(format!("cannot write {}: {e}", trace_path.display()));
    }
    let replay = match replay(&trace_path, f.shrunk.mutations) {
        Ok(ReplayOutcome::Identical { .. } | ReplayOutcome::WallClockCut { .. }) => Ok(()),
        Ok(ReplayOutcome::Diverged { line, .. }) => Err(format!(
            "the trace does not replay identically (line {line} diverges)"
        )),
        Err(e) => Err(e.to_string()),
    };
    files(Ok(()), replay)
}

/// `trace` under the header a trace of `scenario` run with `seed` starts with (the events of
/// a run do not depend on the scenario's name and description).
fn renamed(trace: &[u8], scenario: &Scenario, seed: u64) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(trace.len());
    let events = trace
        .iter()
        .position(|b| *b == b'\n')
        .map_or(trace.len(), |i| i + 1);
    // the run's event budget stays with it, for replay
    let mut extra = serde_json::Map::new();
    if let Ok(serde_json::Value::Object(mut h)) = serde_json::from_slice(&trace[..events]) {
        if let Some(n) = h.remove("max_events") {
            extra.insert("max_events".into(), n);
        }
    }
    let level = crate::trace::Level::Full;
    let mut header = TraceWriter::with_header(&mut out, scenario, seed, level, extra)?;
    header.flush()?;
    drop(header);
    out.extend_from_slice(&trace[events..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_split_the_cases() {
        assert_eq!("1/4".parse::<Shard>(), Ok(Shard { index: 1, count: 4 }));
        for bad in ["4/4", "1", "a/b", "0/0", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let swarm = |index| Swarm {
            cases: 10,
            shard: Shard { index, count: 3 },
            gen: Gen::fault_free(),
            properties: Vec::new(),
            ..Swarm::default()
        };
        let runs: Vec<u64> = (0..3).map(|i| swarm(i).run(&mut Quiet).cases).collect();
        assert_eq!(runs, vec![4, 3, 3]);
    }

    #[test]
    fn a_kept_trace_renamed_is_the_trace_of_the_renamed_scenario() {
        let case = Swarm::default().case(3).expect("a case");
        let run = case.run();
        let mut s = case.scenario.clone();
        s.name = "agreement-3".into();
        s.description = Some("Found by `ringside check`".into());
        let again = Case::new(s.clone()).run();
        let trace = renamed(&run.trace, &s, case.seed).expect("in memory");
        assert!(trace == again.trace, "{}", String::from_utf8_lossy(&trace));
    }

    #[test]
    fn a_case_depends_only_on_the_seed_and_its_index() {
        let a = Swarm {
            seed: 7,
            ..Swarm::default()
        };
        let b = Swarm {
            seed: 7,
            shard: Shard { index: 2, count: 5 },
            ..Swarm::default()
        };
        assert_eq!(a.case(12), b.case(12));
        assert_ne!(a.case(12), a.case(13));
        assert_ne!(case_seed(7, 12), case_seed(8, 12));
    }
}
