//! Rendering at fixed sizes with ratatui's TestBackend: snapshots of whole screens, and checks
//! of what matters most — blocked ranks in red, the root cause on screen.

use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::Color;
use ratatui::Terminal;
use ringside_sim::diagnose::{RankState, RootCause};
use ringside_sim::proto::Rank;
use ringside_sim::scenario;
use ringside_tui::app::App;
use ringside_tui::input::Action;
use ringside_tui::state::{record, Loaded};
use ringside_tui::ui;

const HEALTHY: &str = include_str!("../../scenarios/healthy-allreduce.toml");
const PREEMPT: &str = include_str!("../../scenarios/preempt-mid-allreduce.toml");

/// A small allreduce where rank 1 calls with other parameters than its peers.
const MISMATCH: &str = r#"
name = "mismatch-allreduce"
seed = 1
[world]
size = 3
[network]
latency = "5us"
bandwidth = "25GB/s"
[group]
timeout = "2s"
[workload]
iterations = 2
compute = "10ms"
elements = 64
[[workload.ops]]
op = "allreduce"
bytes = "64MiB"
[[faults]]
kind = "mismatch"
rank = 1
iteration = 0
bytes = "1MiB"
"#;

/// Rank 0 is cut off from ranks 1 and 2 in the middle of the first allreduce.
const PARTITION: &str = r#"
name = "partition-allreduce"
seed = 1
[world]
size = 3
[network]
latency = "5us"
bandwidth = "25GB/s"
[group]
timeout = "2s"
[workload]
iterations = 2
compute = "10ms"
elements = 64
[[workload.ops]]
op = "allreduce"
bytes = "64MiB"
[[faults]]
kind = "partition"
sides = [[0], [1, 2]]
at = "11ms"
"#;

fn app(toml: &str) -> App {
    let s = scenario::parse(toml, "test").expect("valid scenario");
    App::new(Loaded::new(record(&s, s.seed).expect("recorded")))
}

fn draw(app: &App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    t.draw(|f| ui::render(app, f)).expect("drawn");
    t
}

fn text(b: &Buffer) -> String {
    let mut s = String::new();
    for y in 0..b.area.height {
        for x in 0..b.area.width {
            s.push_str(b[(x, y)].symbol());
        }
        s.push('\n');
    }
    s
}

/// Cells where `needle` starts, as (x, y).
fn find(b: &Buffer, needle: &str) -> Vec<(u16, u16)> {
    let mut hits = Vec::new();
    for y in 0..b.area.height {
        let row: Vec<String> = (0..b.area.width)
            .map(|x| b[(x, y)].symbol().to_string())
            .collect();
        let n: Vec<String> = needle.chars().map(|c| c.to_string()).collect();
        for x in 0..row.len().saturating_sub(n.len() - 1) {
            if row[x..x + n.len()] == n[..] {
                hits.push((x as u16, y));
            }
        }
    }
    hits
}

/// Every blocked rank's state is drawn in red in the ranks table; every root cause is on
/// screen (or, without one, the screen says it is not determined).
fn check_blocked_and_causes(app: &App, b: &Buffer) {
    let blocked: Vec<u32> = (0..app.ranks())
        .filter(|&r| app.state_of(r) == RankState::Blocked)
        .collect();
    let cells = find(b, "blocked  ");
    assert_eq!(
        cells.len(),
        blocked.len(),
        "one red `blocked` per blocked rank {blocked:?}:\n{}",
        text(b)
    );
    for (x, y) in cells {
        for dx in 0..7 {
            assert_eq!(
                b[(x + dx, y)].fg,
                Color::Red,
                "blocked drawn red at ({x},{y})"
            );
        }
    }
    let screen = text(b);
    if app.diagnosis.causes.is_empty() {
        if !blocked.is_empty() {
            assert!(screen.contains("root cause: not determined"), "{screen}");
        }
    } else {
        for c in &app.diagnosis.causes {
            assert!(
                screen.contains(&c.cause.to_string()),
                "cause {} on screen:\n{screen}",
                c.cause
            );
        }
    }
}

fn at_end(toml: &str) -> App {
    let mut a = app(toml);
    a.update(Action::End);
    a
}

#[test]
fn healthy_run_at_the_end() {
    let a = at_end(HEALTHY);
    assert!(a.diagnosis.causes.is_empty());
    for (w, h) in [(80, 24), (160, 48)] {
        let t = draw(&a, w, h);
        check_blocked_and_causes(&a, t.backend().buffer());
        assert!(text(t.backend().buffer()).contains("completed"));
        insta::assert_snapshot!(format!("healthy_end_{w}x{h}"), t.backend());
    }
}

#[test]
fn healthy_run_mid_allreduce_shows_waits_in_progress() {
    let mut a = app(HEALTHY);
    // the first allreduce is under way: everyone waits for a neighbour, nobody is blocked
    a.update(Action::Step(25));
    let t = draw(&a, 80, 24);
    let screen = text(t.backend().buffer());
    assert!(screen.contains("waiting"), "{screen}");
    check_blocked_and_causes(&a, t.backend().buffer());
    insta::assert_snapshot!("healthy_mid_80x24", t.backend());
}

#[test]
fn preemption_stall() {
    let mut a = app(PREEMPT);
    a.update(Action::FirstStall);
    assert!(a.pos > 0 && a.pos < a.loaded.len());
    assert_eq!(a.diagnosis.root_causes(), [RootCause::Preempted(Rank(2))]);
    let t = draw(&a, 80, 24);
    check_blocked_and_causes(&a, t.backend().buffer());
    insta::assert_snapshot!("preempt_first_stall_80x24", t.backend());
    a.update(Action::End);
    for (w, h) in [(80, 24), (160, 48)] {
        let t = draw(&a, w, h);
        let b = t.backend().buffer();
        check_blocked_and_causes(&a, b);
        assert!(text(b).contains("preempted at 12.000ms"), "{}", text(b));
        insta::assert_snapshot!(format!("preempt_end_{w}x{h}"), t.backend());
    }
}

#[test]
fn mismatch() {
    let a = at_end(MISMATCH);
    // a stall is marked even where no root cause is named (then at the first watchdog)
    assert!(a.loaded.markers.first_stall.is_some());
    for (w, h) in [(80, 24), (160, 48)] {
        let t = draw(&a, w, h);
        check_blocked_and_causes(&a, t.backend().buffer());
        insta::assert_snapshot!(format!("mismatch_end_{w}x{h}"), t.backend());
    }
}

#[test]
fn partition() {
    let a = at_end(PARTITION);
    assert!(a
        .diagnosis
        .root_causes()
        .iter()
        .any(|c| matches!(c, RootCause::Partitioned(_))));
    for (w, h) in [(80, 24), (160, 48)] {
        let t = draw(&a, w, h);
        check_blocked_and_causes(&a, t.backend().buffer());
        insta::assert_snapshot!(format!("partition_end_{w}x{h}"), t.backend());
    }
}

#[test]
fn graph_as_a_list_and_ranks_as_a_grid() {
    let mut a = at_end(PREEMPT);
    a.update(Action::ToggleGraph);
    a.update(Action::ToggleCompact);
    let t = draw(&a, 80, 24);
    let screen = text(t.backend().buffer());
    assert!(screen.contains("0 waits for 2"), "{screen}");
    assert!(screen.contains("ranks (3), grid"), "{screen}");
    insta::assert_snapshot!("preempt_list_grid_80x24", t.backend());
}

#[test]
fn help_and_filter() {
    let mut a = at_end(PREEMPT);
    a.update(Action::EditFilter);
    for c in "r2 drop".chars() {
        a.update(Action::FilterChar(c));
    }
    a.update(Action::FilterApply);
    let t = draw(&a, 80, 24);
    let screen = text(t.backend().buffer());
    assert!(screen.contains("filter: r2 drop"), "{screen}");
    assert!(screen.contains("1→2 id 8"), "{screen}");
    assert!(!screen.contains("process_start"), "{screen}");
    a.update(Action::ToggleHelp);
    let t = draw(&a, 80, 24);
    let screen = text(t.backend().buffer());
    assert!(screen.contains("jump to the first stall"), "{screen}");
    insta::assert_snapshot!("help_80x24", t.backend());
}

#[test]
fn too_small_a_terminal_says_so() {
    let a = app(HEALTHY);
    let t = draw(&a, 40, 10);
    assert!(text(t.backend().buffer()).contains("needs at least"));
}

#[test]
fn an_interrupted_trace_and_an_empty_one() {
    let s = scenario::parse(PREEMPT, "test").expect("valid scenario");
    let mut trace = record(&s, s.seed).expect("recorded");
    trace.footer = None;
    trace.events.truncate(30);
    let mut a = App::new(Loaded::new(trace.clone()));
    a.update(Action::End);
    let screen = text(draw(&a, 80, 24).backend().buffer());
    assert!(screen.contains("outcome unfinished"), "{screen}");
    assert!(screen.contains("event 30 of 30"), "{screen}");
    trace.events.clear();
    let mut a = App::new(Loaded::new(trace));
    for action in [
        Action::End,
        Action::Step(-1),
        Action::FirstStall,
        Action::NextOfRank,
    ] {
        a.update(action);
    }
    let screen = text(draw(&a, 80, 24).backend().buffer());
    assert!(screen.contains("the trace has no events"), "{screen}");
}
