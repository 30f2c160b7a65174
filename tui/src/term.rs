//! The terminal: raw mode, the alternate screen and mouse reporting for as long as a
//! [`TerminalGuard`] lives; the one loop that reads terminal events; and a watcher thread for
//! what can end or stop the viewer from outside: signals and a terminal that goes away.
//!
//! The viewer never outlives its terminal and never leaves it raw:
//! - `q` and Ctrl-C quit; the guard restores the terminal on drop, on error and on panic;
//! - SIGTERM, SIGINT, SIGHUP and SIGQUIT end the loop, which restores the terminal before the
//!   signal's default action ends the process as its sender expects (exit status 128 + N);
//! - a terminal that hangs up (its window closed, `tmux kill-session`, a dropped ssh
//!   connection) reads as an endless end of input, in which crossterm's reader spins without
//!   returning: the watcher sees the hangup on the terminal itself and ends the process as
//!   SIGHUP would, at once;
//! - when the loop does not answer a signal within [`GRACE`] (it is busy, or stuck in that
//!   reader), the watcher restores the terminal itself and ends the process;
//! - Ctrl-Z (and SIGTSTP) gives the terminal back and stops the process; when it is continued
//!   (`fg`, SIGCONT) it takes the terminal again and redraws everything.

use crate::app::App;
use crate::input;
use crate::view;
use crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event as TermEvent};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen,
};
use crossterm::{cursor, execute};
use nix::poll::{poll, PollFd, PollFlags};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::Terminal;
use signal_hook::consts::{SIGCONT, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP};
use signal_hook::iterator::Signals;
use signal_hook::low_level::emulate_default_handler;
use std::io::{self, IsTerminal, Stdout, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Once};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long the loop waits for input before it looks at the watcher's alarms again.
const POLL: Duration = Duration::from_millis(100);
/// How often the watcher looks at the terminal and the signals.
const WATCH_MS: u16 = 50;
/// How long the loop has to answer a signal that ends the viewer before the watcher ends the
/// process itself.
pub const GRACE: Duration = Duration::from_millis(300);

/// Gives the terminal back: mouse reporting off, the main screen, the cursor shown, cooked
/// mode. Each step is tried whatever happened to the others.
fn give_back(out: &mut impl Write) {
    let _ = execute!(out, DisableMouseCapture, LeaveAlternateScreen, cursor::Show);
    let _ = disable_raw_mode();
}

/// Raw mode, the alternate screen and (when asked) mouse reporting while it lives, given back
/// on drop and, through a panic hook, before a panic's message is printed.
pub struct TerminalGuard {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
    mouse: bool,
    /// The terminal is in the viewer's modes.
    held: bool,
}

impl TerminalGuard {
    pub fn enter(mouse: bool) -> io::Result<TerminalGuard> {
        install_panic_hook();
        let mut guard = TerminalGuard {
            terminal: Terminal::new(CrosstermBackend::new(io::stdout()))?,
            mouse,
            held: false,
        };
        // on an error the guard is dropped, and gives back what was taken
        guard.take()?;
        Ok(guard)
    }

    /// Puts the terminal in the viewer's modes; the next draw repaints every cell.
    fn take(&mut self) -> io::Result<()> {
        self.held = true;
        enable_raw_mode()?;
        execute!(io::stdout(), EnterAlternateScreen, cursor::Hide)?;
        if self.mouse {
            execute!(io::stdout(), EnableMouseCapture)?;
        }
        execute!(io::stdout(), Clear(ClearType::All))?;
        // the last frame drawn is forgotten, so that the next draw repaints every cell
        // (`Terminal::clear` would ask the terminal where its cursor is, and not every
        // terminal answers)
        self.terminal.swap_buffers();
        Ok(())
    }

    fn release(&mut self) {
        if std::mem::take(&mut self.held) {
            give_back(&mut io::stdout());
        }
    }

    /// Turns mouse reporting on or off.
    pub fn set_mouse(&mut self, on: bool) -> io::Result<()> {
        if on != self.mouse {
            self.mouse = on;
            if on {
                execute!(io::stdout(), EnableMouseCapture)?;
            } else {
                execute!(io::stdout(), DisableMouseCapture)?;
            }
        }
        Ok(())
    }

    /// Gives the terminal back and stops the process as SIGTSTP does; once it is continued,
    /// takes the terminal again.
    pub fn suspend(&mut self) -> io::Result<()> {
        self.release();
        emulate_default_handler(SIGTSTP)?;
        self.take()
    }

    /// After a SIGCONT the viewer did not ask for (a `kill -STOP` then `-CONT`; the shell may
    /// have changed the terminal's modes meanwhile): takes the terminal again.
    pub fn retake(&mut self) -> io::Result<()> {
        self.take()
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        // while unwinding from a panic, the hook has given the terminal back already: leaving
        // the alternate screen twice would move the cursor back over the panic message
        if std::thread::panicking() {
            self.held = false;
        }
        self.release();
    }
}

/// Gives the terminal back before the panic message is printed.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            give_back(&mut io::stdout());
            previous(info);
        }));
    });
}

/// What the watcher tells the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alarm {
    /// A signal that ends the viewer (SIGTERM, SIGINT, SIGHUP, SIGQUIT).
    End(i32),
    /// SIGTSTP: give the terminal back and stop.
    Suspend,
    /// SIGCONT: the process was continued.
    Continued,
}

/// The signals the watcher catches.
const CAUGHT: [i32; 6] = [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGTSTP, SIGCONT];

/// Signals and the terminal, watched from a thread of its own.
pub struct Watcher {
    pub alarms: Receiver<Alarm>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watcher {
    /// Catches the signals and watches the terminal the viewer reads and draws on.
    pub fn start() -> io::Result<Watcher> {
        let signals = Signals::new(CAUGHT)?;
        let terminal = terminal_fds();
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, alarms) = channel();
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("ringside-tui-watch".into())
                .spawn(move || watch(signals, terminal, &stop, &tx))?
        };
        Ok(Watcher {
            alarms,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The terminal's input (standard input when it is a terminal, else `/dev/tty`, as crossterm
/// reads) and output (standard output), duplicated so that the watcher owns its own handles.
fn terminal_fds() -> Vec<OwnedFd> {
    let mut fds = Vec::new();
    if io::stdin().is_terminal() {
        fds.extend(io::stdin().as_fd().try_clone_to_owned());
    } else if let Ok(tty) = std::fs::File::open("/dev/tty") {
        fds.push(tty.into());
    }
    if io::stdout().is_terminal() {
        fds.extend(io::stdout().as_fd().try_clone_to_owned());
    }
    fds
}

/// Whether one of `fds` hung up; waits up to [`WATCH_MS`] for it.
fn hung_up(fds: &[OwnedFd]) -> bool {
    if fds.is_empty() {
        std::thread::sleep(Duration::from_millis(u64::from(WATCH_MS)));
        return false;
    }
    // no event asked for: poll reports only a hangup, an error or a closed descriptor
    let mut polled: Vec<PollFd> = fds
        .iter()
        .map(|fd| PollFd::new(fd.as_fd(), PollFlags::empty()))
        .collect();
    match poll(&mut polled, WATCH_MS) {
        Ok(n) if n > 0 => polled.iter().any(|p| {
            p.revents().is_some_and(|r| {
                r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL)
            })
        }),
        _ => false,
    }
}

fn watch(mut signals: Signals, terminal: Vec<OwnedFd>, stop: &AtomicBool, tx: &Sender<Alarm>) {
    // the signal that ends the viewer, and how many rounds the loop has had to answer it
    let mut ending: Option<(i32, u32)> = None;
    let rounds = (GRACE.as_millis() / u128::from(WATCH_MS)).max(1) as u32;
    while !stop.load(Ordering::SeqCst) {
        if hung_up(&terminal) {
            // nothing is left to restore, and the loop may never come back from its read
            end_process(SIGHUP, None);
        }
        for sig in signals.pending() {
            let alarm = match sig {
                SIGTSTP => Alarm::Suspend,
                SIGCONT => Alarm::Continued,
                s => {
                    ending.get_or_insert((s, 0));
                    Alarm::End(s)
                }
            };
            let _ = tx.send(alarm);
        }
        if let Some((sig, waited)) = ending.as_mut() {
            *waited += 1;
            if *waited > rounds && !stop.load(Ordering::SeqCst) {
                end_process(*sig, terminal.last());
            }
        }
    }
}

/// Ends the process as `sig` would, after giving back the terminal whose output is `out`
/// (written through a handle of its own, so that a write of the loop in progress cannot hold
/// it up).
fn end_process(sig: i32, out: Option<&OwnedFd>) -> ! {
    if let Some(fd) = out.and_then(|fd| fd.try_clone().ok()) {
        give_back(&mut std::fs::File::from(fd));
    }
    let _ = emulate_default_handler(sig);
    std::process::exit(128 + sig)
}

/// Runs the viewer until the user quits. A signal that ends it gives the terminal back and
/// then ends the process by the signal's default action: this returns only when the user quit.
pub fn run(app: &mut App) -> io::Result<()> {
    let watcher = Watcher::start()?;
    let ended = {
        let mut guard = TerminalGuard::enter(app.mouse)?;
        event_loop(app, &mut guard, &watcher)?
    };
    drop(watcher);
    if let Some(sig) = ended {
        emulate_default_handler(sig)?;
        std::process::exit(128 + sig);
    }
    Ok(())
}

/// Reads and handles terminal events until the user quits (None) or a signal ends the viewer
/// (its number).
fn event_loop(app: &mut App, guard: &mut TerminalGuard, w: &Watcher) -> io::Result<Option<i32>> {
    let mut dirty = true;
    loop {
        while let Ok(alarm) = w.alarms.try_recv() {
            match alarm {
                Alarm::End(sig) => return Ok(Some(sig)),
                Alarm::Suspend => app.suspend = true,
                Alarm::Continued => {
                    guard.retake()?;
                    dirty = true;
                }
            }
        }
        if app.quit {
            return Ok(None);
        }
        if std::mem::take(&mut app.suspend) {
            guard.suspend()?;
            dirty = true;
        }
        guard.set_mouse(app.mouse)?;
        if dirty {
            guard.terminal.draw(|f| view::render(app, f))?;
            dirty = false;
        }
        if !event::poll(POLL)? {
            continue;
        }
        // a resize just redraws at the new size
        dirty = true;
        match event::read()? {
            TermEvent::Key(key) => app.update(input::action(app.mode(), key)),
            TermEvent::Mouse(m) => {
                let size = guard.terminal.size()?;
                let area = Rect::new(0, 0, size.width, size.height);
                app.update(input::mouse(app, area, m));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A terminal whose other end closes (its window, tmux, ssh gone) hangs up: that is how
    /// the watcher knows, while the loop's reader would spin on end of input.
    #[test]
    fn a_terminal_whose_other_end_closes_hangs_up() {
        let pty = nix::pty::openpty(None, None).expect("a pseudo-terminal");
        let terminal = vec![pty.slave];
        assert!(!hung_up(&terminal), "an open terminal");
        drop(pty.master);
        assert!(hung_up(&terminal), "its other end closed");
    }
}
