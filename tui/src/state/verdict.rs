//! The answer a trace ends with: how the run ended and its closing diagnosis (the blocked ranks
//! and the root causes). The header states it from the first screen on, whatever moment the
//! cursor shows.
//!
//! For an import of a real job's Flight Recorder dumps the closing diagnosis is the import's
//! verdict, drawn from every dump at once, and it is the authority on what the dumps support: a
//! moment's diagnosis, taken from the events up to it, never names a cause the verdict does not
//! ([`Verdict::judge`]). Where the dumps could not decide (two ranks that each did what the
//! other did not), the moment says `undecided` too, not a guess.

use ringside_sim::diagnose::{Cause, Diagnosis, RootCause};
use ringside_sim::scenario::Outcome;
use ringside_sim::trace::{Event, Trace};

/// How a trace ends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// None for a trace without its footer (a run cut short).
    pub outcome: Option<Outcome>,
    /// The ranks blocked at the end.
    pub blocked: Vec<u32>,
    pub root_causes: Vec<RootCause>,
    /// It is an import's verdict on its dumps.
    pub imported: bool,
}

impl Verdict {
    /// The verdict `trace` closes with (its last `diagnosis` event and its footer's outcome).
    pub fn of(trace: &Trace) -> Verdict {
        let closing = trace.events.iter().rev().find_map(|(_, e)| match e {
            Event::Diagnosis {
                blocked,
                root_causes,
                ..
            } => Some((blocked.clone(), root_causes.clone())),
            _ => None,
        });
        let (blocked, root_causes) = closing.unwrap_or_default();
        Verdict {
            outcome: trace.footer.as_ref().map(|f| f.outcome),
            blocked,
            root_causes,
            imported: trace.header.driver.as_deref() == Some("flight-recorder"),
        }
    }

    /// Whether `d` reads as the trace ends: the same root causes and the same blocked ranks.
    pub fn reads_as(&self, d: &Diagnosis) -> bool {
        d.root_causes() == self.root_causes && d.blocked_ranks() == self.blocked
    }

    /// A moment's diagnosis as the viewer shows it. An import's moment names only causes its
    /// verdict names: any other becomes `undecided` (the events up to the moment show a wait
    /// that the dumps, read together, do not blame on it).
    ///
    /// At the end of an import (`at_end`) the moment is the verdict: a cause the verdict names
    /// that the trace's events cannot show (a call site, a recorded root) is named there too.
    pub fn judge(&self, d: Diagnosis, at_end: bool) -> Diagnosis {
        let d = self.undecide(d);
        if self.imported && at_end {
            self.complete(d)
        } else {
            d
        }
    }

    /// The verdict's causes that `d` lacks, in place of its `undecided` (when the verdict is
    /// not itself undecided), on every rank the verdict finds blocked.
    fn complete(&self, mut d: Diagnosis) -> Diagnosis {
        let lacking: Vec<RootCause> = self
            .root_causes
            .iter()
            .filter(|c| !d.causes.iter().any(|k| k.cause == **c))
            .cloned()
            .collect();
        if lacking.is_empty() {
            return d;
        }
        let decided = !self.root_causes.contains(&RootCause::Undecided);
        let swap = |causes: &mut Vec<RootCause>| {
            if decided {
                causes.retain(|c| *c != RootCause::Undecided);
            }
            causes.extend(lacking.iter().cloned());
            causes.sort();
            causes.dedup();
        };
        for b in &mut d.blocked {
            if self.blocked.contains(&b.rank) {
                swap(&mut b.causes);
            }
        }
        if decided {
            d.causes.retain(|c| c.cause != RootCause::Undecided);
        }
        for c in &lacking {
            d.causes.push(Cause {
                cause: c.clone(),
                text: "the import's verdict, from every dump read together (what it rests on, \
                       such as call sites, is not in the trace's events; `ringside import` tells \
                       it)"
                .into(),
                ranks: c.ranks().iter().map(|r| r.0).collect(),
                blocked: self.blocked.clone(),
            });
        }
        d.causes.sort_by(|a, b| a.cause.cmp(&b.cause));
        d
    }

    /// An import's moment with every cause its verdict does not name made `undecided`.
    fn undecide(&self, d: Diagnosis) -> Diagnosis {
        if !self.imported || d.causes.iter().all(|c| self.root_causes.contains(&c.cause)) {
            return d;
        }
        let known = |c: &RootCause| self.root_causes.contains(c);
        let judged = |causes: &mut Vec<RootCause>| {
            for c in causes.iter_mut() {
                if !known(c) {
                    *c = RootCause::Undecided;
                }
            }
            causes.sort();
            causes.dedup();
        };
        let mut d = d;
        for b in &mut d.blocked {
            judged(&mut b.causes);
        }
        for w in &mut d.waits {
            judged(&mut w.causes);
        }
        let (kept, dropped): (Vec<Cause>, Vec<Cause>) =
            d.causes.into_iter().partition(|c| known(&c.cause));
        let mut undecided: Option<Cause> = None;
        let mut causes = Vec::new();
        for c in kept {
            if c.cause == RootCause::Undecided {
                undecided = Some(c);
            } else {
                causes.push(c);
            }
        }
        let u = undecided.get_or_insert_with(|| Cause {
            cause: RootCause::Undecided,
            text: String::new(),
            ranks: Vec::new(),
            blocked: Vec::new(),
        });
        for c in dropped {
            u.blocked.extend(c.blocked);
        }
        u.blocked.sort_unstable();
        u.blocked.dedup();
        u.text = format!(
            "the dumps, read together, do not decide what holds {} (the import's verdict: {})",
            ringside_sim::diagnose::ranks_phrase(&u.blocked),
            self.root_causes
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        causes.extend(undecided);
        causes.sort_by(|a, b| a.cause.cmp(&b.cause));
        d.causes = causes;
        d
    }
}
