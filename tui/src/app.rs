//! The viewer's state and what each [`Action`] does to it.

pub mod line;

use crate::input::{Action, Mode};
use crate::state::chain::{chains, CauseChain};
use crate::state::paths::{wait_paths, WaitPath};
use crate::state::ranges::parse_ranks;
use crate::state::ranks::{crosses_partition, listed, shown};
use crate::state::{EventFilter, Loaded, MarkerKind, Order, Shown};
use line::{Line, LineOp};
use ringside_sim::diagnose::{Diagnosis, Fold, RankState};
use ringside_sim::units::{fmt_time, Duration, Nanos};

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

/// The panel that ↑ ↓ and the mouse wheel act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Ranks,
    Diagnosis,
    Events,
}

impl Focus {
    fn next(self, d: i64) -> Focus {
        const ALL: [Focus; 3] = [Focus::Ranks, Focus::Diagnosis, Focus::Events];
        let i = ALL.iter().position(|&f| f == self).unwrap_or(0) as i64;
        ALL[(i + d).rem_euclid(3) as usize]
    }
}

/// What is being typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prompt {
    /// The event filter, applied as it is typed.
    Filter,
    /// `:` — a rank, a rank list, `@TIME` or `#EVENT`.
    Command,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Editing {
    pub prompt: Prompt,
    pub line: Line,
    /// What went wrong with the text (drawn on a line of its own above the prompt).
    pub error: Option<String>,
}

/// The timeline shows at least this much virtual time, however far it is zoomed in.
pub const MIN_SPAN: Nanos = 1_000;

/// Everything the view draws from.
pub struct App {
    pub loaded: Loaded,
    /// Events applied: 0 (before the first) ..= the number of events.
    pub pos: usize,
    /// The state after `pos` events, and its diagnosis.
    pub fold: Fold,
    pub diagnosis: Diagnosis,
    /// Each rank as drawn (see [`shown`]).
    pub shown: Vec<Shown>,
    /// The diagnosis folded onto its root causes.
    pub chains: Vec<CauseChain>,
    pub selected: u32,
    pub order: Order,
    /// Only these ranks in the table (`:0-99,101-255`).
    pub only: Option<Vec<u32>>,
    /// Only culprits, blocked ranks and ranks in a rendezvous in the table.
    pub stuck_only: bool,
    pub focus: Focus,
    /// Lines the diagnosis panel is scrolled down by.
    pub diagnosis_scroll: u16,
    pub filter: EventFilter,
    /// Indices of the events the filter keeps (empty when there is no filter).
    pub matches: Vec<usize>,
    pub editing: Option<Editing>,
    /// The detail pane of the current event is open, scrolled down by this many lines.
    pub detail: Option<u16>,
    pub help: bool,
    /// Lines the help is scrolled down by.
    pub help_scroll: u16,
    /// The timeline shows 1/2^zoom of the run, from `view_start`.
    pub zoom: u32,
    pub view_start: Nanos,
    pub graph: GraphMode,
    pub compact: bool,
    /// Draw in colour (off when `NO_COLOR` is set).
    pub color: bool,
    /// Colours for a light background.
    pub light: bool,
    /// A one-line message for the user (cleared by the next action).
    pub status: Option<String>,
    /// Mouse reporting is on (clicks and the wheel reach the viewer, not the terminal).
    pub mouse: bool,
    /// The user asked to suspend the viewer (Ctrl-Z); the main loop does it.
    pub suspend: bool,
    pub quit: bool,
}

/// Whether the environment asks for no colour (`NO_COLOR` set and not empty).
pub fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

impl App {
    /// Opens at the moment that shows how the trace ends (see [`Loaded::answer`]), with the
    /// ranks that matter first.
    pub fn new(loaded: Loaded) -> App {
        let fold = loaded.fold_at(0);
        let diagnosis = loaded.diagnose(&fold, 0);
        let shown = shown(&fold, &diagnosis);
        let chains = chains(&diagnosis);
        let mut app = App {
            loaded,
            pos: 0,
            fold,
            diagnosis,
            shown,
            chains,
            selected: 0,
            order: Order::State,
            only: None,
            stuck_only: false,
            focus: Focus::Ranks,
            diagnosis_scroll: 0,
            filter: EventFilter::default(),
            matches: Vec::new(),
            editing: None,
            detail: None,
            help: false,
            help_scroll: 0,
            zoom: 0,
            view_start: 0,
            graph: GraphMode::Auto,
            compact: false,
            color: !no_color_env(),
            light: false,
            status: None,
            mouse: true,
            suspend: false,
            quit: false,
        };
        if let Some(p) = app.loaded.answer {
            app.seek(p);
            app.select_first();
        }
        app
    }

    /// Which keys mean what now.
    pub fn mode(&self) -> Mode {
        if self.editing.is_some() {
            Mode::Editing
        } else if self.help {
            Mode::Help
        } else if self.detail.is_some() {
            Mode::Detail
        } else {
            Mode::Normal
        }
    }

    /// How rank `r` is drawn.
    pub fn shown_of(&self, r: u32) -> Shown {
        self.shown.get(r as usize).copied().unwrap_or(Shown {
            state: RankState::Idle,
            rendezvous: None,
            culprit: None,
            next_to_cause: false,
            no_dump: false,
            cut: false,
        })
    }

    /// The state rank `r` is drawn with.
    pub fn state_of(&self, r: u32) -> RankState {
        self.shown_of(r).state
    }

    pub fn ranks(&self) -> u32 {
        self.fold.ranks.len() as u32
    }

    /// The ranks the table lists, in its order.
    pub fn listed(&self) -> Vec<u32> {
        listed(
            &self.shown,
            self.order,
            self.only.as_deref(),
            self.stuck_only,
        )
    }

    /// Ranks blocked on a root cause (what the diagnosis counts).
    pub fn blocked(&self) -> Vec<u32> {
        (0..self.ranks())
            .filter(|&r| self.state_of(r) == RankState::Blocked)
            .collect()
    }

    fn select_first(&mut self) {
        if let Some(&r) = self.listed().first() {
            self.selected = r;
        }
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
        self.loaded.at_end(&mut self.fold, pos);
        self.diagnosis = self.loaded.diagnose(&self.fold, pos);
        self.shown = shown(&self.fold, &self.diagnosis);
        self.chains = chains(&self.diagnosis);
        self.follow();
    }

    /// The stretch of virtual time the timeline shows: where it starts, how long it is.
    pub fn window(&self) -> (Nanos, Nanos) {
        let end = self.loaded.end_ns();
        let span = (end >> self.zoom.min(63)).max(MIN_SPAN.min(end)).max(1);
        (self.view_start.min(end.saturating_sub(span)), span)
    }

    /// Keeps the cursor on the timeline: when it leaves the stretch shown, the stretch is
    /// centred on it.
    fn follow(&mut self) {
        let (lo, span) = self.window();
        let t = self.fold.t;
        if t < lo || t > lo + span {
            self.centre();
        }
    }

    fn centre(&mut self) {
        let (_, span) = self.window();
        self.view_start = self.fold.t.saturating_sub(span / 2);
        self.view_start = self.window().0;
    }

    /// Zooms the timeline in (`d > 0`) or out around the cursor.
    fn zoom_by(&mut self, d: i32) {
        let end = self.loaded.end_ns();
        // the deepest zoom that still shows more than MIN_SPAN
        let most = (0..64)
            .take_while(|&z| (end >> z) > MIN_SPAN)
            .last()
            .unwrap_or(0);
        let z = self.zoom.saturating_add_signed(d).min(most);
        if z == self.zoom {
            self.status = Some(if d > 0 {
                "the timeline is zoomed in as far as it goes".into()
            } else {
                "the timeline shows the whole run".into()
            });
            return;
        }
        self.zoom = z;
        self.centre();
        let (lo, span) = self.window();
        self.status = Some(if z == 0 {
            "timeline: the whole run".into()
        } else {
            format!(
                "timeline x{}: {} to {} (- zooms out)",
                1u64 << z.min(63),
                fmt_time(lo),
                fmt_time(lo + span)
            )
        });
    }

    fn seek_or(&mut self, pos: Option<usize>, missing: &str) {
        match pos {
            Some(p) => self.seek(p),
            None => self.status = Some(missing.to_string()),
        }
    }

    /// Moves to the next (`d > 0`) or previous marker of `kind`.
    fn jump_to_marker(&mut self, kind: MarkerKind, d: i64) {
        let m = &self.loaded.markers;
        let p = if d > 0 {
            m.next(kind, self.pos)
        } else {
            m.prev(kind, self.pos)
        };
        let (dir, name) = (if d > 0 { "after" } else { "before" }, kind.name());
        self.seek_or(p, &format!("no {name} {dir} this point"));
        if let Some(p) = p {
            self.status = self.loaded.markers.notes.get(&p).cloned();
        }
    }

    /// Moves `d` matches of the filter forward or back; with no filter, to the selected rank's
    /// next or previous event.
    fn jump_to_match(&mut self, d: i64) {
        let cur = self.pos.checked_sub(1);
        let target = if self.filter.is_empty() {
            let r = self.selected;
            let mut at = Some(self.pos);
            for _ in 0..d.unsigned_abs() {
                at = at.and_then(|p| {
                    if d > 0 {
                        self.loaded.next_of_rank(p, r)
                    } else {
                        self.loaded.prev_of_rank(p, r)
                    }
                });
            }
            at.ok_or(format!(
                "no {} event of rank {r}",
                if d > 0 { "later" } else { "earlier" }
            ))
        } else {
            // matches after the current event, or before it
            let k = match cur {
                Some(c) => self.matches.partition_point(|&i| i <= c),
                None => 0,
            };
            let before = match cur {
                Some(c) => self.matches.partition_point(|&i| i < c),
                None => 0,
            };
            let i = if d > 0 {
                k.checked_add(d as usize - 1)
                    .filter(|&i| i < self.matches.len())
            } else {
                before.checked_sub(d.unsigned_abs() as usize)
            };
            i.map(|i| self.matches[i] + 1).ok_or(format!(
                "no {} event matches `{}`",
                if d > 0 { "later" } else { "earlier" },
                self.filter.describe()
            ))
        };
        match target {
            Ok(p) => self.seek(p),
            Err(e) => self.status = Some(e),
        }
    }

    /// Moves the rank selection `d` rows in the table.
    fn select(&mut self, d: i64) {
        let rows = self.listed();
        if rows.is_empty() {
            return;
        }
        let at = rows.iter().position(|&r| r == self.selected).unwrap_or(0) as i64;
        let to = (at + d).clamp(0, rows.len() as i64 - 1);
        self.selected = rows[to as usize];
    }

    fn set_filter(&mut self, f: EventFilter) {
        self.matches = if f.is_empty() {
            Vec::new()
        } else {
            f.matching(self.loaded.events())
        };
        self.filter = f;
    }

    /// Runs a `:` command.
    fn command(&mut self, text: &str) -> Result<(), String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(());
        }
        if let Some(t) = text.strip_prefix('@') {
            let t = Duration::parse(t.trim()).map_err(|e| e.to_string())?;
            self.seek(self.loaded.pos_at_time(t.as_nanos()));
            self.status = Some(format!("at {}", fmt_time(t.as_nanos())));
            return Ok(());
        }
        if let Some(n) = text.strip_prefix('#') {
            let n: usize = n
                .trim()
                .parse()
                .map_err(|_| format!("`{n}` is not an event number"))?;
            if n > self.loaded.len() {
                return Err(format!("the trace has {} events", self.loaded.len()));
            }
            self.seek(n);
            return Ok(());
        }
        if matches!(text, "all" | "*") {
            self.only = None;
            return Ok(());
        }
        let ranks = parse_ranks(text, self.ranks())?;
        if ranks.len() == 1 && !text.contains('-') {
            // one rank: jump to it, showing it even where a list hid it
            let r = ranks[0];
            if !self.listed().contains(&r) {
                self.only = None;
                self.stuck_only = false;
            }
            self.selected = r;
            self.focus = Focus::Ranks;
        } else {
            self.only = Some(ranks);
            if !self.listed().contains(&self.selected) {
                self.select_first();
            }
        }
        Ok(())
    }

    /// Does what the user asked for.
    pub fn update(&mut self, action: Action) {
        self.status = None;
        let action = match self.navigate(action) {
            Some(a) => a,
            None => return,
        };
        let action = match self.type_text(action) {
            Some(a) => a,
            None => return,
        };
        self.toggle(action);
    }

    /// Moving through the trace, the ranks and the panels; any other action is handed back.
    fn navigate(&mut self, action: Action) -> Option<Action> {
        match action {
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
            Action::Answer => {
                let p = self.loaded.answer;
                self.seek_or(p, "the trace ends with nothing blocked and no root cause");
                if p.is_some() {
                    self.select_first();
                }
            }
            Action::FirstStall => {
                let p = self.loaded.markers.first_stall;
                self.seek_or(
                    p,
                    "no stall in this trace: no root cause, no watchdog timeout",
                );
                if p.is_some() {
                    self.select_first();
                }
            }
            Action::Marker(kind, d) => self.jump_to_marker(kind, d),
            Action::Match(d) => self.jump_to_match(d),
            Action::Select(d) => self.select(d),
            Action::Move(d) => match self.focus {
                Focus::Ranks => self.select(d),
                Focus::Diagnosis => self.scroll_diagnosis(d),
                Focus::Events if self.filter.is_empty() => self.update(Action::Step(d)),
                Focus::Events => self.jump_to_match(d),
            },
            Action::FocusNext(d) => self.focus = self.focus.next(d),
            Action::Focus(f) => self.focus = f,
            Action::SelectRank(r) => {
                self.selected = r.min(self.ranks().saturating_sub(1));
                self.focus = Focus::Ranks;
            }
            Action::SeekTo(p) => self.seek(p),
            Action::SeekTime(t) => self.seek(self.loaded.pos_at_time(t)),
            Action::Scroll(f, d) => {
                let keep = self.focus;
                self.focus = f;
                self.update(Action::Move(d));
                self.focus = keep;
            }
            Action::Zoom(d) => self.zoom_by(d),
            other => return Some(other),
        }
        None
    }

    /// Typing the filter or a command; any other action is handed back.
    fn type_text(&mut self, action: Action) -> Option<Action> {
        match action {
            Action::Edit(prompt) => {
                let text = match prompt {
                    Prompt::Filter => self.filter.describe(),
                    Prompt::Command => String::new(),
                };
                self.editing = Some(Editing {
                    prompt,
                    line: Line::new(&text),
                    error: None,
                });
            }
            Action::Char(c) => self.edit_line(LineOp::Insert(c)),
            Action::Backspace => self.edit_line(LineOp::Backspace),
            Action::Line(op) => self.edit_line(op),
            Action::Apply => self.apply(),
            Action::Cancel => {
                if let Some(e) = self.editing.take() {
                    if e.prompt == Prompt::Filter {
                        self.set_filter(EventFilter::default());
                    }
                }
            }
            Action::ClearFilter => {
                if self.filter.is_empty() {
                    return None;
                }
                self.set_filter(EventFilter::default());
                self.status = Some("filter dropped: every event".into());
            }
            other => return Some(other),
        }
        None
    }

    fn edit_line(&mut self, op: LineOp) {
        let Some(e) = self.editing.as_mut() else {
            return;
        };
        if e.line.apply(op) {
            e.error = None;
            self.live_filter();
        }
    }

    /// Keeps what was typed: applies the filter, runs the command. Text that does not read
    /// stays, with what is wrong on a line of its own; what is typed next replaces it.
    fn apply(&mut self) {
        let Some(mut e) = self.editing.take() else {
            return;
        };
        let text = e.line.text();
        let refused = match e.prompt {
            Prompt::Filter => match EventFilter::parse(&text) {
                Ok(f) => {
                    self.set_filter(f);
                    if !self.filter.is_empty() {
                        self.status = Some(format!(
                            "{} matching events: n next, N previous, Esc drops the filter",
                            self.matches.len()
                        ));
                    }
                    None
                }
                Err(err) => Some(format!("filter not applied: {}", err.0)),
            },
            Prompt::Command => self.command(&text).err(),
        };
        if let Some(err) = refused {
            e.error = Some(err);
            e.line.replace = true;
            self.editing = Some(e);
        }
    }

    /// View options: toggles and quitting.
    fn toggle(&mut self, action: Action) {
        match action {
            Action::Quit => self.quit = true,
            Action::Suspend => self.suspend = true,
            Action::ToggleMouse => {
                self.mouse = !self.mouse;
                self.status = Some(if self.mouse {
                    "mouse on: click and scroll in the viewer (m turns it off)".into()
                } else {
                    "mouse off: the terminal selects and scrolls text (m turns it on)".into()
                });
            }
            Action::ToggleTheme => {
                self.light = !self.light;
                self.status = Some(if self.light {
                    "colours for a light background (t: dark)".into()
                } else {
                    "colours for a dark background (t: light)".into()
                });
            }
            Action::Detail => {
                self.detail = match self.detail {
                    Some(_) => None,
                    None if self.pos > 0 => Some(0),
                    None => {
                        self.status = Some("no event yet: → steps to the first".into());
                        None
                    }
                }
            }
            Action::DetailScroll(d) => {
                if let Some(s) = self.detail.as_mut() {
                    *s = (i64::from(*s) + d).clamp(0, 500) as u16;
                }
            }
            Action::ToggleOrder => {
                self.order = match self.order {
                    Order::Rank => Order::State,
                    Order::State => Order::Rank,
                }
            }
            Action::ToggleStuck => {
                self.stuck_only = !self.stuck_only;
                if !self.listed().contains(&self.selected) {
                    self.select_first();
                }
            }
            Action::ToggleGraph => {
                self.graph = if self.shows_picture() {
                    GraphMode::List
                } else {
                    GraphMode::Picture
                }
            }
            Action::ToggleCompact => self.compact = !self.compact,
            Action::ToggleHelp => {
                self.help = !self.help;
                self.help_scroll = 0;
            }
            Action::HelpScroll(d) => {
                self.help_scroll = (i64::from(self.help_scroll) + d).clamp(0, 1_000) as u16;
            }
            _ => {}
        }
    }

    /// While the filter is typed, applies it whenever it reads.
    fn live_filter(&mut self) {
        let Some(e) = &mut self.editing else { return };
        if e.prompt != Prompt::Filter {
            return;
        }
        match EventFilter::parse(&e.line.text()) {
            Ok(f) => {
                if f != self.filter {
                    self.set_filter(f);
                }
            }
            Err(err) => e.error = Some(err.0),
        }
    }

    fn scroll_diagnosis(&mut self, d: i64) {
        self.diagnosis_scroll = (i64::from(self.diagnosis_scroll) + d).clamp(0, 10_000) as u16;
    }

    /// Whether rank `a` waits for rank `b` across a network partition.
    pub fn cut_link(&self, a: u32, b: u32) -> bool {
        self.diagnosis
            .waits
            .iter()
            .any(|w| w.from == a && w.to == b && crosses_partition(w))
    }

    /// Ranks that appear in the wait-for graph.
    pub fn graph_ranks(&self) -> Vec<u32> {
        let mut r: Vec<u32> = self.diagnosis.edges().flat_map(|(a, b)| [a, b]).collect();
        r.sort_unstable();
        r.dedup();
        r
    }

    /// The wait-for graph as lines of ranks, the chains to the culprits first.
    pub fn wait_paths(&self) -> Vec<WaitPath> {
        let first: Vec<u32> = self
            .chains
            .iter()
            .flat_map(|c| c.culprits.iter().copied())
            .collect();
        wait_paths(&self.diagnosis.edges().collect::<Vec<_>>(), &first)
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
mod tests;
