//! `ringside check --torch`: property testing of a real PyTorch program (docs/torchrun.md,
//! "Property testing"). Runs the program once without faults, then under drawn fault schedules
//! (preempt or pause a rank at one of its calls, delay a rank's links from a call on, cut a rank
//! off for a while), and checks two properties of every case:
//!
//! - **ends**: the program ends — completes, or fails with an error — instead of hanging (a case
//!   that runs into its budget hangs: its time limit, its events, its wall-clock time);
//! - **same results**: a case that completes gave every rank the results the fault-free run gave
//!   it, call by call.
//!
//! A failing case is shrunk — faults dropped, triggers moved to earlier calls, durations halved —
//! while it still fails the same property, and written as a scenario that `ringside torchrun`
//! replays.

use super::forkserver::ForkServer;
use super::{torchrun, TorchOptions, TorchOutput};
use crate::budget::Limits;
use crate::engine::describe_fault;
use crate::proto::data::mix;
use crate::scenario::{self, Fault, Outcome, Scenario, Trigger};
use crate::units::{fmt_time, Duration, Nanos};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Options of one `check --torch`.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Cases drawn after the fault-free run.
    pub cases: u32,
    /// Case `i`'s schedule is drawn from (seed, i) alone.
    pub seed: u64,
    /// Where the failing case's scenario is written.
    pub out: PathBuf,
    /// Runs a shrink may make at most.
    pub max_shrink_runs: u32,
    /// Wall-clock time a case may take (a program that hangs outside any call never hands
    /// the engine a call, so only this ends it).
    pub case_wall: std::time::Duration,
    /// Forks each case's processes from a fork server that imported torch once (when the
    /// program is `python SCRIPT ...` or `python -m MODULE ...`).
    pub fork_server: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            cases: 16,
            seed: 0,
            out: PathBuf::from("traces/regressions"),
            max_shrink_runs: 24,
            case_wall: std::time::Duration::from_secs(120),
            fork_server: true,
        }
    }
}

/// Which property a case broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Broken {
    /// The program did not end: the case ran into its budget.
    Ends,
    /// The case completed with results other than the fault-free run's.
    SameResults,
}

impl Broken {
    pub fn name(self) -> &'static str {
        match self {
            Broken::Ends => "ends",
            Broken::SameResults => "same-results",
        }
    }
}

/// A case that broke a property, as found and as shrunk.
#[derive(Clone, Debug)]
pub struct Failure {
    pub case: u32,
    pub broken: Broken,
    /// What went wrong, one sentence, for the shrunk schedule.
    pub why: String,
    pub found: Vec<Fault>,
    pub shrunk: Vec<Fault>,
    /// Runs the shrink made.
    pub shrink_runs: u32,
    /// The scenario written, or why it could not be.
    pub written: Result<PathBuf, String>,
}

/// What a `check --torch` found.
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// The fault-free run: its virtual end and each rank's calls.
    pub baseline_end: Nanos,
    pub baseline_calls: Vec<u32>,
    /// Cases run (not counting the fault-free run and the shrink's runs).
    pub cases: u32,
    /// Why the processes were started one by one rather than forked by the fork server.
    pub no_fork_server: Option<String>,
    pub failure: Option<Failure>,
}

/// The fault-free run, the yardstick of every case.
struct Baseline {
    end: Nanos,
    calls: Vec<u32>,
    results: Vec<Vec<(u32, u64)>>,
    events: u64,
}

/// One check: the scenario without its faults, the program, and how its processes start.
struct Ctx<'a> {
    base: Scenario,
    program: &'a [String],
    opts: &'a CheckOptions,
    server: Option<ForkServer>,
}

/// Checks `program` on the simulated cluster of `scenario` (its own faults are ignored: the
/// cases bring theirs). `progress` is told (case, cases) before each case.
pub fn check(
    scenario: &Scenario,
    program: &[String],
    opts: &CheckOptions,
    mut progress: impl FnMut(u32, u32),
) -> io::Result<CheckReport> {
    let mut base = scenario.clone();
    base.faults.clear();
    base.expect = None;
    if base.torch.is_none() {
        base.torch = Some(Default::default());
    }
    let (server, no_fork_server) = match opts.fork_server {
        false => (None, Some("not asked for".to_string())),
        true => match ForkServer::start(program) {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(e.to_string())),
        },
    };
    let cx = Ctx {
        base,
        program,
        opts,
        server,
    };
    let first = cx.run(&[], None)?;
    if first.run.result.outcome != Outcome::Completed {
        return Err(io::Error::other(format!(
            "the program does not complete without faults ({}): nothing to compare the cases \
             with; `ringside torchrun` shows why",
            first.run.result.outcome.name()
        )));
    }
    let baseline = Baseline {
        end: first.run.result.end_ns,
        calls: first
            .results
            .iter()
            .map(|r| r.iter().map(|(w, _)| *w).max().unwrap_or(0))
            .collect(),
        results: first.results,
        events: first.run.result.stats.events,
    };
    let mut report = CheckReport {
        baseline_end: baseline.end,
        baseline_calls: baseline.calls.clone(),
        cases: 0,
        no_fork_server,
        failure: None,
    };
    for case in 0..opts.cases {
        progress(case, opts.cases);
        let faults = draw(&cx.base, &baseline, opts.seed, case);
        report.cases += 1;
        let Some((broken, why)) = cx.judge(&faults, &baseline)? else {
            continue;
        };
        let (shrunk, why, runs) = cx.shrink(faults.clone(), broken, why, &baseline)?;
        let limit = budget(&cx.base, &shrunk, &baseline).0;
        let written = write_case(&cx.base, &shrunk, limit, opts, case, program);
        report.failure = Some(Failure {
            case,
            broken,
            why,
            found: faults,
            shrunk,
            shrink_runs: runs,
            written,
        });
        break;
    }
    Ok(report)
}

impl Ctx<'_> {
    /// Runs the program under `faults` as one case: the children silent, within `budget`
    /// (virtual time, events) when given, and always within the case's wall-clock time.
    fn run(&self, faults: &[Fault], budget: Option<(Nanos, u64)>) -> io::Result<TorchOutput> {
        let mut s = self.base.clone();
        s.faults = faults.to_vec();
        let events = budget.map(|(end, events)| {
            s.time_limit = Some(Duration(end));
            events
        });
        let wall = Arc::new(AtomicBool::new(false));
        let flag = wall.clone();
        let d = self.opts.case_wall;
        std::thread::spawn(move || {
            std::thread::sleep(d);
            flag.store(true, Ordering::SeqCst);
        });
        torchrun(
            &s,
            self.program,
            &TorchOptions {
                limits: Limits {
                    events: events.or(Limits::default().events),
                    wall_clock: Some(&wall),
                    ..Limits::default()
                },
                silent: true,
                exit_grace: Some(std::time::Duration::from_secs(10)),
                fork_server: self.server.as_ref(),
                ..TorchOptions::default()
            },
        )
    }

    /// Runs `faults` and judges the two properties: the one broken and why, if any.
    fn judge(&self, faults: &[Fault], b: &Baseline) -> io::Result<Option<(Broken, String)>> {
        let out = self.run(faults, Some(budget(&self.base, faults, b)))?;
        let r = &out.run.result;
        if r.outcome == Outcome::TimedOut {
            let why = match r.stop.budget() {
                Some(budget) => format!("ran out of {}", budget.describe()),
                None => format!(
                    "was still running at {} of virtual time, its limit",
                    fmt_time(r.end_ns)
                ),
            };
            let why = format!("the program never ended: it {why}{}", hung_ranks(&out));
            return Ok(Some((Broken::Ends, why)));
        }
        if r.outcome != Outcome::Completed || !out.errors.is_empty() {
            return Ok(None);
        }
        Ok(
            first_difference(&out.results, &b.results).map(|(rank, call)| {
                let why = format!(
                "the run completed, but rank {rank}'s call {call} returned another result than \
                 in the fault-free run"
            );
                (Broken::SameResults, why)
            }),
        )
    }

    /// Shrinks a failing schedule: takes the first simpler schedule that still breaks the
    /// same property, again and again, within the budget of runs. Returns the schedule, why
    /// it fails, and the runs made.
    fn shrink(
        &self,
        mut faults: Vec<Fault>,
        broken: Broken,
        mut why: String,
        b: &Baseline,
    ) -> io::Result<(Vec<Fault>, String, u32)> {
        let mut runs = 0;
        'smaller: loop {
            for candidate in simpler(&faults) {
                if runs >= self.opts.max_shrink_runs {
                    break 'smaller;
                }
                runs += 1;
                if let Some((k, w)) = self.judge(&candidate, b)? {
                    if k == broken {
                        faults = candidate;
                        why = w;
                        continue 'smaller;
                    }
                }
            }
            break;
        }
        Ok((faults, why, runs))
    }
}

/// The first (rank, call) whose result differs between two runs' results (each rank's
/// (call, hash) in the order waited for), or one run has and the other lacks.
fn first_difference(got: &[Vec<(u32, u64)>], want: &[Vec<(u32, u64)>]) -> Option<(u32, u32)> {
    let empty = Vec::new();
    (0..got.len().max(want.len())).find_map(|rank| {
        let (g, w) = (
            got.get(rank).unwrap_or(&empty),
            want.get(rank).unwrap_or(&empty),
        );
        let i = (0..g.len().max(w.len())).find(|&i| g.get(i) != w.get(i))?;
        let call = g.get(i).or(w.get(i)).map_or(0, |(c, _)| *c);
        Some((rank as u32, call))
    })
}

/// The budget of a case: the fault-free run's length twice over, plus every fault's duration,
/// plus ten of the group's timeouts (each call a fault blocks waits one out, and the program's
/// error handling may make a few more); and twenty times its events plus 100,000.
fn budget(s: &Scenario, faults: &[Fault], b: &Baseline) -> (Nanos, u64) {
    let held: Nanos = faults
        .iter()
        .filter_map(|f| f.duration())
        .fold(0, |a: Nanos, d| a.saturating_add(d.0));
    let end = b
        .end
        .saturating_mul(2)
        .saturating_add(held)
        .saturating_add(s.group.timeout.0.saturating_mul(10));
    (end, b.events.saturating_mul(20).saturating_add(100_000))
}

/// `; blocked: rank 0 at train.py:40 (main), ...` for a run that hung.
fn hung_ranks(out: &TorchOutput) -> String {
    let sites: Vec<String> = out
        .blocked_sites
        .iter()
        .map(|(r, s)| format!("rank {r} at {s}"))
        .collect();
    match sites.is_empty() {
        true => String::new(),
        false => format!("; blocked: {}", sites.join(", ")),
    }
}

/// Case `case`'s fault schedule: one or two faults, each on a rank that made calls in the
/// fault-free run, triggered at one of those calls (a partition at a time of that run).
fn draw(s: &Scenario, b: &Baseline, seed: u64, case: u32) -> Vec<Fault> {
    let mut z = mix(seed ^ mix(u64::from(case) + 1));
    let mut next = move |n: u64| {
        z = mix(z);
        if n == 0 {
            0
        } else {
            z % n
        }
    };
    let ranks: Vec<u32> = (0..b.calls.len() as u32)
        .filter(|r| b.calls[*r as usize] > 0)
        .collect();
    if ranks.is_empty() {
        return Vec::new();
    }
    let timeout = s.group.timeout.0.max(1_000);
    let count = 1 + next(2);
    let mut faults = Vec::new();
    for _ in 0..count {
        let rank = ranks[next(ranks.len() as u64) as usize];
        let call = 1 + next(u64::from(b.calls[rank as usize])) as u32;
        let at = Trigger::AtCall(call);
        // shorter or longer than the timeout: a pause the watchdog does or does not see
        let span = Duration(match next(2) {
            0 => timeout / 2,
            _ => timeout.saturating_mul(2),
        });
        faults.push(match next(4) {
            0 => Fault::Preempt {
                rank,
                at,
                restart_after: None,
            },
            1 => Fault::Pause {
                rank,
                at,
                duration: span,
            },
            2 => Fault::Delay {
                rank: Some(rank),
                link: None,
                at,
                duration: Some(span),
                extra: Duration((timeout / 8).max(1_000)),
                jitter: None,
            },
            _ => {
                let others: Vec<u32> = (0..s.world.size).filter(|r| *r != rank).collect();
                if others.is_empty() {
                    continue;
                }
                Fault::Partition {
                    sides: vec![vec![rank], others],
                    at: Trigger::At(Duration(next(b.end.max(1)))),
                    duration: Some(span),
                    oneway: false,
                }
            }
        });
    }
    faults
}

/// Smaller schedules to try instead of `faults`, simplest first: one fault fewer, a call
/// trigger moved earlier, a duration halved, a time trigger moved earlier.
fn simpler(faults: &[Fault]) -> Vec<Vec<Fault>> {
    let mut out = Vec::new();
    if faults.len() > 1 {
        for i in 0..faults.len() {
            let mut f = faults.to_vec();
            f.remove(i);
            out.push(f);
        }
    }
    for (i, f) in faults.iter().enumerate() {
        let mut with = |g: Fault| {
            let mut v = faults.to_vec();
            v[i] = g;
            out.push(v);
        };
        match f.trigger() {
            Some(Trigger::AtCall(k)) if k > 1 => {
                for k2 in [1, k / 2, k - 1] {
                    if k2 >= 1 && k2 < k {
                        with(retrigger(f, Trigger::AtCall(k2)));
                    }
                }
            }
            Some(Trigger::At(t)) if t.0 >= 2_000 => {
                with(retrigger(f, Trigger::At(Duration(t.0 / 2 / 1_000 * 1_000))));
            }
            _ => {}
        }
        if let Some(d) = f.duration() {
            if d.0 >= 2_000_000 {
                with(with_duration(f, Duration(d.0 / 2 / 1_000_000 * 1_000_000)));
            }
        }
    }
    out.dedup();
    out
}

fn retrigger(f: &Fault, t: Trigger) -> Fault {
    let mut g = f.clone();
    match &mut g {
        Fault::Preempt { at, .. }
        | Fault::Pause { at, .. }
        | Fault::Partition { at, .. }
        | Fault::Delay { at, .. }
        | Fault::Loss { at, .. }
        | Fault::Slow { at, .. } => *at = t,
        _ => {}
    }
    g
}

fn with_duration(f: &Fault, d: Duration) -> Fault {
    let mut g = f.clone();
    match &mut g {
        Fault::Pause { duration, .. } => *duration = d,
        Fault::Partition { duration, .. }
        | Fault::Delay { duration, .. }
        | Fault::Loss { duration, .. }
        | Fault::Slow { duration, .. } => *duration = Some(d),
        _ => {}
    }
    g
}

/// The command that replays a written case.
pub fn replay_command(path: &Path, program: &[String]) -> String {
    let quoted: Vec<String> = program.iter().map(|a| shell_word(a)).collect();
    format!(
        "ringside torchrun {} -- {}",
        shell_word(&path.display().to_string()),
        quoted.join(" ")
    )
}

fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Writes the scenario of a failing case, with the case's time limit (checked to read back
/// as the same scenario).
fn write_case(
    s: &Scenario,
    faults: &[Fault],
    limit: Nanos,
    opts: &CheckOptions,
    case: u32,
    program: &[String],
) -> Result<PathBuf, String> {
    let mut c = s.clone();
    c.faults = faults.to_vec();
    c.time_limit = Some(Duration(limit));
    c.name = format!("{}-torch-check-{}-{case}", s.name, opts.seed);
    let what: Vec<String> = faults.iter().map(describe_fault).collect();
    c.description = Some(format!(
        "Found by `ringside check --torch` (seed {}, case {case}) for `{}`: {}.",
        opts.seed,
        program.join(" "),
        what.join("; ")
    ));
    let path = opts.out.join(format!("{}.toml", c.name));
    std::fs::create_dir_all(&opts.out)
        .map_err(|e| format!("cannot create {}: {e}", opts.out.display()))?;
    let text = toml::to_string(&c).map_err(|e| format!("cannot write the scenario: {e}"))?;
    match scenario::parse(&text, &path.display().to_string()) {
        Ok(back) if back == c => {}
        Ok(_) => return Err("the scenario does not read back as written".into()),
        Err(e) => return Err(format!("the scenario does not read back: {e}")),
    }
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preempt(rank: u32, k: u32) -> Fault {
        Fault::Preempt {
            rank,
            at: Trigger::AtCall(k),
            restart_after: None,
        }
    }

    #[test]
    fn simpler_schedules_drop_a_fault_then_move_calls_earlier_and_halve_durations() {
        let pause = Fault::Pause {
            rank: 0,
            at: Trigger::AtCall(1),
            duration: Duration(4_000_000),
        };
        let s = simpler(&[preempt(1, 4), pause.clone()]);
        assert_eq!(s[0], vec![pause.clone()]);
        assert_eq!(s[1], [preempt(1, 4)]);
        assert!(s.contains(&vec![preempt(1, 1), pause.clone()]));
        assert!(s.contains(&vec![preempt(1, 2), pause.clone()]));
        assert!(s.contains(&vec![preempt(1, 3), pause.clone()]));
        assert!(s.contains(&vec![
            preempt(1, 4),
            with_duration(&pause, Duration(2_000_000))
        ]));
        // nothing simpler than one fault at the first call
        assert!(simpler(&[preempt(0, 1)]).is_empty());
    }

    #[test]
    fn a_result_that_differs_or_is_missing_is_the_first_difference() {
        let want = vec![vec![(1, 10), (2, 20)], vec![(1, 10), (2, 21)]];
        assert_eq!(first_difference(&want, &want), None);
        let mut got = want.clone();
        got[1][1].1 = 99;
        assert_eq!(first_difference(&got, &want), Some((1, 2)));
        got = want.clone();
        got[0].pop();
        assert_eq!(first_difference(&got, &want), Some((0, 2)));
        got = want.clone();
        got[0].push((3, 30));
        assert_eq!(first_difference(&got, &want), Some((0, 3)));
    }

    #[test]
    fn a_case_is_drawn_from_the_seed_and_its_number_alone_within_the_calls_made() {
        let s = scenario::parse(
            "name = \"t\"\n[world]\nsize = 3\n[group]\ntimeout = \"1s\"\n[torch]\n",
            "t.toml",
        )
        .unwrap();
        let b = Baseline {
            end: 10_000_000,
            calls: vec![5, 5, 0],
            results: Vec::new(),
            events: 100,
        };
        for case in 0..64 {
            let f = draw(&s, &b, 7, case);
            assert_eq!(f, draw(&s, &b, 7, case));
            assert!((1..=2).contains(&f.len()) || f.is_empty());
            for f in &f {
                if let Some((rank, k)) = f.at_call() {
                    assert!(rank < 2 && (1..=5).contains(&k), "{f:?}");
                }
            }
        }
        assert_ne!(
            (0..8).map(|c| draw(&s, &b, 7, c)).collect::<Vec<_>>(),
            (0..8).map(|c| draw(&s, &b, 8, c)).collect::<Vec<_>>()
        );
    }
}
