//! Rendering at fixed sizes with ratatui's TestBackend: snapshots of whole screens, and checks
//! of what matters most on buffer cells — blocked ranks in red, culprits marked with a glyph
//! in magenta, the root cause and the chain to it on screen, the offending call highlighted.

use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};
use ratatui::Terminal;
use ringside_sim::diagnose::{RankState, RootCause};
use ringside_sim::proto::Rank;
use ringside_sim::scenario;
use ringside_sim::trace::Event;
use ringside_tui::app::{App, Prompt};
use ringside_tui::input::Action;
use ringside_tui::state::{record, Culprit, Loaded, MarkerKind};
use ringside_tui::view::{self, Hit};

const HEALTHY: &str = include_str!("../../scenarios/healthy-allreduce.toml");
const PREEMPT: &str = include_str!("../../scenarios/preempt-mid-allreduce.toml");
const HUNG: &str = include_str!("../../scenarios/hung-worker.toml");
const MISMATCHED: &str = include_str!("../../scenarios/mismatched-bytes.toml");
const SKIPPED: &str = include_str!("../../scenarios/skipped-allreduce.toml");
const ELASTIC: &str = include_str!("../../scenarios/elastic-three-workers.toml");
const MESH: &str = include_str!("../../scenarios/mesh-tp-dp.toml");
const PREEMPT_256: &str = include_str!("scenarios/preempt-256.toml");

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

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];

fn app(toml: &str) -> App {
    let s = scenario::parse(toml, "test").expect("valid scenario");
    let mut a = App::new(Loaded::new(record(&s, s.seed).expect("recorded")));
    // snapshots are taken in colour whatever the environment says
    a.color = true;
    a
}

fn draw(app: &App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    t.draw(|f| view::render(app, f)).expect("drawn");
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
    let n: Vec<String> = needle.chars().map(|c| c.to_string()).collect();
    for y in 0..b.area.height {
        let row: Vec<String> = (0..b.area.width)
            .map(|x| b[(x, y)].symbol().to_string())
            .collect();
        for x in 0..row.len().saturating_sub(n.len() - 1) {
            if row[x..x + n.len()] == n[..] {
                hits.push((x as u16, y));
            }
        }
    }
    hits
}

/// The screen row that shows rank `r` in the table (its number after the glyph column).
fn row_of_rank(b: &Buffer, app: &App, r: u32) -> Option<u16> {
    let s = app.shown_of(r);
    let g = ringside_tui::view::style::glyph(&s);
    let w = app.ranks().saturating_sub(1).to_string().len();
    [format!(">{g}{r:>w$} "), format!(" {g}{r:>w$} ")]
        .iter()
        .flat_map(|needle| find(b, needle))
        .map(|(_, y)| y)
        .next()
}

/// Every blocked rank on screen has its state drawn in red; every culprit on screen has its
/// glyph and state in magenta; every root cause is on screen (or, without one, the screen
/// says it is not determined).
fn check_states_and_causes(app: &App, b: &Buffer) {
    let screen = text(b);
    for r in app.listed() {
        let Some(y) = row_of_rank(b, app, r) else {
            continue;
        };
        let s = app.shown_of(r);
        let label = s.label();
        let (x, _) = find(b, &format!("{label} "))
            .into_iter()
            .find(|&(_, yy)| yy == y)
            .unwrap_or_else(|| panic!("rank {r} shows `{label}`:\n{screen}"));
        let want = if s.culprit.is_some() {
            Some(Color::Magenta)
        } else if s.state == RankState::Blocked {
            Some(Color::Red)
        } else {
            None
        };
        if let Some(c) = want {
            for dx in 0..label.chars().count() as u16 {
                assert_eq!(
                    b[(x + dx, y)].fg,
                    c,
                    "rank {r} `{label}` in {c:?}:\n{screen}"
                );
            }
            let g = ringside_tui::view::style::glyph(&s);
            let gx = find(b, &g.to_string())
                .into_iter()
                .find(|&(_, yy)| yy == y)
                .expect("a glyph on the row");
            assert_eq!(b[gx].fg, c, "rank {r}'s glyph in {c:?}");
        }
    }
    if app.diagnosis.causes.is_empty() {
        if !app.blocked().is_empty() {
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
    let a = app(HEALTHY);
    assert_eq!(a.pos, 0, "no stall: it opens at the start");
    let a = at_end(HEALTHY);
    assert!(a.diagnosis.causes.is_empty());
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        check_states_and_causes(&a, t.backend().buffer());
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
    assert!(screen.contains("in progress"), "{screen}");
    check_states_and_causes(&a, t.backend().buffer());
    insta::assert_snapshot!("healthy_mid_80x24", t.backend());
}

/// 256 ranks in a ring, rank 100 preempted: opened at the moment that shows how it ends (after
/// the first stall, once all 255 others wait), the answer and the chain to the root cause are on
/// screen at 80x24 without scrolling, the dead rank is listed first, and at the end the blocked
/// count is exact and every step total is shown.
#[test]
fn preemption_of_one_rank_in_256() {
    let mut a = app(PREEMPT_256);
    assert_eq!(Some(a.pos), a.loaded.answer);
    assert!(a.loaded.markers.first_stall < Some(a.pos));
    assert_eq!(a.blocked().len(), 255);
    assert_eq!(a.diagnosis.root_causes(), [RootCause::Preempted(Rank(100))]);
    assert_eq!(
        a.listed()[..2],
        [100, 101],
        "the culprit, then who waits on it"
    );
    assert_eq!(a.shown_of(100).culprit, Some(Culprit::Dead));
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        let b = t.backend().buffer();
        let screen = text(b);
        assert!(screen.contains("preempted:100"), "{screen}");
        assert!(screen.contains("101 → 100 ✗ dead"), "{screen}");
        assert!(
            screen.contains("blocked: 255 ranks: 0-99,101-255"),
            "{screen}"
        );
        assert!(row_of_rank(b, &a, 100).is_some() && row_of_rank(b, &a, 101).is_some());
        check_states_and_causes(&a, b);
        insta::assert_snapshot!(format!("preempt256_first_screen_{w}x{h}"), t.backend());
    }
    a.update(Action::End);
    let blocked = a.blocked();
    assert_eq!(blocked.len(), 255);
    assert_eq!(
        a.listed()[..3],
        [100, 101, 0],
        "the culprit, then who waits on it directly, then the others"
    );
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        let b = t.backend().buffer();
        let screen = text(b);
        assert!(
            screen.contains("blocked: 255 ranks: 0-99,101-255"),
            "{screen}"
        );
        assert!(
            screen.contains("then 254 ranks in single file: 102 → 101"),
            "{screen}"
        );
        // the step column shows k/total
        assert!(find(b, "/510 ").len() >= 4, "{screen}");
        check_states_and_causes(&a, b);
        insta::assert_snapshot!(format!("preempt256_end_{w}x{h}"), t.backend());
    }
    // the time axis: the stall at 12ms of a 2s run is at the very left of the bar
    let t = draw(&a, 80, 24);
    let b = t.backend().buffer();
    let (sx, _) = find(b, "S")
        .into_iter()
        .find(|&(_, y)| y == 21)
        .expect("S on the bar");
    assert!(sx <= 2, "the first stall is drawn at column {sx}");
}

#[test]
fn preemption_stall() {
    let mut a = app(PREEMPT);
    assert!(a.pos > 0 && a.pos < a.loaded.len());
    assert_eq!(a.diagnosis.root_causes(), [RootCause::Preempted(Rank(2))]);
    let t = draw(&a, 80, 24);
    check_states_and_causes(&a, t.backend().buffer());
    insta::assert_snapshot!("preempt_first_screen_80x24", t.backend());
    a.update(Action::End);
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        let b = t.backend().buffer();
        check_states_and_causes(&a, b);
        assert!(text(b).contains("preempted at 12.000ms"), "{}", text(b));
        insta::assert_snapshot!(format!("preempt_end_{w}x{h}"), t.backend());
    }
}

/// A rank that stops issuing calls: marked hung (not green running), an F on the timeline,
/// and `f` lands on its last call.
#[test]
fn hung_worker() {
    let mut a = at_end(HUNG);
    assert_eq!(a.shown_of(3).culprit, Some(Culprit::Hung));
    assert_eq!(a.shown_of(3).label(), "hung");
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        let b = t.backend().buffer();
        check_states_and_causes(&a, b);
        let bar = h - 3;
        let f = find(b, "F")
            .into_iter()
            .find(|&(_, y)| y == bar)
            .expect("an F marker on the timeline");
        assert_eq!(b[f].fg, Color::Red);
        insta::assert_snapshot!(format!("hung_end_{w}x{h}"), t.backend());
    }
    a.update(Action::Start);
    a.update(Action::Marker(MarkerKind::Fault, 1));
    let (_, ev) = &a.loaded.events()[a.pos - 1];
    assert!(
        matches!(
            ev,
            Event::Complete {
                rank: 3,
                iteration: 1,
                ..
            }
        ),
        "{ev:?}"
    );
    assert!(a.status.as_deref().unwrap_or("").contains("hang: rank 3"));
}

/// An application bug: `f` lands on the call with the wrong size, drawn red and marked F.
#[test]
fn mismatched_bytes_highlights_the_offending_call() {
    let mut a = app(MISMATCHED);
    a.update(Action::Start);
    a.update(Action::Marker(MarkerKind::Fault, 1));
    let (_, ev) = &a.loaded.events()[a.pos - 1];
    assert!(
        matches!(
            ev,
            Event::Call {
                rank: 2,
                bytes: 1048576,
                ..
            }
        ),
        "{ev:?}"
    );
    // one more step, so the highlighted call is not under the cursor
    a.update(Action::Step(1));
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        let b = t.backend().buffer();
        let (x, y) = find(b, "rank 2 allreduce #3 ring 1MiB")[0];
        assert_eq!(b[(x, y)].fg, Color::Red, "the offending call in red");
        assert!(b[(x, y)].modifier.contains(Modifier::BOLD));
        let gutter = if w >= view::WIDE { 2 } else { 1 };
        assert_eq!(b[(gutter, y)].symbol(), "F", "marked F:\n{}", text(b));
        insta::assert_snapshot!(format!("mismatched_call_{w}x{h}"), t.backend());
    }
    a.update(Action::End);
    assert_eq!(a.shown_of(2).culprit, Some(Culprit::Mismatching));
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        check_states_and_causes(&a, t.backend().buffer());
        insta::assert_snapshot!(format!("mismatched_end_{w}x{h}"), t.backend());
    }
    // Enter shows every field of the offending call
    a.update(Action::Start);
    a.update(Action::Marker(MarkerKind::Fault, 1));
    a.update(Action::Detail);
    let screen = text(draw(&a, 80, 24).backend().buffer());
    for field in [
        "bytes: 1048576",
        "iteration: 1",
        "members: 4",
        "F mismatch: rank 2",
    ] {
        assert!(screen.contains(field), "{field}:\n{screen}");
    }
}

#[test]
fn skipped_call_is_the_one_issued_in_its_place() {
    let mut a = app(SKIPPED);
    a.update(Action::Start);
    a.update(Action::Marker(MarkerKind::Fault, 1));
    let (_, ev) = &a.loaded.events()[a.pos - 1];
    assert!(
        matches!(
            ev,
            Event::Call {
                rank: 1,
                iteration: 1,
                index: 1,
                ..
            }
        ),
        "{ev:?}"
    );
    a.update(Action::End);
    assert_eq!(a.shown_of(1).culprit, Some(Culprit::Skipping));
}

/// An elastic group rebuilding after a preemption: the survivors are in a rendezvous (not
/// blocked), the generation column counts generations.
#[test]
fn elastic_rebuild() {
    let mut a = app(ELASTIC);
    // both survivors have aborted and started the rendezvous
    let second = a
        .loaded
        .events()
        .iter()
        .enumerate()
        .filter(|(_, (_, e))| matches!(e, Event::RendezvousStart { .. }))
        .nth(1)
        .expect("two ranks in the rendezvous")
        .0;
    a.update(Action::SeekTo(second + 2));
    assert!(a.shown_of(0).rendezvous.is_some(), "{:?}", a.shown_of(0));
    assert!(a.shown_of(1).rendezvous.is_some());
    assert!(
        a.blocked().is_empty(),
        "ranks in a rendezvous are not blocked"
    );
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        let screen = text(t.backend().buffer());
        assert!(screen.contains("rendezvous "), "{screen}");
        assert!(screen.contains("rebuild → gen 1"), "{screen}");
        assert!(screen.contains("gen "), "the generation column:\n{screen}");
        assert!(!screen.contains("blocked:"), "{screen}");
        insta::assert_snapshot!(format!("elastic_rendezvous_{w}x{h}"), t.backend());
    }
    a.update(Action::Marker(MarkerKind::Generation, 1));
    a.update(Action::End);
    let t = draw(&a, 160, 48);
    let screen = text(t.backend().buffer());
    assert!(screen.contains("rebuilt"), "{screen}");
    insta::assert_snapshot!("elastic_end_160x48", t.backend());
}

/// A 2 x 4 mesh: the group column tells a tensor-parallel row from a data-parallel column.
#[test]
fn mesh_groups() {
    let mut a = app(MESH);
    let dp = a
        .loaded
        .events()
        .iter()
        .position(|(_, e)| matches!(e, Event::Call { index: 1, .. }))
        .expect("a dp call");
    a.update(Action::SeekTo(dp + 3));
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        let screen = text(t.backend().buffer());
        assert!(screen.contains("group"), "{screen}");
        assert!(
            screen.contains("tp 0-3") || screen.contains("tp 4-7"),
            "{screen}"
        );
        assert!(screen.contains("dp "), "{screen}");
        insta::assert_snapshot!(format!("mesh_groups_{w}x{h}"), t.backend());
    }
}

/// The mesh's wait-for graph mid-allreduce: each ring on its own circle at 160x48, and as
/// lines that name their cycle and group where the panel is short.
#[test]
fn mesh_wait_for_graph() {
    let mut a = app(MESH);
    let dp = a
        .loaded
        .events()
        .iter()
        .position(|(_, e)| matches!(e, Event::Call { index: 1, .. }))
        .expect("a dp call");
    a.update(Action::SeekTo(dp + 3));
    let t = draw(&a, 80, 24);
    let screen = text(t.backend().buffer());
    assert!(
        screen.contains("4 → 7 → 6 → 5 → 4  cycle  tp 4-7"),
        "{screen}"
    );
    assert!(
        screen.contains("1 → 0 → 3 → 2 → 6  tp 0-3, dp 2,6"),
        "{screen}"
    );
    let t = draw(&a, 160, 48);
    let b = t.backend().buffer();
    // every rank is named in the picture, and the two rings do not overlap: the ranks of
    // one are all left of the ranks of the other
    let graph_x = |r: u32| {
        let xs: Vec<u16> = find(b, &r.to_string())
            .into_iter()
            .filter(|&(x, y)| x > 90 && (3..27).contains(&y))
            .map(|(x, _)| x)
            .collect();
        assert_eq!(xs.len(), 1, "rank {r} once in the picture: {}", text(b));
        xs[0]
    };
    let left = [4, 5, 6, 7].map(graph_x);
    let right = [0, 1, 2, 3].map(graph_x);
    assert!(left.iter().max() < right.iter().min(), "{left:?} {right:?}");
    insta::assert_snapshot!("mesh_graph_160x48", t.backend());
}

/// The picture of a 256-rank graph is its one line of waits, shortened in the middle, the
/// dead rank at its end: not a ring of 256 dots.
#[test]
fn a_large_graph_is_drawn_as_its_chain() {
    let mut a = app(PREEMPT_256);
    a.update(Action::End);
    a.update(Action::ToggleGraph);
    assert!(a.shows_picture());
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        let screen = text(t.backend().buffer());
        assert!(screen.contains("256 ranks in 1 line of waits"), "{screen}");
        assert!(screen.contains("99 → … "), "{screen}");
        assert!(screen.contains("→ 102 → 101 → 100✗"), "{screen}");
        insta::assert_snapshot!(format!("preempt256_graph_{w}x{h}"), t.backend());
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
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        check_states_and_causes(&a, t.backend().buffer());
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
    assert!(screen.contains("1 → 0 → 2✗"), "{screen}");
    assert!(screen.contains(", grid"), "{screen}");
    insta::assert_snapshot!("preempt_list_grid_80x24", t.backend());
}

#[test]
fn help_and_filter() {
    let mut a = at_end(PREEMPT);
    a.update(Action::Edit(Prompt::Filter));
    for c in "r2 drop".chars() {
        a.update(Action::Char(c));
    }
    a.update(Action::Apply);
    let t = draw(&a, 80, 24);
    let screen = text(t.backend().buffer());
    assert!(screen.contains("/r2 drop"), "{screen}");
    assert!(screen.contains("1→2 id 8"), "{screen}");
    assert!(!screen.contains("process_start"), "{screen}");
    a.update(Action::ToggleHelp);
    let t = draw(&a, 80, 24);
    let screen = text(t.backend().buffer());
    assert!(screen.contains("first stall"), "{screen}");
    insta::assert_snapshot!("help_80x24", t.backend());
}

/// `NO_COLOR`: no cell has a colour; what colour told is still there in words and glyphs.
#[test]
fn no_color_keeps_words_and_glyphs() {
    let mut a = at_end(HUNG);
    a.color = false;
    let t = draw(&a, 80, 24);
    let b = t.backend().buffer();
    for cell in b.content() {
        assert_eq!((cell.fg, cell.bg), (Color::Reset, Color::Reset));
    }
    let screen = text(b);
    assert!(screen.contains("∞3 hung"), "{screen}");
    assert!(screen.contains("blocked"), "{screen}");
}

/// The palette never draws text in grey, white or black, nor on a fixed background.
#[test]
fn the_palette_reads_on_light_and_dark_terminals() {
    for a in [at_end(HUNG), at_end(PREEMPT), app(PREEMPT_256)] {
        for (w, h) in SIZES {
            let t = draw(&a, w, h);
            for cell in t.backend().buffer().content() {
                for c in [cell.fg, cell.bg] {
                    assert!(
                        !matches!(
                            c,
                            Color::Gray
                                | Color::DarkGray
                                | Color::White
                                | Color::Black
                                | Color::Rgb(..)
                                | Color::Indexed(_)
                        ),
                        "{c:?} at {cell:?}"
                    );
                }
            }
        }
    }
}

/// Clicks land on the rank, the event and the time under them.
#[test]
fn the_mouse_finds_ranks_events_and_times() {
    let a = app(PREEMPT_256);
    let area = Rect::new(0, 0, 80, 24);
    let t = draw(&a, 80, 24);
    let b = t.backend().buffer();
    let y = row_of_rank(b, &a, 101).expect("rank 101 on screen");
    assert_eq!(view::hit(&a, area, 10, y), Hit::Rank(101));
    let (_, ey) = find(b, "▶")[0];
    assert_eq!(view::hit(&a, area, 30, ey), Hit::Event(a.pos - 1));
    // the bar is at row 21: each column is a time, or a marker that leads to its event
    let mut times = Vec::new();
    for x in 0..80 {
        match view::hit(&a, area, x, 21) {
            Hit::Time(t) => times.push(t),
            Hit::Marker(pos) => assert!(a.loaded.markers.markers.iter().any(|m| m.pos == pos)),
            other => panic!("column {x} of the bar: {other:?}"),
        }
    }
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    assert!(times.iter().all(|&t| t <= a.loaded.end_ns()));
}

/// A run of 2 s whose every event is in its first 35 ms: zoomed in, each distinct time of the
/// trace gets a column of its own at 80 columns and a click there lands on it (on its last
/// event, or on the marked one); every marker, drawn apart from the others, leads to its own
/// event. The axis is ticked at
/// round times.
#[test]
fn zoom_lets_a_click_reach_every_event_at_80_columns() {
    let mut a = app(PREEMPT);
    let area = Rect::new(0, 0, 80, 24);
    let bar = 21;
    let events = a.loaded.events().to_vec();
    let mut reached = 0;
    for (i, (t, _)) in events.iter().enumerate() {
        // the last event at its time: the state a click at that time shows
        if events.get(i + 1).is_some_and(|(n, _)| n == t) {
            continue;
        }
        a.update(Action::SeekTo(i + 1));
        a.update(Action::Zoom(64));
        // a column whose time shows the event, or its marker
        let x = (0..80)
            .find(|&x| match view::hit(&a, area, x, bar) {
                Hit::Time(c) => c >= *t && events.get(i + 1).is_none_or(|(n, _)| c < *n),
                Hit::Marker(p) => a.loaded.time_at(p) == *t,
                _ => false,
            })
            .unwrap_or_else(|| panic!("no column for event {} at {t}ns", i + 1));
        // from elsewhere on the same stretch of the timeline
        let shown = a.window();
        a.update(Action::Step(-1));
        if a.window() != shown {
            a.update(Action::Step(1));
        }
        a.update(ringside_tui::input::mouse(&a, area, click(x, bar)));
        assert_eq!(
            a.loaded.time_at(a.pos),
            *t,
            "a click at column {x} reaches the moment of event {}",
            i + 1
        );
        a.update(Action::Zoom(-64));
        reached += 1;
    }
    // without the zoom, those moments share columns: no click could tell them apart
    let end = a.loaded.end_ns();
    let mut unzoomed: Vec<u64> = events.iter().map(|(t, _)| t * 79 / end).collect();
    unzoomed.dedup();
    assert!(
        unzoomed.len() < reached,
        "{unzoomed:?} for {reached} moments"
    );
    // each marker, zoomed in on, is a column of its own that leads to its event
    for m in a.loaded.markers.markers.clone() {
        a.update(Action::SeekTo(m.pos));
        for _ in 0..12 {
            a.update(Action::Zoom(1));
        }
        let x = (0..80)
            .find(|&x| view::hit(&a, area, x, bar) == Hit::Marker(m.pos))
            .unwrap_or_else(|| {
                panic!(
                    "{m:?} on the bar:\n{}",
                    text(draw(&a, 80, 24).backend().buffer())
                )
            });
        let shown = a.window();
        a.update(Action::Step(-1));
        if a.window() != shown {
            a.update(Action::Step(1));
        }
        a.update(ringside_tui::input::mouse(&a, area, click(x, bar)));
        assert_eq!(a.pos, m.pos, "{m:?}");
        a.update(Action::Zoom(-64));
    }
    // zoomed in around the fault at 12ms: ticks at round milliseconds
    a.update(Action::Start);
    a.update(Action::Marker(MarkerKind::Fault, 1));
    for _ in 0..7 {
        a.update(Action::Zoom(1));
    }
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        let screen = text(t.backend().buffer());
        let ticks = screen.lines().nth(h as usize - 2).unwrap_or("");
        assert!(ticks.contains("╵10ms"), "{screen}");
        insta::assert_snapshot!(format!("preempt_zoomed_{w}x{h}"), t.backend());
    }
    // the whole run: ticks of 0 to 2s
    a.update(Action::Zoom(-64));
    let screen = text(draw(&a, 80, 24).backend().buffer());
    assert!(
        screen.contains("╵0 ") && screen.contains("╵1000ms"),
        "{screen}"
    );
}

fn click(x: u16, y: u16) -> crossterm::event::MouseEvent {
    crossterm::event::MouseEvent {
        kind: crossterm::event::MouseEventKind::Down(crossterm::event::MouseButton::Left),
        column: x,
        row: y,
        modifiers: crossterm::event::KeyModifiers::NONE,
    }
}

/// Three ranks in three groups, each calling first the group the next rank calls last: a
/// deadlock of three that no one rank's order explains.
fn cycle3() -> String {
    let mut s = String::from(
        "name = \"three-cycle\"\nseed = 1\n[world]\nsize = 3\n[group]\ntimeout = \"1s\"\n",
    );
    for (name, pair) in [("a", "0, 1"), ("b", "1, 2"), ("c", "2, 0")] {
        s += &format!("[[groups]]\nname = \"{name}\"\nranks = [[{pair}]]\n");
    }
    s += "[workload]\niterations = 1\n";
    for (rank, first, then) in [(0, "a", "c"), (1, "b", "a"), (2, "c", "b")] {
        s += &format!("[[workload.programs]]\nranks = [{rank}]\n");
        for group in [first, then] {
            s += &format!(
                "[[workload.programs.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\ngroup = \"{group}\"\n"
            );
        }
    }
    s
}

/// Each wait the diagnosis draws reads as the rank table does: `A → B` exactly where the row
/// of A says it waits for B.
fn check_links_read_as_the_table(a: &App, screen: &str) {
    for w in &a.diagnosis.waits {
        let waits_for = &a.fold.ranks[w.from as usize]
            .call
            .as_ref()
            .expect("a waiting rank is in a call")
            .waiting_for;
        assert!(
            waits_for.contains(&w.to),
            "{} waits for {}: {waits_for:?}",
            w.from,
            w.to
        );
    }
    for line in screen.lines() {
        for (arrow, cut) in [(" → ", false), (" ↛ ", true)] {
            for (i, _) in line.match_indices(arrow) {
                let before = line[..i].trim_end();
                let after = line[i + arrow.len()..].trim_start();
                let num = |s: &str, rev: bool| -> Option<u32> {
                    let digits: String = if rev {
                        let t: String = s
                            .chars()
                            .rev()
                            .skip_while(|c| !c.is_ascii_digit())
                            .take_while(|c| c.is_ascii_digit())
                            .collect();
                        t.chars().rev().collect()
                    } else {
                        s.chars().take_while(|c| c.is_ascii_digit()).collect()
                    };
                    digits.parse().ok()
                };
                // only single ranks on both sides, as the chains and the graph's lines draw them
                let (Some(from), Some(to)) = (num(before, true), num(after, false)) else {
                    continue;
                };
                let tail = before.rsplit([' ', ',']).next().unwrap_or("");
                if tail.contains('-') || before.ends_with("more") {
                    continue;
                }
                assert!(
                    a.diagnosis
                        .waits
                        .iter()
                        .any(|w| w.from == from && w.to == to),
                    "`{from}{arrow}{to}` in `{line}` is no wait of the table:\n{screen}"
                );
                assert_eq!(a.cut_link(from, to), cut, "`{line}`");
            }
        }
    }
}

#[test]
fn wait_chains_read_as_the_ranks_table_mismatch_partition_and_a_three_cycle() {
    // a mismatch: rank 2 waits for 1, rank 3 for 2, as the rows of 2 and 3 say
    let a = at_end(MISMATCHED);
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        let screen = text(t.backend().buffer());
        assert!(
            screen.contains("2 ≠ mismatch → 1, 3 → 2 ≠ mismatch"),
            "{screen}"
        );
        check_links_read_as_the_table(&a, &screen);
        insta::assert_snapshot!(format!("chain_mismatch_{w}x{h}"), t.backend());
    }
    // a partition of {0} and {1,2}: the links it cuts are drawn cut, on the ranks too
    let a = at_end(PARTITION);
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        let b = t.backend().buffer();
        let screen = text(b);
        assert!(screen.contains("1 ↛ 0, 0 ↛ 2"), "{screen}");
        for r in [0, 1] {
            assert!(a.shown_of(r).cut, "rank {r} waits across the partition");
            assert!(row_of_rank(b, &a, r).is_some(), "{screen}");
        }
        assert!(!a.shown_of(2).cut, "rank 2 waits on its own side");
        assert!(screen.contains("↛cut"), "{screen}");
        check_links_read_as_the_table(&a, &screen);
        insta::assert_snapshot!(format!("chain_partition_{w}x{h}"), t.backend());
    }
    // a deadlock of three
    let a = at_end(&cycle3());
    assert!(
        a.diagnosis
            .root_causes()
            .iter()
            .any(|c| matches!(c, RootCause::Deadlock(_))),
        "{:?}",
        a.diagnosis.root_causes()
    );
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        let screen = text(t.backend().buffer());
        assert!(screen.contains("cycle: 0 → 1 → 2 → 0"), "{screen}");
        check_links_read_as_the_table(&a, &screen);
        insta::assert_snapshot!(format!("chain_cycle3_{w}x{h}"), t.backend());
    }
}

/// The help scrolls to its end at the smallest size, and holds every key, the whole legend
/// and the notes about the trace.
#[test]
fn help_scrolls_and_its_legend_is_complete() {
    let s = scenario::parse(PREEMPT, "test").expect("valid scenario");
    let mut trace = record(&s, s.seed).expect("recorded");
    trace.incomplete = Some("its last line is cut short".into());
    let mut a = App::new(Loaded::new(trace));
    a.color = true;
    a.update(Action::End);
    a.update(Action::ToggleHelp);
    let all: String = view::help_lines(&a)
        .iter()
        .map(|l| l.to_string() + "\n")
        .collect();
    for (k, _) in ringside_tui::input::KEYS {
        assert!(all.contains(k), "{k}");
    }
    for c in Culprit::ALL {
        assert!(
            all.contains(&format!("{} {}", c.glyph(), c.name())),
            "{c:?}:\n{all}"
        );
    }
    for needle in [
        "● blocked",
        "↛ blocked across a partition",
        "? missing",
        "F fault",
        "S first stall",
        "═ stalled",
        "rendezvous",
        "paused",
        "about this trace",
        "its last line is cut short",
    ] {
        assert!(all.contains(needle), "{needle}:\n{all}");
    }
    let screen = text(draw(&a, 60, 16).backend().buffer());
    assert!(screen.contains("↓"), "it says there is more:\n{screen}");
    a.update(Action::HelpScroll(10_000));
    let screen = text(draw(&a, 60, 16).backend().buffer());
    assert!(screen.contains("cut short"), "the end:\n{screen}");
    a.update(Action::HelpScroll(-10_000));
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        insta::assert_snapshot!(format!("help_legend_{w}x{h}"), t.backend());
    }
    a.update(Action::HelpScroll(12));
    insta::assert_snapshot!("help_legend_scrolled_80x24", draw(&a, 80, 24).backend());
}

/// The footer shows the keys that act now: for the focused panel, with a filter, in the
/// detail pane; a refused `:` has its error on a line of its own above the prompt.
#[test]
fn the_footer_shows_the_keys_that_act_now_and_errors_stand_apart() {
    let mut a = app(PREEMPT);
    let foot = |a: &App, w: u16, h: u16| {
        text(draw(a, w, h).backend().buffer())
            .lines()
            .last()
            .unwrap_or("")
            .to_string()
    };
    let f = foot(&a, 80, 24);
    assert!(
        f.contains("↑↓ rank") && f.contains("? help") && f.contains("q quit"),
        "{f}"
    );
    a.update(Action::FocusNext(1));
    assert!(foot(&a, 80, 24).contains("↑↓ scroll"));
    a.update(Action::FocusNext(1));
    assert!(foot(&a, 80, 24).contains("↑↓ event"));
    a.update(Action::Edit(Prompt::Filter));
    for c in "drop".chars() {
        a.update(Action::Char(c));
    }
    a.update(Action::Apply);
    let f = foot(&a, 160, 48);
    assert!(f.contains("matching events"), "the status first: {f}");
    a.update(Action::Step(0));
    let f = foot(&a, 160, 48);
    assert!(
        f.contains("↑↓ match") && f.contains("n N match") && f.contains("Esc no filter"),
        "{f}"
    );
    a.update(Action::Detail);
    assert!(foot(&a, 80, 24).contains("Esc Enter close"));
    a.update(Action::Detail);
    a.update(Action::Edit(Prompt::Command));
    for c in "@12qs".chars() {
        a.update(Action::Char(c));
    }
    a.update(Action::Apply);
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        let screen = text(t.backend().buffer());
        let rows: Vec<&str> = screen.lines().collect();
        assert!(rows[h as usize - 1].starts_with(" :@12qs"), "{screen}");
        assert!(
            rows[h as usize - 2].contains("12qs"),
            "the error on its own line:\n{screen}"
        );
        insta::assert_snapshot!(format!("command_error_{w}x{h}"), t.backend());
    }
}

/// `t`: a light background gets the darker shade of each colour, never the named yellow or
/// cyan that a light theme washes out.
#[test]
fn a_light_theme_draws_darker_shades() {
    let mut a = at_end(HUNG);
    a.update(Action::ToggleTheme);
    for (w, h) in SIZES {
        let t = draw(&a, w, h);
        let b = t.backend().buffer();
        let mut shades = 0;
        for cell in b.content() {
            for c in [cell.fg, cell.bg] {
                assert!(
                    matches!(c, Color::Reset | Color::Indexed(_)),
                    "{c:?} at {cell:?}"
                );
                shades += usize::from(matches!(c, Color::Indexed(_)));
            }
        }
        assert!(shades > 10);
        insta::assert_snapshot!(format!("hung_light_{w}x{h}"), t.backend());
    }
}

#[test]
fn too_small_a_terminal_says_so() {
    let a = app(HEALTHY);
    let t = draw(&a, 40, 10);
    assert!(text(t.backend().buffer()).contains("needs at least 60x16"));
    // the smallest size it draws does not panic
    let _ = draw(&app(PREEMPT_256), 60, 16);
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
    assert!(screen.contains("  unfinished"), "{screen}");
    assert!(screen.contains("event 30 of 30"), "{screen}");
    trace.events.clear();
    let mut a = App::new(Loaded::new(trace));
    for action in [
        Action::End,
        Action::Step(-1),
        Action::FirstStall,
        Action::Match(1),
        Action::Detail,
    ] {
        a.update(action);
    }
    let screen = text(draw(&a, 80, 24).backend().buffer());
    assert!(screen.contains("the trace has no events"), "{screen}");
}

/// A stage that waits for a message its next stage never sends: the ranks table names its
/// peer and direction, the group column the named group, and the graph as a list the message
/// it waits in.
#[test]
fn point_to_point_waits_name_peer_group_and_direction() {
    const STAGES: &str = r#"
name = "stages"
[world]
size = 2
[group]
timeout = "20ms"
[[groups]]
name = "pp"
ranks = [1, 0]
[workload]
[[workload.programs]]
ranks = [0, 1]
[[workload.programs.ops]]
op = "recv"
peer = "next"
group = "pp"
bytes = "1KiB"
"#;
    let mut a = at_end(STAGES);
    let t = draw(&a, 160, 48);
    let screen = text(t.backend().buffer());
    assert!(screen.contains("peer"), "{screen}");
    assert!(screen.contains("from 0"), "{screen}");
    assert!(screen.contains("pp "), "{screen}");
    a.update(Action::ToggleGraph);
    let t = draw(&a, 160, 48);
    let screen = text(t.backend().buffer());
    assert!(screen.contains("recv #1 from 0 in pp"), "{screen}");
}

/// A trace's own text is shown as it is stored, never obeyed: a bidirectional override and
/// an escape sequence in a scenario name and a fault's detail are written as escapes in the
/// header, the log and the detail pane, and no drawn cell holds a character a terminal acts on.
#[test]
fn a_traces_text_is_escaped_everywhere_it_is_drawn() {
    let s = scenario::parse(PREEMPT, "test").expect("valid scenario");
    let mut trace = record(&s, s.seed).expect("recorded");
    let hostile = "x\u{202e}lmth.exe\u{1b}]0;pwned\u{7}";
    trace.header.scenario.name = hostile.to_string();
    let fault = trace
        .events
        .iter_mut()
        .position(|(_, ev)| matches!(ev, Event::Fault { .. }))
        .expect("a fault event");
    if let Event::Fault { detail, .. } = &mut trace.events[fault].1 {
        *detail = hostile.to_string();
    }
    let mut a = App::new(Loaded::new(trace));
    a.update(Action::SeekTo(fault + 1));
    for detail in [false, true] {
        if detail {
            a.update(Action::Detail);
        }
        for (w, h) in SIZES {
            let t = draw(&a, w, h);
            let b = t.backend().buffer();
            for cell in &b.content {
                assert!(
                    !cell
                        .symbol()
                        .chars()
                        .any(ringside_sim::text::acts_on_terminal),
                    "a cell holds {:?}",
                    cell.symbol()
                );
            }
            let screen = text(b);
            assert!(screen.contains("x\\u{202e}lmth"), "{screen}");
        }
    }
}
