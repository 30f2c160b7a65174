//! The real binary in a pseudo-terminal: open a trace, press End and q, read what the screen
//! showed, and check that the terminal was given back (main screen, cursor shown, cooked mode).
//! Then the same in tmux, as a person would use it: keys, a resize, and a SIGTERM that must
//! leave the terminal as it found it.

mod common;

use nix::sys::termios::LocalFlags;
use portable_pty::{native_pty_system, CommandBuilder, MasterPty, PtySize};
use predicates::str::contains;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

const ROWS: u16 = 24;
const COLS: u16 = 80;
/// How often the screen is looked at while waiting.
const POLL_MS: u64 = 20;

/// Feeds what the program writes into a terminal emulator.
struct Screen {
    parser: vt100::Parser,
    output: Receiver<Vec<u8>>,
}

impl Screen {
    fn pump(&mut self) {
        while let Ok(bytes) = self.output.try_recv() {
            self.parser.process(&bytes);
        }
    }

    fn text(&self) -> String {
        self.parser.screen().contents()
    }

    /// Waits until the screen shows `needle`; panics with the screen after `secs`.
    fn wait_for(&mut self, needle: &str, secs: u64) {
        for _ in 0..secs * 1000 / POLL_MS {
            self.pump();
            if self.text().contains(needle) {
                return;
            }
            std::thread::sleep(Duration::from_millis(POLL_MS));
        }
        panic!("the screen never showed {needle:?}:\n{}", self.text());
    }
}

fn canonical(master: &dyn MasterPty) -> Option<bool> {
    master.get_termios().map(|t| {
        t.local_flags
            .contains(LocalFlags::ICANON | LocalFlags::ECHO)
    })
}

fn write_trace(dir: &Path) -> std::path::PathBuf {
    let trace = dir.join("preempt.jsonl");
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/preempt-mid-allreduce.toml");
    let out = common::ringside(&[
        "run".as_ref(),
        scenario.as_os_str(),
        "--trace".as_ref(),
        trace.as_os_str(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    trace
}

/// The binary running in a pseudo-terminal.
struct Session {
    master: Box<dyn MasterPty + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    keys: Box<dyn Write + Send>,
    screen: Screen,
}

impl Session {
    /// Starts `ringside ARGS` in a pseudo-terminal, or None where none can be opened.
    fn start(args: &[&std::ffi::OsStr]) -> Option<Session> {
        let pair = match native_pty_system().openpty(PtySize {
            rows: ROWS,
            cols: COLS,
            pixel_width: 0,
            pixel_height: 0,
        }) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("SKIPPED: no pseudo-terminal can be opened here: {e}");
                return None;
            }
        };
        let mut cmd = CommandBuilder::new(common::bin());
        cmd.args(args);
        cmd.env("TERM", "xterm-256color");
        let child = pair.slave.spawn_command(cmd).expect("spawn in the pty");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("pty reader");
        let keys = pair.master.take_writer().expect("pty writer");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Some(Session {
            master: pair.master,
            child,
            keys,
            screen: Screen {
                parser: vt100::Parser::new(nz(ROWS), nz(COLS), 0),
                output: rx,
            },
        })
    }

    fn press(&mut self, bytes: &[u8]) {
        self.keys.write_all(bytes).expect("key");
        self.keys.flush().expect("flush");
    }

    /// Presses q and checks the program exits well and gives the terminal back.
    fn quit(mut self) {
        self.press(b"q");
        let mut status = None;
        for _ in 0..10_000 / POLL_MS {
            status = self.child.try_wait().expect("child status");
            if status.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(POLL_MS));
        }
        let Some(status) = status else {
            let _ = self.child.kill();
            panic!("q did not quit:\n{}", self.screen.text());
        };
        assert!(status.success(), "exit status {status:?}");
        // the last bytes may still be on their way from the reader thread
        std::thread::sleep(Duration::from_millis(200));
        self.screen.pump();
        let s = self.screen.parser.screen();
        assert!(!s.alternate_screen(), "the alternate screen was left");
        assert!(!s.hide_cursor(), "the cursor is shown again");
        assert_eq!(canonical(&*self.master), Some(true), "cooked mode is back");
    }
}

#[test]
fn end_and_quit_in_a_pseudo_terminal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = write_trace(dir.path());
    let Some(mut s) = Session::start(&["tui".as_ref(), trace.as_os_str()]) else {
        return;
    };
    // the number of events the viewer should count: every line but the header and footer
    let events = std::fs::read_to_string(&trace)
        .expect("trace")
        .lines()
        .count()
        - 2;
    // it opens at the first stall, the dead rank first
    s.screen.wait_for(&format!(" of {events}"), 30);
    s.screen.wait_for("preempted:2", 10);
    assert!(
        s.screen.parser.screen().alternate_screen(),
        "the viewer uses the alternate screen"
    );
    assert!(
        s.screen.parser.screen().hide_cursor(),
        "the viewer hides the cursor"
    );
    assert_eq!(
        canonical(&*s.master),
        Some(false),
        "the viewer puts the terminal in raw mode"
    );

    s.press(b"\x1b[F"); // End, as xterm sends it
    s.screen
        .wait_for(&format!("event {events} of {events}"), 10);
    let shown = s.screen.text();
    assert!(shown.contains("preempt-mid-allreduce"), "{shown}");
    assert!(shown.contains("preempted:2"), "{shown}");
    assert!(shown.contains("blocked"), "{shown}");
    s.quit();
}

#[test]
fn run_with_tui_opens_the_viewer_on_the_run() {
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/healthy-allreduce.toml");
    let Some(mut s) = Session::start(&["run".as_ref(), scenario.as_os_str(), "--tui".as_ref()])
    else {
        return;
    };
    s.screen.wait_for("event 0 of 232", 30);
    s.press(b"\x1b[F");
    s.screen.wait_for("event 232 of 232", 10);
    assert!(s.screen.text().contains("completed"), "{}", s.screen.text());
    s.quit();
}

#[test]
fn without_a_terminal_the_viewer_says_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = write_trace(dir.path());
    common::cmd()
        .arg("tui")
        .arg(&trace)
        .assert()
        .code(2)
        .stderr(contains("needs a terminal"));
}

#[test]
fn a_bad_trace_is_refused_before_the_screen_changes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"format\":\"other\"}\n").expect("write");
    common::cmd()
        .arg("tui")
        .arg(&bad)
        .assert()
        .code(2)
        .stderr(contains("not a ringside trace"));
}

/// A tmux server of its own, killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "t"])
    }

    /// Waits until the pane shows `needle`; panics with the screen after `secs`.
    fn wait_for(&self, needle: &str, secs: u64) -> String {
        for _ in 0..secs * 1000 / POLL_MS {
            let s = self.screen();
            if s.contains(needle) {
                return s;
            }
            std::thread::sleep(Duration::from_millis(POLL_MS));
        }
        panic!("tmux never showed {needle:?}:\n{}", self.screen());
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.cmd(&args);
    }

    fn format(&self, f: &str) -> String {
        self.cmd(&["display-message", "-p", "-t", "t", f])
            .trim()
            .to_string()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

#[test]
fn in_tmux_keys_a_resize_and_sigterm_leave_the_terminal_as_it_was() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("SKIPPED: tmux is not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = write_trace(dir.path());
    let tmux = Tmux {
        socket: format!("ringside-test-{}", std::process::id()),
    };
    // the shell reports how the viewer ended and how it left the terminal
    let script = format!(
        "{} tui {}; echo exit=$?; stty -a | tr ' ' '\\n' | grep -x -e icanon -e -icanon; echo stty-end; sleep 60",
        env!("CARGO_BIN_EXE_ringside"),
        trace.display()
    );
    tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "t",
        "-x",
        "80",
        "-y",
        "24",
        "sh",
        "-c",
        &script,
    ]);
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
    tmux.wait_for("outcome stalled", 5);
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
    // wider: the ranks and the diagnosis side by side, in boxes
    tmux.cmd(&["resize-window", "-t", "t", "-x", "160", "-y", "50"]);
    tmux.wait_for("┌ ranks", 5);
    // SIGTERM: the viewer goes, and gives the terminal back
    let shell = tmux.format("#{pane_pid}");
    let out = Command::new("pgrep")
        .args(["-P", &shell])
        .output()
        .expect("pgrep runs");
    let pid = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .expect("the viewer runs under the shell")
        .trim()
        .to_string();
    Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    let s = tmux.wait_for("stty-end", 10);
    assert!(s.contains("exit=143"), "ended by the signal:\n{s}");
    assert!(
        s.lines().any(|l| l.trim() == "icanon"),
        "cooked mode is back:\n{s}"
    );
    assert_eq!(
        tmux.format("#{alternate_on}"),
        "0",
        "the main screen is back"
    );
    assert_eq!(tmux.format("#{cursor_flag}"), "1", "the cursor is shown");
    assert_eq!(
        tmux.format("#{mouse_any_flag}"),
        "0",
        "mouse reporting is off"
    );
}

fn nz(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).expect("a terminal size is not zero")
}
