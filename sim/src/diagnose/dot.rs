//! The wait-for graph in Graphviz DOT.

use super::{Diagnosis, EdgeKind, Fold, RankState};
use crate::cause::listed;
use crate::scenario::OpKind;
use crate::units::fmt_ms;
use std::fmt::Write;

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Renders the wait-for graph of `d` (taken from `fold`): one node per rank that waits or is
/// waited for, labelled with its collective and step; root-cause ranks filled red, blocked
/// ranks outlined red, ranks in progress grey; root-cause edges red, chunks on their way dashed.
pub fn to_dot(fold: &Fold, d: &Diagnosis) -> String {
    to_dot_with(d, |r| {
        let v = fold.ranks.get(r as usize)?;
        let mut lines = vec![format!("rank {r}")];
        match &v.call {
            Some(c) if v.state != RankState::Dead && c.peer.is_some() => {
                // a send or recv: its peer and group instead of a step
                let dir = if c.op == OpKind::Send { "to" } else { "from" };
                let peer = c.peer.unwrap_or_default();
                lines.push(format!(
                    "{} #{} {dir} rank {peer} ({})",
                    c.op, c.seq, c.algorithm
                ));
                lines.push(format!("group {}", c.group.0));
                if c.aborted.is_some() {
                    lines.push("watchdog fired".into());
                }
            }
            Some(c) if v.state != RankState::Dead => {
                lines.push(format!("{} #{} ({})", c.op, c.seq, c.algorithm));
                lines.push(format!("step {}/{}", c.step + 1, c.steps));
                if c.aborted.is_some() {
                    lines.push("watchdog fired".into());
                }
            }
            _ => lines.push(v.state.name().into()),
        }
        if v.paused {
            lines.push("paused".into());
        }
        Some(lines)
    })
}

/// Renders the wait-for graph of `d` with each rank's node labelled by `label` (lines; None
/// leaves the rank out), styled as [`to_dot`] styles it.
pub fn to_dot_with(d: &Diagnosis, label: impl Fn(u32) -> Option<Vec<String>>) -> String {
    let mut out = String::new();
    let mut nodes: Vec<u32> = d.waits.iter().flat_map(|e| [e.from, e.to]).collect();
    nodes.extend(d.culprits());
    nodes.sort_unstable();
    nodes.dedup();
    let culprits = d.culprits();
    let blocked = d.blocked_ranks();
    let _ = writeln!(out, "digraph waits {{");
    let causes = listed(&d.root_causes());
    let _ = writeln!(
        out,
        "  label=\"wait-for graph at {}{}\";",
        fmt_ms(d.t),
        if causes.is_empty() {
            String::new()
        } else {
            format!("; root causes: {}", esc(&causes))
        }
    );
    let _ = writeln!(out, "  labelloc=t;");
    let _ = writeln!(out, "  node [shape=box, fontname=\"monospace\"];");
    for r in nodes {
        let Some(lines) = label(r) else {
            continue;
        };
        let label: Vec<String> = lines.iter().map(|l| esc(l)).collect();
        let label = label.join("\\n");
        let style = if culprits.contains(&r) {
            ", style=filled, fillcolor=\"#e04040\", fontcolor=white"
        } else if blocked.contains(&r) {
            ", color=\"#e04040\", penwidth=2"
        } else if d.in_progress.contains(&r) {
            ", color=grey50, fontcolor=grey30"
        } else {
            ""
        };
        let _ = writeln!(out, "  r{r} [label=\"{label}\"{style}];");
    }
    for e in &d.waits {
        let attrs = match e.kind {
            EdgeKind::RootCause => format!(
                " [color=\"#e04040\", penwidth=2, label=\"{}\"]",
                esc(&listed(&e.causes))
            ),
            EdgeKind::InFlight => " [style=dashed, color=grey50, label=\"in flight\"]".into(),
            EdgeKind::Waits => match e.message {
                // which end of which message
                Some(m) => format!(" [label=\"{} #{}\"]", m.op, m.seq),
                None => String::new(),
            },
        };
        let _ = writeln!(out, "  r{} -> r{}{attrs};", e.from, e.to);
    }
    let _ = writeln!(out, "}}");
    out
}
