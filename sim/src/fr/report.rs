//! The import's report: `run`'s fields (outcome, ops, blocked ranks, root causes,
//! explanation...) plus where the dumps came from, the groups, and the earliest divergence.

use super::analyze::lanes;
use super::analyze::{Analysis, Divergence};
use super::groups::MembersFrom;
use super::model::{dtype_bytes, numel, Dump};
use crate::diagnose::{fmt_ranks, ranks_phrase, Blocked, Straggler, Via};
use crate::report::text::{self, Wording};
use crate::report::{BlockedReport, ExpectReport, GenerationReport, OpReport};
use crate::scenario::Outcome;
use crate::units::{fmt_ms, fmt_time, Nanos};
use serde::Serialize;

/// One dump read.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DumpReport {
    pub rank: u32,
    pub file: String,
    pub format: &'static str,
    pub version: Option<String>,
    pub records: u32,
}

/// One process group.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupReport {
    pub id: u32,
    pub name: String,
    pub desc: String,
    pub members: Vec<u32>,
    pub members_from: MembersFrom,
    /// Collectives seen (distinct seqs).
    pub collectives: u32,
    pub last_seq: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub divergence: Option<Divergence>,
}

/// The whole report (`ringside import --json`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ImportReport {
    pub source: &'static str,
    pub scenario: String,
    pub seed: u64,
    pub outcome: Outcome,
    /// Span of the records: first to last call, wall clock.
    pub virtual_time_ns: Nanos,
    pub messages: u64,
    /// Records read.
    pub events: u64,
    pub digest: String,
    pub ops: Vec<OpReport>,
    pub blocked: Vec<BlockedReport>,
    pub root_causes: Vec<crate::cause::RootCause>,
    pub explanation: Vec<String>,
    /// The root causes and where they hold ranks up, in one sentence (the first line's answer).
    #[serde(skip)]
    pub culprit: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undecided_reason: Option<String>,
    pub stragglers: Vec<Straggler>,
    pub generations: Vec<GenerationReport>,
    pub expect: ExpectReport,
    /// Unix epoch ns of the first record: every other time is relative to it.
    pub start_unix_ns: u64,
    pub world_size: u32,
    pub dumps: Vec<DumpReport>,
    /// Member ranks that left no dump.
    pub missing: Vec<u32>,
    pub groups: Vec<GroupReport>,
    /// The earliest divergence across groups.
    pub divergence: Option<Divergence>,
    pub in_progress: Vec<u32>,
    pub notes: Vec<String>,
    /// Files of the directories given that were not read, and why.
    pub skipped: Vec<super::read::Skipped>,
}

/// Modeled bytes of a call: elements of its input times the dtype's size.
pub fn call_bytes(dumps: &[Dump], c: &lanes::Call) -> u64 {
    let d = &dumps[c.dump as usize];
    lanes::parts(dumps, c)
        .map(|r| {
            let t = d.str(r.in_dtypes).split(',').next().unwrap_or("");
            let n = numel(d.shapes(r.input)).max(numel(d.shapes(r.output)));
            n.saturating_mul(dtype_bytes(t))
        })
        .fold(0u64, |a, b| a.saturating_add(b))
}

/// How an import names groups and calls: a group by its name and description, a call by how
/// long after the first record it was issued.
struct Recorded<'a>(&'a Analysis);

impl Wording for Recorded<'_> {
    fn group(&self, b: &Blocked) -> String {
        let g = self.0.groups.list.get(b.group as usize);
        format!(" of {}", g.map(|g| g.label()).unwrap_or_default())
    }

    /// How long the ranks had been in the call when they dumped: from the call's record to
    /// the newest record of the rank's own dump (a dump carries no time of its own, so the age
    /// is a lower bound), the least of the ranks'.
    fn detail(&self, bs: &[&Blocked]) -> String {
        let a = self.0;
        let age = bs
            .iter()
            .filter_map(|b| {
                let d = (*a.dump_of.get(b.rank as usize)?)?;
                let newest = *a.newest_ns.get(d as usize)?;
                (newest > 0).then(|| newest.saturating_sub(a.t0_ns + b.since_ns))
            })
            .min();
        match (age, bs.len()) {
            (Some(age), 1) if age > 0 => format!(" for at least {} when it dumped", fmt_time(age)),
            (Some(age), _) if age > 0 => {
                format!(" for at least {} when they dumped", fmt_time(age))
            }
            // nothing recorded after the call (gloo records only when a call was issued): when
            // it was issued is all the dumps tell
            _ => {
                let since = bs.iter().map(|b| b.since_ns).min().unwrap_or(0);
                format!(" since {} after the job's first record", fmt_ms(since))
            }
        }
    }
}

/// One paragraph per root cause, as `run` writes them.
pub fn explain(a: &Analysis) -> Vec<String> {
    text::explain(&a.diagnosis, &Recorded(a))
}

/// Builds the report; `name` names the job (from the paths given).
pub fn build(name: &str, dumps: &[Dump], a: &Analysis) -> ImportReport {
    let ops = ops(dumps, a);
    let groups = a
        .groups
        .list
        .iter()
        .zip(&a.scans)
        .map(|(g, s)| GroupReport {
            id: g.id,
            name: g.name.clone(),
            desc: g.desc.clone(),
            members: g.members.clone(),
            members_from: g.from,
            collectives: s.rows.len() as u32,
            last_seq: s.last_seq,
            divergence: s.divergence.clone(),
        })
        .collect();
    ImportReport {
        source: "flight-recorder",
        scenario: name.to_string(),
        seed: 0,
        outcome: a.outcome,
        virtual_time_ns: a.span_ns,
        messages: 0,
        events: dumps.iter().map(|d| d.records.len() as u64).sum(),
        digest: String::new(),
        ops,
        blocked: a
            .diagnosis
            .blocked
            .iter()
            .map(BlockedReport::from_blocked)
            .collect(),
        root_causes: a.root_causes(),
        explanation: explain(a),
        culprit: text::culprit(&a.diagnosis, &Recorded(a)),
        undecided_reason: a.undecided_reason.clone(),
        stragglers: Vec::new(),
        generations: vec![GenerationReport {
            generation: 0,
            members: (0..a.groups.world_size).collect(),
            formed_ns: 0,
        }],
        expect: ExpectReport {
            ok: true,
            ..ExpectReport::default()
        },
        start_unix_ns: a.t0_ns,
        world_size: a.groups.world_size,
        dumps: dumps
            .iter()
            .map(|d| DumpReport {
                rank: d.rank,
                file: d.file.clone(),
                format: d.format.name(),
                version: d.version.clone(),
                records: d.records.len() as u32,
            })
            .collect(),
        missing: a.missing.clone(),
        groups,
        divergence: a.divergences.first().cloned(),
        in_progress: a.diagnosis.in_progress.clone(),
        notes: a.notes.clone(),
        skipped: Vec::new(),
    }
}

/// Every collective of every group, by start, then group, then seq.
///
/// A 4,096-rank Megatron job has about 400,000 of them. Each group's are built on every core,
/// where the group's rows are (in seq order, reading its records in turn); then each is moved
/// once to its place: sorting the reports themselves (over 100 bytes each) took as long as
/// building them.
fn ops(dumps: &[Dump], a: &Analysis) -> Vec<OpReport> {
    let mut built: Vec<Vec<Option<OpReport>>> = super::analyze::par::map(a.scans.len(), |g| {
        let (scan, id) = (&a.scans[g], a.groups.list[g].id);
        let op = |(i, row): (usize, &super::analyze::seqs::Row)| {
            let diverged = scan.divergence.as_ref().is_some_and(|d| {
                d.seq == row.seq && d.kind == super::analyze::DivergenceKind::Parameters
            });
            let head = lanes::head(dumps, &row.call);
            let d = &dumps[row.call.dump as usize];
            Some(OpReport {
                iteration: 0,
                index: i as u32,
                op: head.kind.call_op(d.str(head.op)),
                algorithm: Via::Backend(d.str(head.backend).into()),
                group: id,
                generation: 0,
                seq: row.seq,
                bytes: call_bytes(dumps, &row.call),
                start_ns: row.start_ns.saturating_sub(a.t0_ns),
                end_ns: None,
                ranks_completed: row.left,
                ranks_called: row.called,
                correct: !diverged,
                from: None,
                to: None,
            })
        };
        scan.rows.iter().enumerate().map(op).collect()
    });
    // listed by group (ids increasing with the list) and seq: a stable sort by start alone
    // orders them by start, group and seq
    let mut order: Vec<(u64, (u32, u32))> = Vec::with_capacity(built.iter().map(Vec::len).sum());
    for (g, ops) in built.iter().enumerate() {
        for (i, o) in ops.iter().enumerate() {
            let start = o.as_ref().map_or(0, |o| o.start_ns);
            order.push((start, (g as u32, i as u32)));
        }
    }
    radix_sort(&mut order);
    order
        .iter()
        .filter_map(|&(_, (g, i))| built[g as usize][i as usize].take())
        .collect()
}

/// Sorts `v` by its keys, stably, in linear time: a byte of the key at a time from the lowest,
/// skipping the bytes every key shares.
fn radix_sort<T: Copy>(v: &mut Vec<(u64, T)>) {
    let mut counts = vec![[0usize; 256]; 8];
    for &(k, _) in v.iter() {
        for (b, c) in counts.iter_mut().enumerate() {
            c[(k >> (8 * b)) as u8 as usize] += 1;
        }
    }
    let mut buf = v.clone();
    for (b, c) in counts.iter().enumerate() {
        if c.contains(&v.len()) {
            continue;
        }
        let mut next = [0usize; 256];
        let mut sum = 0;
        for (x, &n) in next.iter_mut().zip(c) {
            *x = sum;
            sum += n;
        }
        for &(k, x) in v.iter() {
            let slot = &mut next[(k >> (8 * b)) as u8 as usize];
            buf[*slot] = (k, x);
            *slot += 1;
        }
        std::mem::swap(v, &mut buf);
    }
}

/// Civil date and time (UTC) of Unix epoch ns, `2026-12-01 14:30:20 UTC`.
pub fn fmt_utc(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's days-to-civil
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

impl ImportReport {
    /// The report in sentences.
    /// The first line, the answer: `STALLED: hung:2 — ...` or `COMPLETED: ...`.
    pub fn verdict(&self) -> String {
        match self.outcome {
            Outcome::Completed => format!(
                "COMPLETED: {} calls on {} ranks, every call issued alike by every member \
                 and left by every rank",
                self.ops.len(),
                self.world_size
            ),
            _ => format!("STALLED: {}", self.culprit),
        }
    }

    pub fn human(&self) -> String {
        let mut s = self.verdict();
        s.push('\n');
        // a job's calls name a backend or two: each run of ops with the same one is looked up once
        let mut b: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
        let mut last = None;
        for o in &self.ops {
            let name = o.algorithm.name();
            if last != Some(name) {
                b.insert(name);
                last = Some(name);
            }
        }
        let b: Vec<&str> = b.into_iter().collect();
        let mut versions: Vec<&str> = self
            .dumps
            .iter()
            .filter_map(|d| d.version.as_deref())
            .collect();
        versions.sort_unstable();
        versions.dedup();
        s.push_str(&format!(
            "{} of a {}-rank job ({}{}), {} from {} over {}\n",
            crate::report::text::count(self.dumps.len(), "dump"),
            self.world_size,
            if b.is_empty() {
                "no calls".to_string()
            } else {
                b.join(", ")
            },
            if versions.is_empty() {
                String::new()
            } else {
                format!(
                    ", Flight Recorder {}",
                    crate::text::safe(&versions.join(", "))
                )
            },
            crate::report::text::count(self.events as usize, "record"),
            if self.start_unix_ns > 0 {
                fmt_utc(self.start_unix_ns)
            } else {
                "time 0".into()
            },
            fmt_ms(self.virtual_time_ns)
        ));
        match self.outcome {
            Outcome::Completed => {
                s.push_str(&format!(
                    "completed: {} recorded, each issued alike by every member and left by \
                     every rank\n",
                    crate::report::text::count(self.ops.len(), "call")
                ));
            }
            _ => {
                s.push_str("stalled:\n");
                for p in &self.explanation {
                    s.push_str(&format!("  {p}\n"));
                }
                if !self.in_progress.is_empty() {
                    s.push_str(&format!(
                        "  {} in progress\n",
                        ranks_phrase(&self.in_progress)
                    ));
                }
            }
        }
        if let Some(d) = &self.divergence {
            let g = self
                .groups
                .iter()
                .find(|g| g.id == d.group)
                .map(label)
                .unwrap_or_default();
            s.push_str(&format!(
                "earliest divergence: {g} at #{} ({}): {}\n",
                d.seq,
                fmt_ms(d.at_ns),
                d.text
            ));
        }
        if let Some(u) = &self.undecided_reason {
            s.push_str(&format!("undecided: {u}\n"));
        }
        s.push_str("groups:\n");
        for g in &self.groups {
            let from = match g.members_from {
                MembersFrom::PgConfig => "from pg_config",
                MembersFrom::World => "the world",
                MembersFrom::Records => "from the records",
            };
            s.push_str(&format!(
                "  {}: ranks {} ({from}), {} collectives{}\n",
                label(g),
                fmt_ranks(&g.members),
                g.collectives,
                match &g.divergence {
                    Some(d) if self.divergence.as_ref() != Some(d) => {
                        format!("; diverges at #{}: {}", d.seq, d.text)
                    }
                    _ => String::new(),
                }
            ));
        }
        if !self.missing.is_empty() {
            s.push_str(&format!("no dump from {}\n", ranks_phrase(&self.missing)));
        }
        for n in &self.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        s
    }
}

fn label(g: &GroupReport) -> String {
    use crate::text::safe;
    if g.desc.is_empty() || g.desc == g.name {
        format!("group {}", safe(&g.name))
    } else {
        format!("group {} ({})", safe(&g.name), safe(&g.desc))
    }
}

/// The wait-for graph in Graphviz DOT, styled as `explain --dot` styles it.
pub fn to_dot(dumps: &[Dump], a: &Analysis) -> String {
    crate::diagnose::to_dot_with(&a.diagnosis, |r| {
        let mut lines = vec![format!("rank {r}")];
        let stuck = a
            .stuck
            .iter()
            .filter(|s| s.rank == r)
            .min_by_key(|s| (s.call.time_ns, s.group));
        match (a.dump_of.get(r as usize).copied().flatten(), stuck) {
            (None, _) => lines.push("no dump".into()),
            (Some(_), Some(s)) => {
                let d = &dumps[s.call.dump as usize];
                let rec = &d.records.get(s.call.first as usize);
                lines.push(format!("{} #{}", d.profiling_name(rec), s.call.seq));
                lines.push(a.groups.list[s.group as usize].label());
                if s.failed {
                    lines.push("retired (timed out)".into());
                }
            }
            (Some(d), None) => {
                let last = dumps[d as usize].records.last();
                lines.push(match last {
                    Some(rec) => format!(
                        "idle after {} #{}",
                        dumps[d as usize].profiling_name(&rec),
                        rec.seq.get().unwrap_or(0)
                    ),
                    None => "no records".into(),
                });
            }
        }
        Some(lines)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_are_put_in_order_of_start_stably() {
        // keys spread over several bytes, with ties, and a byte every key shares
        let keys: Vec<u64> = (0..5000u64)
            .map(|i| (i * 7919 % 613) << 20 | (i % 3) << 8 | 0xab)
            .collect();
        let mut v: Vec<(u64, u32)> = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, i as u32))
            .collect();
        let mut want = v.clone();
        want.sort_by_key(|&(k, _)| k);
        radix_sort(&mut v);
        assert_eq!(v, want);
        let mut none: Vec<(u64, u32)> = Vec::new();
        radix_sort(&mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(fmt_utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(
            fmt_utc(1_796_132_311_782_335_018),
            "2026-12-01 13:38:31 UTC"
        );
        assert_eq!(fmt_utc(951_782_400_000_000_000), "2000-02-29 00:00:00 UTC");
    }
}
