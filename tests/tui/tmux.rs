//! The viewer in tmux, as a person uses it: keys, a resize, signals, Ctrl-Z and `fg`, a
//! session killed under it. Each test runs a tmux server of its own and skips, saying so,
//! where tmux is not installed.

use super::{common, write_trace, POLL_MS};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A tmux server of its own, killed when dropped.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// A server named after `test`, with one session `t` of `w` x `h` running `argv`; None,
    /// after saying so, where tmux is not installed.
    pub fn start(test: &str, w: u16, h: u16, argv: &[&str]) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("SKIPPED: tmux is not installed");
            return None;
        }
        let tmux = Tmux {
            socket: format!("ringside-test-{}-{test}", std::process::id()),
        };
        let (w, h) = (w.to_string(), h.to_string());
        let mut args = vec!["new-session", "-d", "-s", "t", "-x", &w, "-y", &h];
        args.extend_from_slice(argv);
        tmux.cmd(&args);
        Some(tmux)
    }

    pub fn cmd(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn screen(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "t"])
    }

    /// Waits until the pane shows `needle` in a whole frame (the same screen at two polls in
    /// a row: a frame is written in pieces, and a capture can fall between them); panics with
    /// the screen after `secs`.
    pub fn wait_for(&self, needle: &str, secs: u64) -> String {
        let mut last = String::new();
        for _ in 0..secs * 1000 / POLL_MS {
            let s = self.screen();
            if s.contains(needle) && s == last {
                return s;
            }
            last = s;
            std::thread::sleep(Duration::from_millis(POLL_MS));
        }
        if last.contains(needle) {
            // a screen that keeps changing (a clock) still shows it
            return last;
        }
        panic!("tmux never showed {needle:?}:\n{last}");
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.cmd(&args);
    }

    pub fn format(&self, f: &str) -> String {
        self.cmd(&["display-message", "-p", "-t", "t", f])
            .trim()
            .to_string()
    }

    /// Waits until the tmux format `f` reads `value`; panics with the screen after `secs`.
    pub fn wait_until(&self, f: &str, value: &str, secs: u64) {
        for _ in 0..secs * 1000 / POLL_MS {
            if self.format(f) == value {
                return;
            }
            std::thread::sleep(Duration::from_millis(POLL_MS));
        }
        panic!(
            "{f} never read {value}:
{}",
            self.screen()
        );
    }

    /// The process the pane runs.
    pub fn pane_pid(&self) -> u32 {
        let p = self.format("#{pane_pid}");
        p.parse()
            .unwrap_or_else(|_| panic!("a pane pid, not {p:?}"))
    }

    /// The viewer started by the pane's shell.
    pub fn viewer_under_shell(&self) -> u32 {
        let out = Command::new("pgrep")
            .args(["-P", &self.pane_pid().to_string()])
            .output()
            .expect("pgrep runs");
        let pid = String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .expect("the viewer runs under the shell")
            .trim()
            .to_string();
        pid.parse().expect("a pid")
    }

    /// Checks the terminal is as the viewer found it: main screen, cursor shown, no mouse
    /// reporting.
    pub fn assert_given_back(&self, what: &str) {
        let s = self.screen();
        assert_eq!(
            self.format("#{alternate_on}"),
            "0",
            "{what}: the main screen is back:\n{s}"
        );
        assert_eq!(
            self.format("#{cursor_flag}"),
            "1",
            "{what}: the cursor is shown"
        );
        assert_eq!(
            self.format("#{mouse_any_flag}"),
            "0",
            "{what}: mouse reporting is off"
        );
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// A shell line that runs `viewer`, then reports how it ended and whether the terminal is
/// back in cooked mode, and stays (no core file from SIGQUIT).
fn reported(viewer: &str) -> String {
    format!(
        "ulimit -c 0; {viewer}; echo exit=$?; stty -a | tr ' ' '\\n' | grep -x -e icanon -e -icanon; echo stty-end; sleep 60"
    )
}

fn viewer_of(trace: &Path) -> String {
    format!("{} tui {}", env!("CARGO_BIN_EXE_ringside"), trace.display())
}

/// Whether process `pid` still runs (a zombie does not).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // the state follows the command name in parentheses
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) if Path::new("/proc/self").exists() => false,
        Err(_) => Command::new("kill")
            .args(["-0", &pid.to_string()])
            .status()
            .is_ok_and(|s| s.success()),
    }
}

#[test]
fn in_tmux_keys_a_resize_and_sigterm_leave_the_terminal_as_it_was() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = write_trace(dir.path());
    let script = reported(&viewer_of(&trace));
    let Some(tmux) = Tmux::start("keys", 80, 24, &["sh", "-c", &script]) else {
        return;
    };
    let s = tmux.wait_for("preempted:2", 30);
    assert!(s.contains("2 ✗ dead") || s.contains("✗2 dead"), "{s}");
    assert_eq!(tmux.format("#{alternate_on}"), "1");
    assert_eq!(
        tmux.format("#{mouse_any_flag}"),
        "1",
        "mouse reporting is on"
    );
    // the whole run, then the fault, then the event detail pane
    tmux.keys(&["End"]);
    tmux.wait_for("(diagnosis)", 5);
    tmux.keys(&["Home", "f"]);
    tmux.wait_for("preempt begins", 5);
    tmux.keys(&["Enter"]);
    tmux.wait_for("Esc closes", 5);
    tmux.keys(&["Escape"]);
    // go to a rank, filter the log as it is typed
    tmux.keys(&[":", "1", "Enter", "/", "drop"]);
    let s = tmux.wait_for("/drop", 5);
    assert!(s.contains("matching"), "{s}");
    tmux.keys(&["Enter", "n"]);
    tmux.wait_for("drop ", 5);
    // m hands the mouse to the terminal, and back
    tmux.keys(&["m"]);
    tmux.wait_for("mouse off", 5);
    assert_eq!(tmux.format("#{mouse_any_flag}"), "0");
    tmux.keys(&["m"]);
    tmux.wait_for("mouse on", 5);
    assert_eq!(tmux.format("#{mouse_any_flag}"), "1");
    // wider: the ranks and the diagnosis side by side, in boxes
    tmux.cmd(&["resize-window", "-t", "t", "-x", "160", "-y", "50"]);
    tmux.wait_for("┌ ranks", 5);
    // SIGTERM: the viewer goes, and gives the terminal back
    let pid = tmux.viewer_under_shell();
    Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill runs");
    let s = tmux.wait_for("stty-end", 10);
    assert!(s.contains("exit=143"), "ended by the signal:\n{s}");
    assert!(
        s.lines().any(|l| l.trim() == "icanon"),
        "cooked mode is back:\n{s}"
    );
    tmux.assert_given_back("SIGTERM");
}

/// SIGINT, SIGHUP and SIGQUIT end the viewer as they end any program (exit status 128 + N),
/// with the terminal given back: the main screen, the cursor, cooked mode, no mouse
/// reporting.
#[test]
fn in_tmux_every_signal_that_ends_the_viewer_gives_the_terminal_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = write_trace(dir.path());
    let script = reported(&viewer_of(&trace));
    for (name, n) in [("INT", 2), ("HUP", 1), ("QUIT", 3)] {
        let Some(tmux) = Tmux::start(&format!("sig{n}"), 80, 24, &["sh", "-c", &script]) else {
            return;
        };
        tmux.wait_for("preempted:2", 30);
        assert_eq!(tmux.format("#{alternate_on}"), "1");
        let pid = tmux.viewer_under_shell();
        Command::new("kill")
            .args([&format!("-{name}"), &pid.to_string()])
            .status()
            .expect("kill runs");
        let s = tmux.wait_for("stty-end", 10);
        assert!(
            s.contains(&format!("exit={}", 128 + n)),
            "SIG{name} ended it:\n{s}"
        );
        assert!(
            s.lines().any(|l| l.trim() == "icanon"),
            "SIG{name}: cooked mode is back:\n{s}"
        );
        tmux.assert_given_back(&format!("SIG{name}"));
    }
}

/// Killing the session takes the viewer's terminal away: the viewer is gone within a second
/// (it used to spin on the closed terminal forever, deaf to every signal).
#[test]
fn in_tmux_killing_the_session_ends_the_viewer_within_a_second() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = write_trace(dir.path());
    let bin = env!("CARGO_BIN_EXE_ringside");
    let trace_arg = trace.display().to_string();
    // the viewer is the pane's own process, as `tmux new-session 'ringside tui T'` runs it
    let Some(tmux) = Tmux::start("kill", 80, 24, &[bin, "tui", &trace_arg]) else {
        return;
    };
    tmux.wait_for("preempted:2", 30);
    let pid = tmux.pane_pid();
    assert!(alive(pid));
    tmux.cmd(&["kill-session", "-t", "t"]);
    let mut gone = false;
    for _ in 0..1000 / POLL_MS {
        if !alive(pid) {
            gone = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(POLL_MS));
    }
    assert!(gone, "the viewer (pid {pid}) outlived its terminal");
}

/// Ctrl-Z gives the terminal back to the shell and stops the viewer; `fg` brings it back,
/// redrawn, and it still answers keys.
#[test]
fn in_tmux_ctrl_z_suspends_and_fg_resumes() {
    if Command::new("bash").arg("--version").output().is_err() {
        eprintln!("SKIPPED: no bash for job control");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = write_trace(dir.path());
    let Some(tmux) = Tmux::start("suspend", 80, 24, &["bash", "--norc", "--noprofile"]) else {
        return;
    };
    tmux.keys(&["PS1='$ '", "Enter"]);
    tmux.keys(&[&viewer_of(&trace), "Enter"]);
    tmux.wait_for("preempted:2", 30);
    tmux.keys(&["C-z"]);
    let s = tmux.wait_for("Stopped", 5);
    assert!(
        !s.contains("preempted:2"),
        "the shell's screen is back:\n{s}"
    );
    tmux.assert_given_back("Ctrl-Z");
    // the marker is printed as `modes-2`, so that the command line does not match it
    tmux.keys(&[
        "stty -a | tr ' ' '\\n' | grep -x -e icanon -e -icanon; echo modes-$((1+1))",
        "Enter",
    ]);
    let s = tmux.wait_for("modes-2", 5);
    assert!(
        s.lines().any(|l| l.trim() == "icanon"),
        "cooked mode while stopped:\n{s}"
    );
    tmux.keys(&["clear; fg", "Enter"]);
    tmux.wait_for("preempted:2", 5);
    assert_eq!(tmux.format("#{alternate_on}"), "1", "the viewer's screen");
    assert_eq!(tmux.format("#{mouse_any_flag}"), "1", "mouse reporting");
    tmux.keys(&["End"]);
    tmux.wait_for("(diagnosis)", 5);
    tmux.keys(&["q"]);
    tmux.wait_until("#{alternate_on}", "0", 5);
    tmux.assert_given_back("q after fg");
}

/// Runs `scenario` (TOML text) and writes its trace into `dir`.
fn trace_of(dir: &Path, name: &str, scenario: &str) -> std::path::PathBuf {
    let toml = dir.join(format!("{name}.toml"));
    std::fs::write(&toml, scenario).expect("write the scenario");
    let trace = dir.join(format!("{name}.jsonl"));
    let out = common::ringside(&[
        "run".as_ref(),
        toml.as_os_str(),
        "--quiet".as_ref(),
        "--trace".as_ref(),
        trace.as_os_str(),
    ]);
    assert!(
        out.status.code() == Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    trace
}

/// The first screen at 80x24 states how the run ends, whatever the world's size: at 1,024
/// ranks the exact blocked count with its ranges and the culprit, opened after every fault
/// of the stall's instant; with two faults at the same instant, both root causes.
#[test]
fn in_tmux_the_first_screen_states_the_final_answer() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ring = include_str!("../../tui/tests/scenarios/preempt-256.toml")
        .replace("size = 256", "size = 1024")
        .replace("iterations = 3", "iterations = 1");
    let big = trace_of(dir.path(), "preempt-1024", &ring);
    let Some(tmux) = Tmux::start("answer", 80, 24, &["sh", "-c", &reported(&viewer_of(&big))])
    else {
        return;
    };
    let s = tmux.wait_for("final answer", 60);
    for needle in [
        "stalled: preempted:100",
        "blocked: 1023 ranks: 0-99,101-1023",
        "✗ 100 dead",
        "101 → 100 ✗ dead",
    ] {
        assert!(s.contains(needle), "{needle}:\n{s}");
    }
    tmux.keys(&["q"]);
    tmux.wait_for("stty-end", 10);
    drop(tmux);
    let both = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/preempt-and-pause.toml");
    let both = trace_of(
        dir.path(),
        "both",
        &std::fs::read_to_string(both).expect("scenario"),
    );
    let Some(tmux) = Tmux::start(
        "answer2",
        80,
        24,
        &["sh", "-c", &reported(&viewer_of(&both))],
    ) else {
        return;
    };
    let s = tmux.wait_for("final answer", 30);
    for needle in ["preempted:4", "paused:1", "✗4 dead", "‖1 paused"] {
        assert!(s.contains(needle), "{needle}:\n{s}");
    }
}

/// A Flight Recorder import whose rank 2 was killed: the first screen says rank 2 left no
/// dump and marks it `?` missing; nothing calls it dead, preempted or hung, nor calls the
/// others hung; stepping back to the start, it is still `?`.
#[test]
fn in_tmux_an_imported_trace_shows_the_missing_rank() {
    let dir = tempfile::tempdir().expect("temp dir");
    let dumps = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/flight-recorder/real/killed_rank/pickle");
    let trace = dir.path().join("import.jsonl");
    let out = common::ringside(&[
        "import".as_ref(),
        dumps.as_os_str(),
        "--trace".as_ref(),
        trace.as_os_str(),
    ]);
    assert!(
        out.status.code().is_some(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(trace.exists(), "{}", String::from_utf8_lossy(&out.stderr));
    let Some(tmux) = Tmux::start(
        "import",
        80,
        24,
        &["sh", "-c", &reported(&viewer_of(&trace))],
    ) else {
        return;
    };
    let s = tmux.wait_for("final answer", 30);
    for needle in ["missing:2", "?2 missing", "left no Flight Recorder dump"] {
        assert!(s.contains(needle), "{needle}:\n{s}");
    }
    for wrong in ["preempted", "✗2", "dead", "hung"] {
        assert!(!s.contains(wrong), "{wrong}:\n{s}");
    }
    tmux.keys(&["Home"]);
    let s = tmux.wait_for("event 0 of", 5);
    assert!(s.contains("?2 missing"), "{s}");
    assert!(!s.contains("hung"), "{s}");
}
