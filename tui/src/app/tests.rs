use super::*;
use crate::state::record;
use ringside_sim::diagnose::RootCause;
use ringside_sim::proto::Rank;
use ringside_sim::scenario;
use ringside_sim::trace::Event;

fn app_of(toml: &str) -> App {
    let s = scenario::parse(toml, "test").expect("valid scenario");
    App::new(Loaded::new(record(&s, s.seed).expect("recorded")))
}

fn app() -> App {
    app_of(include_str!(
        "../../../scenarios/preempt-mid-allreduce.toml"
    ))
}

fn typed(a: &mut App, prompt: Prompt, text: &str) {
    a.update(Action::Edit(prompt));
    for c in text.chars() {
        a.update(Action::Char(c));
    }
}

#[test]
fn it_opens_at_the_answer_with_the_culprit_selected() {
    let a = app();
    assert_eq!(Some(a.pos), a.loaded.answer);
    assert!(a.loaded.markers.first_stall.is_some_and(|s| s <= a.pos));
    assert!(a.loaded.verdict.reads_as(&a.diagnosis), "{:?}", a.diagnosis);
    assert_eq!(a.diagnosis.blocked_ranks(), a.loaded.verdict.blocked);
    assert_eq!(a.diagnosis.root_causes(), [RootCause::Preempted(Rank(2))]);
    assert_eq!(a.selected, 2, "the dead rank is listed first");
    assert_eq!(a.listed()[0], 2);
}

#[test]
fn the_cursor_moves_and_stays_in_the_trace() {
    let mut a = app();
    let n = a.loaded.len();
    a.update(Action::Start);
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
fn jumps_to_faults_back_and_forth_and_to_the_selected_ranks_events() {
    let mut a = app();
    a.update(Action::Start);
    a.update(Action::Marker(MarkerKind::Fault, 1));
    assert!(matches!(
        a.loaded.events()[a.pos - 1].1,
        Event::Fault { .. }
    ));
    let fault = a.pos;
    a.update(Action::Marker(MarkerKind::Fault, 1));
    assert!(a.status.is_some(), "there is only one fault");
    a.update(Action::End);
    a.update(Action::Marker(MarkerKind::Fault, -1));
    assert_eq!(a.pos, fault);
    a.update(Action::Marker(MarkerKind::Watchdog, 1));
    assert!(matches!(
        &a.loaded.events()[a.pos - 1].1,
        Event::Timer { timer, .. } if timer == "watchdog"
    ));
    a.update(Action::Select(-5));
    a.update(Action::ToggleOrder);
    assert_eq!(a.order, Order::Rank);
    a.update(Action::Select(-5));
    assert_eq!(a.selected, 0);
    a.update(Action::Select(2));
    assert_eq!(a.selected, 2);
    a.update(Action::Select(5));
    assert_eq!(a.selected, 2, "the selection stays on the last rank");
    a.update(Action::Start);
    a.update(Action::Match(1));
    assert!(a.loaded.events()[a.pos - 1].1.involves(2));
    let first = a.pos;
    a.update(Action::Match(1));
    assert!(a.pos > first && a.loaded.events()[a.pos - 1].1.involves(2));
    a.update(Action::Match(-1));
    assert_eq!(a.pos, first);
}

#[test]
fn the_filter_applies_as_it_is_typed_and_n_walks_its_matches() {
    let mut a = app();
    a.update(Action::Start);
    typed(&mut a, Prompt::Filter, "r1 -senx");
    assert_eq!(a.mode(), Mode::Editing);
    assert!(
        a.editing.as_ref().is_some_and(|e| e.error.is_some()),
        "`senx` is no kind: the last filter stays"
    );
    assert_eq!(a.filter.describe(), "r1 -sen", "applied while typing");
    for _ in 0..5 {
        a.update(Action::Backspace);
    }
    for c in "senx".chars() {
        a.update(Action::Char(c));
    }
    assert!(a.matches.is_empty(), "no event says `senx`");
    a.update(Action::Backspace);
    assert_eq!(a.filter.describe(), "r1 sen", "applied while typing");
    a.update(Action::Char('d'));
    a.update(Action::Apply);
    assert_eq!(a.mode(), Mode::Normal);
    assert_eq!(a.filter.describe(), "r1 send");
    let matches = a.matches.clone();
    assert!(matches.len() > 2);
    a.update(Action::Match(1));
    assert_eq!(a.pos, matches[0] + 1);
    a.update(Action::Match(1));
    assert_eq!(a.pos, matches[1] + 1);
    a.update(Action::Match(-1));
    assert_eq!(a.pos, matches[0] + 1);
    // `/` then Esc drops the filter; so does Esc alone
    a.update(Action::Edit(Prompt::Filter));
    a.update(Action::Cancel);
    assert!(a.filter.is_empty(), "Esc drops the filter");
    assert!(a.matches.is_empty());
    typed(&mut a, Prompt::Filter, "send");
    a.update(Action::Apply);
    assert_eq!(a.filter.describe(), "send");
    a.update(Action::ClearFilter);
    assert!(a.filter.is_empty(), "Esc drops the filter");
}

/// readline's keys edit at the cursor; a refused command keeps its text with the error apart,
/// and what is typed next replaces it.
#[test]
fn prompts_edit_like_readline_and_a_refused_command_is_replaced() {
    let mut a = app();
    typed(&mut a, Prompt::Filter, "r1 send");
    a.update(Action::Line(LineOp::KillWord));
    a.update(Action::Line(LineOp::Home));
    a.update(Action::Char('-'));
    let text = |a: &App| a.editing.as_ref().map(|e| e.line.text());
    assert_eq!(text(&a).as_deref(), Some("-r1 "));
    a.update(Action::Line(LineOp::End));
    a.update(Action::Line(LineOp::KillStart));
    assert_eq!(text(&a).as_deref(), Some(""));
    a.update(Action::Cancel);
    typed(&mut a, Prompt::Command, "9");
    a.update(Action::Apply);
    let e = a.editing.clone().expect("a refused command stays open");
    assert!(e
        .error
        .as_deref()
        .unwrap_or("")
        .contains("not in the world"));
    assert_eq!(e.line.text(), "9", "the refused text is kept to be seen");
    a.update(Action::Char('1'));
    assert_eq!(
        text(&a).as_deref(),
        Some("1"),
        "and replaced by what is typed"
    );
    assert!(a.editing.as_ref().is_some_and(|e| e.error.is_none()));
    a.update(Action::Apply);
    assert_eq!((a.selected, a.mode()), (1, Mode::Normal));
}

#[test]
fn the_timeline_zooms_around_the_cursor_and_follows_it() {
    let mut a = app();
    let end = a.loaded.end_ns();
    assert_eq!(a.window(), (0, end));
    a.update(Action::Zoom(-1));
    assert_eq!(a.zoom, 0);
    for _ in 0..4 {
        a.update(Action::Zoom(1));
    }
    let (lo, span) = a.window();
    assert_eq!(span, end >> 4);
    assert!(
        lo <= a.fold.t && a.fold.t <= lo + span,
        "the cursor is shown"
    );
    a.update(Action::End);
    let (lo, span) = a.window();
    assert_eq!(lo + span, end, "the stretch follows the cursor");
    for _ in 0..100 {
        a.update(Action::Zoom(1));
    }
    assert!(a.window().1 >= MIN_SPAN, "{:?}", a.window());
    a.update(Action::Zoom(-100));
    assert_eq!(a.window(), (0, end));
}

#[test]
fn commands_go_to_a_rank_a_list_a_time_or_an_event() {
    let mut a = app();
    typed(&mut a, Prompt::Command, "1");
    a.update(Action::Apply);
    assert_eq!(a.selected, 1);
    typed(&mut a, Prompt::Command, "0-1");
    a.update(Action::Apply);
    assert_eq!(a.listed().len(), 2);
    typed(&mut a, Prompt::Command, "all");
    a.update(Action::Apply);
    assert_eq!(a.listed().len(), 3);
    typed(&mut a, Prompt::Command, "@12ms");
    a.update(Action::Apply);
    assert!(a.fold.t <= 12_000_000);
    assert!(a.loaded.events()[a.pos].0 > 12_000_000);
    typed(&mut a, Prompt::Command, "#7");
    a.update(Action::Apply);
    assert_eq!(a.pos, 7);
    typed(&mut a, Prompt::Command, "9");
    a.update(Action::Apply);
    assert_eq!(a.mode(), Mode::Editing, "a bad command stays open");
}

#[test]
fn the_detail_pane_opens_on_the_current_event() {
    let mut a = app();
    a.update(Action::Detail);
    assert_eq!(a.mode(), Mode::Detail);
    a.update(Action::DetailScroll(3));
    assert_eq!(a.detail, Some(3));
    a.update(Action::Detail);
    assert_eq!(a.mode(), Mode::Normal);
    a.update(Action::Start);
    a.update(Action::Detail);
    assert_eq!(a.mode(), Mode::Normal, "no event before the first");
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
    a.update(Action::HelpScroll(3));
    assert_eq!(a.help_scroll, 3);
    a.update(Action::ToggleHelp);
    a.update(Action::ToggleTheme);
    assert!(a.light);
    a.update(Action::ToggleCompact);
    assert!(a.compact);
    a.update(Action::ToggleStuck);
    assert!(a.listed().iter().all(|&r| a.shown_of(r).is_stuck()));
    a.update(Action::FocusNext(1));
    assert_eq!(a.focus, Focus::Diagnosis);
    a.update(Action::Move(2));
    assert_eq!(a.diagnosis_scroll, 2);
    a.update(Action::FocusNext(-2));
    assert_eq!(a.focus, Focus::Events);
    a.update(Action::Quit);
    assert!(a.quit);
}
