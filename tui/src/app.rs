//! The viewer's state and what each [`Action`] does to it.

use crate::input::{Action, Mode};
use crate::state::{EventFilter, Loaded, MarkerKind};
use ringside_sim::diagnose::{diagnose, Diagnosis, Fold, RankState};

/// How the wait-for graph is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphMode {
    /// A picture for small graphs, a list for large ones.
    Auto,
    Picture,
    List,
}

/// Above this many ranks in the wait-for graph, `Auto` shows a list.
pub const PICTURE_MAX_RANKS: usize = 24;

/// Everything the view draws from.
pub struct App {
    pub loaded: Loaded,
    /// Events applied: 0 (before the first) ..= the number of events.
    pub pos: usize,
    /// The state after `pos` events, and its diagnosis.
    pub fold: Fold,
    pub diagnosis: Diagnosis,
    /// Each rank's state as drawn (see [`shown_states`]).
    pub states: Vec<RankState>,
    pub selected: u32,
    pub filter: EventFilter,
    /// The filter being typed, while typing.
    pub editing: Option<String>,
    pub help: bool,
    pub graph: GraphMode,
    pub compact: bool,
    /// A one-line message for the user (cleared by the next action).
    pub status: Option<String>,
    pub quit: bool,
}

/// The state a rank is drawn with: a paused rank shows as paused; a rank waiting on a root
/// cause (or aborted by its watchdog) shows as blocked.
pub fn shown_states(fold: &Fold, d: &Diagnosis) -> Vec<RankState> {
    let mut blocked = vec![false; fold.ranks.len()];
    if !d.causes.is_empty() {
        for b in &d.blocked {
            if let Some(x) = blocked.get_mut(b.rank as usize) {
                *x = true;
            }
        }
    }
    fold.ranks
        .iter()
        .map(|v| {
            if v.paused && !matches!(v.state, RankState::Dead | RankState::Done) {
                RankState::Paused
            } else if v.state == RankState::Waiting && blocked[v.rank as usize] {
                RankState::Blocked
            } else {
                v.state
            }
        })
        .collect()
}

impl App {
    pub fn new(loaded: Loaded) -> App {
        let mut fold = loaded.fold_at(0);
        if loaded.is_empty() {
            fold.outcome = loaded.trace.footer.as_ref().map(|f| f.outcome);
        }
        let diagnosis = diagnose(&fold);
        let states = shown_states(&fold, &diagnosis);
        App {
            loaded,
            pos: 0,
            fold,
            diagnosis,
            states,
            selected: 0,
            filter: EventFilter::default(),
            editing: None,
            help: false,
            graph: GraphMode::Auto,
            compact: false,
            status: None,
            quit: false,
        }
    }

    /// Which keys mean what now.
    pub fn mode(&self) -> Mode {
        if self.editing.is_some() {
            Mode::Editing
        } else if self.help {
            Mode::Help
        } else {
            Mode::Normal
        }
    }

    /// The state rank `r` is drawn with.
    pub fn state_of(&self, r: u32) -> RankState {
        self.states
            .get(r as usize)
            .copied()
            .unwrap_or(RankState::Idle)
    }

    pub fn ranks(&self) -> u32 {
        self.fold.ranks.len() as u32
    }

    /// Moves the cursor to `pos` (clamped to the trace).
    pub fn seek(&mut self, pos: usize) {
        let pos = pos.min(self.loaded.len());
        if pos == self.pos {
            return;
        }
        let fold = std::mem::replace(&mut self.fold, Fold::with_size(0));
        self.fold = self
            .loaded
            .history
            .seek(self.loaded.events(), fold, self.pos, pos);
        self.pos = pos;
        // at the end, the diagnosis knows how the run ended, as `explain` does
        if pos == self.loaded.len() {
            self.fold.outcome = self.loaded.trace.footer.as_ref().map(|f| f.outcome);
        }
        self.diagnosis = diagnose(&self.fold);
        self.states = shown_states(&self.fold, &self.diagnosis);
    }

    fn seek_or(&mut self, pos: Option<usize>, missing: &str) {
        match pos {
            Some(p) => self.seek(p),
            None => self.status = Some(missing.to_string()),
        }
    }

    /// Does what the user asked for.
    pub fn update(&mut self, action: Action) {
        self.status = None;
        match action {
            Action::Quit => self.quit = true,
            Action::Step(d) => {
                let p = if d < 0 {
                    self.pos.saturating_sub(d.unsigned_abs() as usize)
                } else {
                    self.pos.saturating_add(d as usize)
                };
                self.seek(p);
            }
            Action::Start => self.seek(0),
            Action::End => self.seek(self.loaded.len()),
            Action::FirstStall => {
                let p = self.loaded.markers.first_stall;
                self.seek_or(
                    p,
                    "no stall in this trace: no root cause, no watchdog timeout",
                );
            }
            Action::NextFault => {
                let p = self.loaded.markers.next(MarkerKind::Fault, self.pos);
                self.seek_or(p, "no fault after this point");
            }
            Action::NextOfRank => {
                let p = self.loaded.next_of_rank(self.pos, self.selected);
                let msg = format!("no later event of rank {}", self.selected);
                self.seek_or(p, &msg);
            }
            Action::PrevOfRank => {
                let p = self.loaded.prev_of_rank(self.pos, self.selected);
                let msg = format!("no earlier event of rank {}", self.selected);
                self.seek_or(p, &msg);
            }
            Action::Select(d) => {
                let last = i64::from(self.ranks().saturating_sub(1));
                self.selected = (i64::from(self.selected) + d).clamp(0, last) as u32;
            }
            Action::EditFilter => self.editing = Some(self.filter.describe()),
            Action::FilterChar(c) => {
                if let Some(s) = self.editing.as_mut() {
                    s.push(c);
                }
            }
            Action::FilterBackspace => {
                if let Some(s) = self.editing.as_mut() {
                    s.pop();
                }
            }
            Action::FilterApply => {
                if let Some(text) = self.editing.take() {
                    match EventFilter::parse(&text) {
                        Ok(f) => self.filter = f,
                        Err(e) => {
                            self.status = Some(format!("filter not applied: {}", e.0));
                            self.editing = Some(text);
                        }
                    }
                }
            }
            Action::FilterCancel => self.editing = None,
            Action::ToggleGraph => {
                self.graph = if self.shows_picture() {
                    GraphMode::List
                } else {
                    GraphMode::Picture
                }
            }
            Action::ToggleCompact => self.compact = !self.compact,
            Action::ToggleHelp => self.help = !self.help,
            Action::None => {}
        }
    }

    /// Ranks that appear in the wait-for graph.
    pub fn graph_ranks(&self) -> Vec<u32> {
        let mut r: Vec<u32> = self
            .diagnosis
            .edges
            .iter()
            .flat_map(|&(a, b)| [a, b])
            .collect();
        r.sort_unstable();
        r.dedup();
        r
    }

    /// Whether the wait-for graph is drawn as a picture.
    pub fn shows_picture(&self) -> bool {
        match self.graph {
            GraphMode::Picture => true,
            GraphMode::List => false,
            GraphMode::Auto => self.graph_ranks().len() <= PICTURE_MAX_RANKS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::record;
    use ringside_sim::diagnose::RootCause;
    use ringside_sim::proto::Rank;
    use ringside_sim::scenario;
    use ringside_sim::trace::Event;

    fn app() -> App {
        let s = scenario::parse(
            include_str!("../../scenarios/preempt-mid-allreduce.toml"),
            "preempt",
        )
        .expect("valid scenario");
        App::new(Loaded::new(record(&s, s.seed).expect("recorded")))
    }

    #[test]
    fn the_cursor_moves_and_stays_in_the_trace() {
        let mut a = app();
        let n = a.loaded.len();
        a.update(Action::Step(-1));
        assert_eq!(a.pos, 0);
        a.update(Action::Step(5));
        assert_eq!(a.pos, 5);
        a.update(Action::Step(10_000));
        assert_eq!(a.pos, n);
        a.update(Action::Start);
        assert_eq!(a.pos, 0);
        a.update(Action::End);
        assert_eq!(a.pos, n);
        assert_eq!(a.fold.t, a.loaded.end_ns());
    }

    #[test]
    fn jumps_to_the_stall_the_fault_and_the_selected_ranks_events() {
        let mut a = app();
        a.update(Action::NextFault);
        assert!(matches!(
            a.loaded.events()[a.pos - 1].1,
            Event::Fault { .. }
        ));
        a.update(Action::NextFault);
        assert!(a.status.is_some(), "there is only one fault");
        a.update(Action::FirstStall);
        assert_eq!(a.diagnosis.root_causes(), [RootCause::Preempted(Rank(2))]);
        a.update(Action::Select(2));
        assert_eq!(a.selected, 2);
        a.update(Action::Select(5));
        assert_eq!(a.selected, 2, "the selection stays on the last rank");
        a.update(Action::Start);
        a.update(Action::NextOfRank);
        assert!(a.loaded.events()[a.pos - 1].1.involves(2));
        let first = a.pos;
        a.update(Action::NextOfRank);
        assert!(a.pos > first && a.loaded.events()[a.pos - 1].1.involves(2));
        a.update(Action::PrevOfRank);
        assert_eq!(a.pos, first);
    }

    #[test]
    fn filters_are_typed_applied_or_cancelled() {
        let mut a = app();
        a.update(Action::EditFilter);
        assert_eq!(a.mode(), Mode::Editing);
        for c in "r1 senx".chars() {
            a.update(Action::FilterChar(c));
        }
        a.update(Action::FilterBackspace);
        a.update(Action::FilterChar('d'));
        a.update(Action::FilterApply);
        assert_eq!(a.mode(), Mode::Normal);
        assert_eq!(a.filter.describe(), "r1 send");
        a.update(Action::EditFilter);
        a.update(Action::FilterChar('x'));
        a.update(Action::FilterCancel);
        assert_eq!(a.filter.describe(), "r1 send", "cancel keeps the filter");
        a.update(Action::EditFilter);
        a.update(Action::FilterChar('!'));
        a.update(Action::FilterApply);
        assert_eq!(a.mode(), Mode::Editing, "a bad filter stays open");
        assert!(a.status.as_deref().unwrap_or("").contains("not applied"));
    }

    #[test]
    fn toggles() {
        let mut a = app();
        a.update(Action::End);
        assert!(a.shows_picture());
        a.update(Action::ToggleGraph);
        assert!(!a.shows_picture());
        a.update(Action::ToggleGraph);
        assert!(a.shows_picture());
        a.update(Action::ToggleHelp);
        assert_eq!(a.mode(), Mode::Help);
        a.update(Action::ToggleHelp);
        a.update(Action::ToggleCompact);
        assert!(a.compact);
        a.update(Action::Quit);
        assert!(a.quit);
    }
}
