//! The terminal: raw mode, the alternate screen and mouse reporting for as long as a
//! [`TerminalGuard`] lives, restored on drop, on error, on panic and on SIGTERM or SIGHUP; and
//! the one loop that reads crossterm events.

use crate::app::App;
use crate::input;
use crate::view;
use crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event as TermEvent};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::Terminal;
use signal_hook::consts::{SIGHUP, SIGTERM};
use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

/// Whether the terminal is in raw mode on the alternate screen because of us.
static ENTERED: AtomicBool = AtomicBool::new(false);

/// Puts the terminal back as it was: cooked mode, main screen, cursor shown. Only the first
/// call after entering acts: leaving the alternate screen twice would move the cursor back
/// over what was printed in between (a panic message, say).
pub fn restore() {
    if ENTERED.swap(false, Ordering::SeqCst) {
        let _ = terminal::disable_raw_mode();
        let _ = execute!(
            io::stdout(),
            DisableMouseCapture,
            LeaveAlternateScreen,
            cursor::Show
        );
    }
}

/// Raw mode and the alternate screen while it lives.
pub struct TerminalGuard {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    pub fn enter() -> io::Result<TerminalGuard> {
        install_panic_hook();
        terminal::enable_raw_mode()?;
        ENTERED.store(true, Ordering::SeqCst);
        let mut out = io::stdout();
        if let Err(e) = execute!(out, EnterAlternateScreen, EnableMouseCapture, cursor::Hide) {
            restore();
            return Err(e);
        }
        match Terminal::new(CrosstermBackend::new(out)) {
            Ok(terminal) => Ok(TerminalGuard { terminal }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Restores the terminal before the default hook prints the panic, so the message is readable.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

/// SIGTERM and SIGHUP are caught, not left to kill the process with the terminal still raw:
/// the loop sees the signal's number here, leaves, and the guard restores the terminal.
fn watch_signals() -> io::Result<Arc<AtomicUsize>> {
    let caught = Arc::new(AtomicUsize::new(0));
    for sig in [SIGTERM, SIGHUP] {
        signal_hook::flag::register_usize(sig, Arc::clone(&caught), sig as usize)?;
    }
    Ok(caught)
}

/// How long the loop waits for input before it looks for a caught signal again.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// Runs the viewer until the user quits. After a SIGTERM or SIGHUP, with the terminal
/// restored, the signal's default action ends the process as its sender expects.
pub fn run(app: &mut App) -> io::Result<()> {
    let caught = watch_signals()?;
    {
        let mut guard = TerminalGuard::enter()?;
        let mut dirty = true;
        while !app.quit && caught.load(Ordering::SeqCst) == 0 {
            if dirty {
                guard.terminal.draw(|f| view::render(app, f))?;
                dirty = false;
            }
            if !event::poll(SIGNAL_POLL)? {
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
    match caught.load(Ordering::SeqCst) {
        0 => Ok(()),
        sig => signal_hook::low_level::emulate_default_handler(sig as i32),
    }
}
