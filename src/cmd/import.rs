//! `ringside import DUMPS... [--json] [--dot] [--prefix P] [--world-size N] [--scenario OUT.toml] [--trace OUT.jsonl]`

use crate::Failure;
use clap::Args;
use ringside_sim::fr;
use ringside_sim::text::{safe, safe_lines};
use std::path::PathBuf;

#[derive(Args)]
pub struct ImportArgs {
    /// Flight Recorder dumps (pickle or JSON), one per rank, or directories of them. A file's
    /// rank is the number at the end of its name.
    #[arg(required = true)]
    pub dumps: Vec<PathBuf>,
    /// Prints one JSON object instead of sentences.
    #[arg(long, conflicts_with = "dot")]
    pub json: bool,
    /// Prints the wait-for graph in Graphviz DOT.
    #[arg(long)]
    pub dot: bool,
    /// Strips this prefix from file names before reading the rank.
    #[arg(long, value_name = "P")]
    pub prefix: Option<String>,
    /// The job's world size, where the dumps cannot show it (a few dumps of a large job whose
    /// tables name only a smaller group, as gloo's do).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(fr::groups::MAX_WORLD)))]
    pub world_size: Option<u32>,
    /// Writes a scenario that reproduces the job in the simulator.
    #[arg(long, value_name = "OUT.toml")]
    pub scenario: Option<PathBuf>,
    /// Writes the dumps as a ringside trace (for explain, tui and export).
    #[arg(long, value_name = "OUT.jsonl")]
    pub trace: Option<PathBuf>,
    #[command(flatten)]
    pub exit: super::ExitArgs,
}

/// A name for the job: the directory (or file) given, with its parent when that is a format
/// folder such as `pickle/`.
fn job_name(p: &std::path::Path) -> String {
    let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let base = if abs.is_dir() {
        abs.clone()
    } else {
        abs.parent().map(|x| x.to_path_buf()).unwrap_or_default()
    };
    let parts: Vec<String> = base
        .iter()
        .rev()
        .take(3)
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let skip = ["pickle", "json", "late", "dumps"];
    let name = parts
        .iter()
        .find(|p| !skip.contains(&p.as_str()))
        .cloned()
        .unwrap_or_else(|| "dumps".into());
    format!("{name} (flight recorder)")
}

/// A scenario name (letters, digits, dashes) for the job.
fn scenario_name(p: &std::path::Path) -> String {
    let n = job_name(p);
    let base = n.split(" (").next().unwrap_or("job");
    let clean: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    format!("{}-imported", clean.trim_matches('-'))
}

pub fn main(a: ImportArgs) -> Result<(), Failure> {
    // the dumps of a large job are read once and held whole: with transparent huge pages, the
    // allocator's partly used 2 MiB pages count whole (a 4,096-rank job's import peaked at
    // 1.14 GB with them, 0.90 GB without), for no measurable gain in speed
    let _ = nix::sys::prctl::set_thp_disable(true);
    let loaded = fr::read_paths(
        &a.dumps,
        &fr::ReadOptions {
            prefix: a.prefix.clone(),
            world_size: a.world_size,
        },
    )
    .map_err(|e| Failure::Input(e.to_string()))?;
    // the analysis writes its large vectors (a call per record) whole and once: in huge pages
    // it takes 5,000 page faults instead of 90,000 (0.14 s of system time at 4,096 ranks), for
    // 10-20 MB more at the peak
    let _ = nix::sys::prctl::set_thp_disable(false);
    for s in &loaded.skipped {
        eprintln!("{}", safe(&s.to_string()));
    }
    let dumps = loaded.dumps;
    let mut analysis = fr::analyze_in(&dumps, a.world_size);
    // a job that cannot be replayed is refused after its diagnosis is printed
    let mut refused = None;
    if let Some(out) = &a.scenario {
        match fr::scenario::write(&scenario_name(&a.dumps[0]), &dumps, &analysis) {
            Ok(sc) => std::fs::write(out, sc)
                .map_err(|e| Failure::Input(format!("cannot write {}: {e}", out.display())))?,
            Err(e) => refused = Some(format!("--scenario {}: {e}", out.display())),
        }
    }
    if let Some(out) = &a.trace {
        fr::trace::write(&scenario_name(&a.dumps[0]), &dumps, &analysis, out)
            .map_err(|e| Failure::Input(format!("--trace {}: {e}", out.display())))?;
    }
    // the report does not read the lanes (a call per record, as large as the dumps): their
    // memory is reused for its ops
    analysis.lanes = Vec::new();
    let mut report = fr::report::build(&job_name(&a.dumps[0]), &dumps, &analysis);
    report.skipped = loaded.skipped;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| Failure::Input(e.to_string()))?
        );
    } else if a.dot {
        print!("{}", fr::report::to_dot(&dumps, &analysis));
    } else {
        print!("{}", safe_lines(&report.human()));
        if let Some(out) = a.scenario.as_ref().filter(|_| refused.is_none()) {
            println!("scenario written to {}", out.display());
        }
        if let Some(out) = &a.trace {
            println!("trace written to {}", out.display());
        }
    }
    let outcome = report.outcome;
    // the process ends here: its memory goes back whole, not in millions of frees
    std::mem::forget((dumps, analysis, report));
    match refused {
        Some(e) => Err(Failure::Input(e)),
        None => a.exit.check(Some(outcome)),
    }
}
