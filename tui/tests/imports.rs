//! Flight Recorder imports in the viewer: a real hung job's dumps, written as a trace by the
//! import, stepped through event by event. A rank that left no dump is `?` at every moment and
//! never dead or hung; no moment names a root cause that the dumps contradict, that is one the
//! import's verdict (the trace's closing `diagnosis`) does not name (it may say `undecided`).

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use ringside_sim::diagnose::RootCause;
use ringside_sim::fr;
use ringside_sim::trace::Event;
use ringside_tui::app::App;
use ringside_tui::input::Action;
use ringside_tui::state::{Culprit, Loaded};
use ringside_tui::view;
use std::path::{Path, PathBuf};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/flight-recorder")
}

/// The dump sets of the real hung jobs: each case's dumps as pickle and as JSON, and the late
/// dumps taken after the blocked calls timed out; then the fixtures' dump directories.
fn dump_sets() -> Vec<PathBuf> {
    let mut sets = Vec::new();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(data().join("real"))
        .expect("the real dumps")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    for case in cases {
        for sub in ["pickle", "json", "late/pickle"] {
            let p = case.join(sub);
            if p.is_dir() {
                sets.push(p);
            }
        }
    }
    for fixture in [
        "crash_py",
        "pg_name_collision",
        "trace_while_stuck",
        "tutorial_example",
    ] {
        sets.push(data().join("fixtures/dumps").join(fixture));
    }
    assert!(sets.len() >= 14, "{sets:?}");
    sets
}

/// The import of `dumps` as a trace, loaded as the viewer loads a file.
fn imported(dumps: &Path, dir: &Path) -> Loaded {
    let read = fr::read_paths(&[dumps.to_path_buf()], &fr::ReadOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", dumps.display()));
    let analysis = fr::analyze(&read.dumps);
    let out = dir.join("import.jsonl");
    fr::trace::write("imported", &read.dumps, &analysis, &out)
        .unwrap_or_else(|e| panic!("{}: {e}", dumps.display()));
    Loaded::open(&out).unwrap_or_else(|e| panic!("{}: {e}", dumps.display()))
}

/// The root causes of the trace's closing diagnosis: the import's verdict.
fn verdict(l: &Loaded) -> Vec<RootCause> {
    l.events()
        .iter()
        .rev()
        .find_map(|(_, e)| match e {
            Event::Diagnosis { root_causes, .. } => Some(root_causes.clone()),
            _ => None,
        })
        .expect("a closing diagnosis")
}

#[test]
fn no_moment_of_an_import_names_a_cause_its_dumps_contradict() {
    let dir = tempfile::tempdir().expect("temp dir");
    for set in dump_sets() {
        let what = set.display().to_string();
        let loaded = imported(&set, dir.path());
        let missing = loaded.trace.header.missing.clone();
        let verdict = verdict(&loaded);
        let n = loaded.len();
        let mut a = App::new(loaded);
        for p in 0..=n {
            a.update(Action::SeekTo(p));
            // `undecided` names no cause: a moment says it where its events show a wait that
            // the dumps, read together, do not blame on what the moment would
            for c in a.diagnosis.root_causes() {
                assert!(
                    verdict.contains(&c) || c == RootCause::Undecided,
                    "{what} at event {p}: {c} is not in the import's verdict {verdict:?}"
                );
            }
            for &r in &missing {
                let s = a.shown_of(r);
                assert!(s.no_dump, "{what} at event {p}: rank {r} left no dump");
                assert_eq!(
                    view::style::glyph(&s),
                    '?',
                    "{what} at event {p}: rank {r} is drawn `?`: {s:?}"
                );
                assert_ne!(s.culprit, Some(Culprit::Dead), "{what} at {p}");
                assert_ne!(s.culprit, Some(Culprit::Hung), "{what} at {p}");
            }
        }
        // what the dumps could not decide, a trace cannot either: it says so in its verdict
        if !verdict.contains(&RootCause::Undecided) {
            assert_eq!(
                a.diagnosis.root_causes(),
                verdict,
                "{what} at the end: {:#?}",
                a.diagnosis.causes
            );
        }
    }
}

fn draw(app: &App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    t.draw(|f| view::render(app, f)).expect("drawn");
    t
}

fn text(t: &Terminal<TestBackend>) -> String {
    let b = t.backend().buffer();
    let mut s = String::new();
    for y in 0..b.area.height {
        for x in 0..b.area.width {
            s.push_str(b[(x, y)].symbol());
        }
        s.push('\n');
    }
    s
}

/// A killed rank leaves no dump: the first screen names it missing, `?`, and says it left no
/// dump; nothing on it says dead or preempted.
#[test]
fn a_killed_rank_is_missing_on_the_first_screen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let loaded = imported(&data().join("real/killed_rank/pickle"), dir.path());
    assert_eq!(loaded.trace.header.missing, [2]);
    let mut a = App::new(loaded);
    a.color = true;
    assert_eq!(
        a.diagnosis.root_causes(),
        [RootCause::missing(vec![ringside_sim::proto::Rank(2)])]
    );
    for (w, h) in [(80, 24), (160, 48)] {
        let t = draw(&a, w, h);
        let screen = text(&t);
        assert!(screen.contains("missing:2"), "{screen}");
        assert!(screen.contains("left no Flight Recorder dump"), "{screen}");
        assert!(screen.contains("?2 missing"), "{screen}");
        assert!(!screen.contains("preempted"), "{screen}");
        assert!(!screen.contains("✗2"), "{screen}");
        insta::assert_snapshot!(format!("killed_rank_first_{w}x{h}"), t.backend());
    }
}
