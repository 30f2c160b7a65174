//! `ringside check [SCENARIO...] [--cases N] [--seed S] [--shard I/N] [--time BUDGET]`

use super::{load_scenario, mutation_names};
use crate::Failure;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use ringside_sim::check::swarm::{Found, Observer, Shard, Summary, Swarm};
use ringside_sim::check::{Mutation, Mutations, Property};
use ringside_sim::units::Duration;
use std::io::IsTerminal;
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

/// A progress bar on a terminal; a plain line every tenth of the cases in CI or a pipe.
enum Progress {
    Bar(ProgressBar),
    Lines { next: u64 },
}

impl Progress {
    fn new(total: u64) -> Progress {
        let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
        if std::io::stderr().is_terminal() && !ci {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{bar:40}] {pos}/{len} cases, {per_sec}, {elapsed} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            Progress::Bar(bar)
        } else {
            Progress::Lines { next: 1 }
        }
    }

    fn finish(&self) {
        if let Progress::Bar(b) = self {
            b.finish_and_clear();
        }
    }
}

impl Observer for Progress {
    fn progress(&mut self, done: u64, total: u64, elapsed: std::time::Duration) {
        match self {
            Progress::Bar(b) => b.set_position(done),
            Progress::Lines { next } => {
                // deciles of the shard's cases, and the last one
                if done * 10 >= *next * total || done == total {
                    while *next * total <= done * 10 {
                        *next += 1;
                    }
                    eprintln!(
                        "check: {done}/{total} cases passed, {:.1}s",
                        elapsed.as_secs_f64()
                    );
                }
            }
        }
    }

    fn failed(&mut self, property: &str, case: u64) {
        let msg = format!("case {case} fails {property}; shrinking");
        match self {
            Progress::Bar(b) => b.set_message(msg),
            Progress::Lines { .. } => eprintln!("check: {msg}"),
        }
    }

    fn shrink_step(&mut self, steps: u32) {
        if let Progress::Bar(b) = self {
            b.set_message(format!("shrinking: {steps} steps"));
        }
    }
}

fn cases_default() -> Result<u64, Failure> {
    match std::env::var(CASES_ENV) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .map_err(|_| Failure::Input(format!("{CASES_ENV}={v} is not a number of cases"))),
        _ => Ok(DEFAULT_CASES),
    }
}

pub fn main(a: CheckArgs) -> Result<(), Failure> {
    let cases = match a.cases {
        Some(c) => c,
        None => cases_default()?,
    };
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
        .map(|p| load_scenario(p))
        .collect::<Result<Vec<_>, _>>()?;
    let swarm = Swarm {
        seed: a.seed,
        cases,
        shard: a.shard,
        budget,
        scenarios,
        out_dir: Some(a.out.clone()),
        mutations: a.mutations.iter().copied().collect::<Mutations>(),
        ..Swarm::default()
    };
    let total = (cases + a.shard.count - 1 - a.shard.index) / a.shard.count;
    let mut progress = Progress::new(total);
    let summary = swarm.run(&mut progress);
    progress.finish();
    match &summary.found {
        None => {
            print_summary(&swarm, &summary);
            Ok(())
        }
        Some(found) => {
            print_failure(&swarm, &a.scenarios, &summary, found);
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

fn print_summary(swarm: &Swarm, s: &Summary) {
    let what = if swarm.scenarios.is_empty() {
        "random scenarios".to_string()
    } else {
        format!("fault schedules on {} scenario(s)", swarm.scenarios.len())
    };
    if s.out_of_time {
        println!("check: the time budget ran out; every case run so far passed");
    }
    println!(
        "check: {} cases passed ({what}), {} properties checked ({}): {} checks in {:.2}s wall, \
         {:.0} cases/s; seed {}, shard {}",
        s.cases,
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
        println!("  {line}");
    }
    println!(
        "shrunk in {} steps from {} to {}",
        f.shrink_steps,
        f.original.size(),
        f.shrunk.size()
    );
    let extra: String = swarm
        .mutations
        .iter()
        .map(|m| format!(" --mutation {m}"))
        .collect();
    match &f.files {
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
    let shard = if swarm.shard.count > 1 {
        format!(" --shard {}", swarm.shard)
    } else {
        String::new()
    };
    println!(
        "reproduce it with: ringside check{} --seed {} --cases {}{shard}{extra}",
        paths
            .iter()
            .map(|p| format!(" {}", p.display()))
            .collect::<String>(),
        swarm.seed,
        f.case_index + 1
    );
}
