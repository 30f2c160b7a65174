//! The real binary in a pseudo-terminal: open a trace, press End and q, read what the screen
//! showed, and check that the terminal was given back (main screen, cursor shown, cooked mode);
//! close the terminal and check the viewer goes. Then in tmux, as a person would use it
//! (`tui/tmux.rs`).

mod common;
#[path = "tui/tmux.rs"]
mod tmux;

use nix::sys::termios::LocalFlags;
use portable_pty::{native_pty_system, CommandBuilder, MasterPty, PtySize};
use predicates::str::contains;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

const ROWS: u16 = 24;
const COLS: u16 = 80;
/// How often the screen is looked at while waiting.
pub const POLL_MS: u64 = 20;

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

    /// Presses q and checks the program exits well and gives the terminal back; returns the
    /// main screen as it was left.
    fn quit(mut self) -> String {
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
        self.screen.text()
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
    let after = s.quit();
    assert!(!after.contains("digest"), "`tui` prints nothing: {after}");
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
    // once closed, the run's report, as `run` prints it
    let after = s.quit();
    assert!(after.contains("completed"), "{after}");
    assert!(after.contains("digest "), "{after}");
    assert!(after.contains("expectations met"), "{after}");
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

fn nz(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).expect("a terminal size is not zero")
}
