//! `ringside check [SCENARIO...] [--cases N] [--seed S] [--shard I/N] [--time BUDGET] [--junit FILE] [--json]`,
//! and `ringside check --torch SCENARIO [--cases N] [--seed S] -- PROGRAM ARGS...`
//! (`check_torch`)

use super::{load_scenario, mutation_names};
use crate::progress::Progress;
use crate::Failure;
use clap::Args;
use ringside_sim::check::swarm::{Files, Found, Observer, Shard, Summary, Swarm};
use ringside_sim::check::{Mutation, Mutations, Property};
use ringside_sim::units::Duration;
use std::path::PathBuf;

/// Environment variable with the default number of cases (CI jobs set it for longer runs).
pub const CASES_ENV: &str = "RINGSIDE_CHECK_CASES";
const DEFAULT_CASES: u64 = 256;

#[derive(Args)]
#[command(after_help = properties_help())]
pub struct CheckArgs {
    /// Scenarios to lay random fault schedules on (their world, network and workload are kept;
    /// their faults and [expect] are replaced). Without any, whole scenarios are generated.
    pub scenarios: Vec<PathBuf>,
    /// Number of cases across all shards [default: $RINGSIDE_CHECK_CASES, else 256].
    #[arg(long)]
    pub cases: Option<u64>,
    /// Seed of the swarm: case i is generated from (seed, i) alone.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Run only shard I of N: the cases i with i % N == I.
    #[arg(long, value_name = "I/N", default_value = "0/1")]
    pub shard: Shard,
    /// Stop starting new cases after this much wall-clock time, e.g. "60s" or "10m".
    #[arg(long, value_name = "BUDGET")]
    pub time: Option<String>,
    /// Where a failing case's scenario and trace are written.
    #[arg(long, default_value = "traces/regressions")]
    pub out: PathBuf,
    /// Plant a deliberately broken variant of the code, to see a property catch it (any
    /// number of them; `nondeterministic-ties` breaks the engine's tie-break).
    #[arg(long = "mutation", value_name = "NAME", value_parser = mutation_names())]
    pub mutations: Vec<Mutation>,
    /// Also writes the result as JUnit XML to this file: one test case per property per
    /// scenario (for CI systems), a failure carrying the commands that replay it.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Prints the result as one JSON object instead of sentences.
    #[arg(long)]
    pub json: bool,
    /// Shows no progress on stderr (it shows only on a terminal, after a second).
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub memory: super::MemoryLimit,
    /// Events a case's run may process: a case that reaches this many is counted as too long
    /// and its properties are not checked (each case's trace is kept in memory, about 300
    /// bytes an event)
    #[arg(long, value_name = "N", default_value_t = ringside_sim::check::swarm::CASE_MAX_EVENTS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_events: u64,
    /// Property-tests a real PyTorch program instead: `check --torch SCENARIO -- python
    /// train.py` runs it under drawn fault schedules on the scenario's cluster
    /// (docs/torchrun.md); --cases defaults to 16 there.
    #[arg(long, requires = "program")]
    pub torch: bool,
    /// With --torch: the program and its arguments.
    #[arg(last = true, num_args = 1..)]
    pub program: Vec<String>,
}

/// The properties every case is checked against, from the registry, for `--help`.
fn properties_help() -> String {
    let mut s = String::from(
        "Properties, checked on every case in this order (docs/properties.md states them in \
         full):\n",
    );
    for p in Property::all() {
        s.push_str(&format!("  {} ({})\n", p.name(), p.kind()));
        for line in wrap(p.statement(), 88) {
            s.push_str(&format!("      {line}\n"));
        }
    }
    s
}

/// `text` in lines of at most `width` characters, broken between words.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.len() + 1 + word.len() <= width => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// Tells the progress display how the swarm goes.
struct Shown<'a> {
    progress: &'a Progress,
    failing: Option<String>,
}

impl Observer for Shown<'_> {
    fn progress(&mut self, done: u64, total: u64, _elapsed: std::time::Duration) {
        self.progress.items(done, total, "cases");
    }

    fn failed(&mut self, property: &str, case: u64) {
        self.failing = Some(format!("case {case} fails {property}; shrinking"));
    }

    fn shrink_step(&mut self, steps: u32) {
        if let Some(what) = &self.failing {
            self.progress.message(&format!("{what}: {steps} steps"));
        }
    }
}

fn cases_default() -> Result<u64, Failure> {
    match std::env::var(CASES_ENV) {
        Ok(v) if !v.trim().is_empty() => match v.trim().parse() {
            Ok(0) => Err(Failure::Input(format!(
                "{CASES_ENV}=0 checks nothing: give at least 1 case"
            ))),
            Ok(n) => Ok(n),
            Err(_) => Err(Failure::Input(format!(
                "{CASES_ENV}={v} is not a number of cases"
            ))),
        },
        _ => Ok(DEFAULT_CASES),
    }
}

/// Fails unless `dir` exists (or can be created) and a file can be written in it, so that a
/// failure found after an hour is not lost to a typo.
fn writable(dir: &std::path::Path) -> Result<(), Failure> {
    let bad = |e: std::io::Error| {
        Failure::Input(format!(
            "--out {}: failing cases could not be written there: {e}",
            dir.display()
        ))
    };
    // the directory is only created when a case fails: probe it, or the nearest existing
    // directory it would be created in
    let existing = dir
        .ancestors()
        .find(|d| d.as_os_str().is_empty() || d.exists())
        .map(|d| {
            if d.as_os_str().is_empty() {
                std::path::Path::new(".")
            } else {
                d
            }
        })
        .unwrap_or(dir);
    if !existing.is_dir() {
        return Err(bad(std::io::Error::other(format!(
            "{} is not a directory",
            existing.display()
        ))));
    }
    let probe = existing.join(format!(".ringside-check-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(bad)?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

pub fn main(a: CheckArgs) -> Result<(), Failure> {
    if a.torch || !a.program.is_empty() {
        return super::check_torch::main(&a);
    }
    let cases = match a.cases {
        Some(0) => {
            return Err(Failure::Input(
                "--cases 0 checks nothing: give at least 1 case".into(),
            ))
        }
        Some(c) => c,
        None => cases_default()?,
    };
    if a.shard.cases_of(cases) == 0 {
        return Err(Failure::Input(format!(
            "shard {} of {cases} cases holds no case: give at least {} cases",
            a.shard,
            a.shard.index + 1
        )));
    }
    let budget = match &a.time {
        Some(t) => {
            let d = Duration::parse(t).map_err(|e| Failure::Input(format!("--time: {e}")))?;
            if d.0 == 0 {
                return Err(Failure::Input("--time: the budget must be > 0".into()));
            }
            Some(std::time::Duration::from_nanos(d.0))
        }
        None => None,
    };
    let scenarios = a
        .scenarios
        .iter()
        .map(|p| {
            let s = load_scenario(p)?;
            a.memory.admit_file(&s, p)?;
            Ok(s)
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    writable(&a.out)?;
    let swarm = Swarm {
        seed: a.seed,
        cases,
        shard: a.shard,
        budget,
        scenarios,
        out_dir: Some(a.out.clone()),
        mutations: a.mutations.iter().copied().collect::<Mutations>(),
        max_events: a.max_events,
        ..Swarm::default()
    };
    let progress = Progress::new(a.quiet);
    let summary = swarm.run(&mut Shown {
        progress: &progress,
        failing: None,
    });
    progress.finish();
    if let Some(path) = &a.junit {
        let xml = junit(&swarm, &a.scenarios, &summary);
        std::fs::write(path, xml)
            .map_err(|e| Failure::Input(format!("--junit {}: {e}", path.display())))?;
    }
    if a.json {
        let text = serde_json::to_string_pretty(&json(&swarm, &a.scenarios, &summary))
            .map_err(|e| Failure::Input(e.to_string()))?;
        println!("{text}");
    }
    match &summary.found {
        // a green run must have checked something
        None if summary.checks == 0 => Err(Failure::Input(format!(
            "check checked nothing: {}",
            skipped(&swarm, &summary).join("; ")
        ))),
        None => {
            if !a.json {
                print_summary(&swarm, &summary);
            }
            Ok(())
        }
        Some(found) => {
            if !a.json {
                print_failure(&swarm, &a.scenarios, &summary, found);
            }
            Err(Failure::Check(String::new()))
        }
    }
}

fn names(swarm: &Swarm) -> String {
    swarm
        .properties
        .iter()
        .map(|p| p.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What went unchecked and why, a sentence each: cases the time budget left unrun, cases
/// that reached the event budget.
fn skipped(swarm: &Swarm, s: &Summary) -> Vec<String> {
    let mut why = Vec::new();
    if s.out_of_time {
        let planned = swarm.shard.cases_of(swarm.cases);
        why.push(format!(
            "the time budget ran out (--time) after {} of the {planned} cases{}",
            s.cases,
            if s.cases == 0 {
                ": raise it to run one"
            } else {
                ""
            }
        ));
    }
    if s.too_long > 0 {
        why.push(format!(
            "{} of the {} cases reached the event budget (--max-events {}) and went \
             unchecked: raise it to check them",
            s.too_long, s.cases, swarm.max_events
        ));
    }
    if why.is_empty() {
        why.push("no case was run".into());
    }
    why
}

fn print_summary(swarm: &Swarm, s: &Summary) {
    let what = if swarm.scenarios.is_empty() {
        "random scenarios".to_string()
    } else {
        format!("fault schedules on {} scenario(s)", swarm.scenarios.len())
    };
    if s.out_of_time || s.too_long > 0 {
        for why in skipped(swarm, s) {
            println!("check: {why}");
        }
    }
    println!(
        "check: {} cases passed ({what}), {} properties checked ({}): {} checks in {:.2}s wall, \
         {:.0} cases/s; seed {}, shard {}",
        s.cases - s.too_long,
        s.properties,
        names(swarm),
        s.checks,
        s.elapsed.as_secs_f64(),
        s.cases_per_sec(),
        swarm.seed,
        swarm.shard
    );
}

fn print_failure(swarm: &Swarm, paths: &[PathBuf], s: &Summary, f: &Found) {
    println!(
        "check: property `{}` failed on case {} (case seed {}) after {} cases:",
        f.failure.name(),
        f.case_index,
        f.case_seed,
        s.cases
    );
    for line in f.failure.message().lines() {
        println!("  {}", ringside_sim::text::safe(line));
    }
    println!(
        "shrunk in {} steps from {} to {}",
        f.shrink_steps,
        f.original.size(),
        f.shrunk.size()
    );
    let extra = mutation_flags(swarm);
    match &f.files {
        Some(Files {
            written: Err(why), ..
        }) => println!("(no files written: {why})"),
        Some(files) => {
            println!("minimal scenario: {}", files.scenario.display());
            println!("its trace:        {}", files.trace.display());
            if let Err(why) = &files.replay {
                if f.failure.property() == Some(Property::Determinism) {
                    println!("note: {why}, as a nondeterministic run would");
                } else {
                    println!("note: {why}");
                }
            }
            println!("replay it with:");
            println!("  ringside replay {}{extra}", files.trace.display());
        }
        None => println!("(no files written)"),
    }
    println!("reproduce it with: {}", reproduce(swarm, paths, f));
}

/// ` --mutation NAME` for each planted bug.
fn mutation_flags(swarm: &Swarm) -> String {
    swarm
        .mutations
        .iter()
        .map(|m| format!(" --mutation {m}"))
        .collect()
}

/// The command that finds the failure again.
fn reproduce(swarm: &Swarm, paths: &[PathBuf], f: &Found) -> String {
    let shard = if swarm.shard.count > 1 {
        format!(" --shard {}", swarm.shard)
    } else {
        String::new()
    };
    format!(
        "ringside check{} --seed {} --cases {}{shard}{}",
        paths
            .iter()
            .map(|p| format!(" {}", p.display()))
            .collect::<String>(),
        swarm.seed,
        f.case_index + 1,
        mutation_flags(swarm)
    )
}

/// The command that replays the failure's trace, when it was written.
fn replay_command(swarm: &Swarm, f: &Found) -> Option<String> {
    f.files.as_ref().map(|files| {
        format!(
            "ringside replay {}{}",
            files.trace.display(),
            mutation_flags(swarm)
        )
    })
}

/// The scenario (file) a failing case was drawn from, or None for random scenarios.
fn failing_suite<'a>(paths: &'a [PathBuf], swarm: &Swarm, f: &Found) -> Option<&'a PathBuf> {
    swarm
        .scenarios
        .iter()
        .position(|s| s.name == f.original.scenario.name)
        .and_then(|i| paths.get(i))
}

/// The result as `--json` prints it.
fn json(swarm: &Swarm, paths: &[PathBuf], s: &Summary) -> serde_json::Value {
    let failure = s.found.as_ref().map(|f| {
        serde_json::json!({
            "property": f.failure.name(),
            "message": f.failure.message(),
            "case_index": f.case_index,
            "case_seed": f.case_seed,
            "scenario": failing_suite(paths, swarm, f).map(|p| p.display().to_string()),
            "shrink_steps": f.shrink_steps,
            "scenario_file": f.files.as_ref().map(|x| x.scenario.display().to_string()),
            "trace_file": f.files.as_ref().map(|x| x.trace.display().to_string()),
            "replay": replay_command(swarm, f),
            "reproduce": reproduce(swarm, paths, f),
        })
    });
    serde_json::json!({
        "passed": s.found.is_none() && s.checks > 0,
        "seed": swarm.seed,
        "shard": swarm.shard.to_string(),
        "scenarios": paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "cases": s.cases,
        "checks": s.checks,
        "properties": swarm.properties.iter().map(|p| p.name()).collect::<Vec<_>>(),
        "mutations": swarm.mutations.iter().map(|m| m.to_string()).collect::<Vec<_>>(),
        "elapsed_s": s.elapsed.as_secs_f64(),
        "cases_per_sec": s.cases_per_sec(),
        "out_of_time": s.out_of_time,
        "too_long": s.too_long,
        "max_events": swarm.max_events,
        // what went unchecked and why, a sentence each
        "unchecked": if s.out_of_time || s.too_long > 0 || s.checks == 0 {
            skipped(swarm, s)
        } else {
            Vec::new()
        },
        "failure": failure,
    })
}

/// Escapes text for an XML attribute or element.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 has no other control characters
            c if c < ' ' && !matches!(c, '\n' | '\t' | '\r') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// The result as JUnit XML: a test suite per scenario (one for random scenarios), a test case
/// per property; the failing one carries the message and the commands.
fn junit(swarm: &Swarm, paths: &[PathBuf], s: &Summary) -> String {
    let suites: Vec<String> = if paths.is_empty() {
        vec!["random scenarios".to_string()]
    } else {
        paths.iter().map(|p| p.display().to_string()).collect()
    };
    let failing = s.found.as_ref().map(|f| {
        let suite = failing_suite(paths, swarm, f)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| suites[0].clone());
        (suite, f)
    });
    let time = s.elapsed.as_secs_f64();
    let mut names: Vec<&str> = swarm.properties.iter().map(|p| p.name()).collect();
    // a failure outside the properties (a panic, the generator) is a test case of its own
    if let Some((_, f)) = &failing {
        if !names.contains(&f.failure.name()) {
            names.push(f.failure.name());
        }
    }
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"ringside check\" tests=\"{}\" failures=\"{}\" time=\"{time:.3}\">\n",
        suites.len() * names.len(),
        usize::from(failing.is_some()),
    ));
    for suite in &suites {
        let fails = failing.as_ref().is_some_and(|(s, _)| s == suite);
        out.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" time=\"{time:.3}\">\n",
            xml(suite),
            names.len(),
            usize::from(fails)
        ));
        out.push_str("    <properties>\n");
        for (k, v) in [
            ("seed", swarm.seed.to_string()),
            ("shard", swarm.shard.to_string()),
            ("cases", s.cases.to_string()),
            ("out_of_time", s.out_of_time.to_string()),
            ("too_long", s.too_long.to_string()),
        ] {
            out.push_str(&format!(
                "      <property name=\"{k}\" value=\"{}\"/>\n",
                xml(&v)
            ));
        }
        out.push_str("    </properties>\n");
        for name in &names {
            out.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"{}\"",
                xml(suite),
                xml(name)
            ));
            match &failing {
                Some((s, f)) if s == suite && f.failure.name() == *name => {
                    let mut text = format!(
                        "case {} (case seed {}), shrunk in {} steps\n{}\n",
                        f.case_index,
                        f.case_seed,
                        f.shrink_steps,
                        f.failure.message()
                    );
                    if let Some(files) = &f.files {
                        text.push_str(&format!(
                            "minimal scenario: {}\ntrace: {}\n",
                            files.scenario.display(),
                            files.trace.display()
                        ));
                    }
                    if let Some(r) = replay_command(swarm, f) {
                        text.push_str(&format!("replay it with: {r}\n"));
                    }
                    text.push_str(&format!(
                        "reproduce it with: {}\n",
                        reproduce(swarm, paths, f)
                    ));
                    let first = f.failure.message().lines().next().unwrap_or("");
                    out.push_str(&format!(
                        ">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n",
                        xml(name),
                        xml(first),
                        xml(&text)
                    ));
                }
                _ => out.push_str("/>\n"),
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
