//! The terminal: raw mode, the alternate screen and mouse reporting for as long as a
//! [`TerminalGuard`] lives, restored on drop, on error, on panic and on SIGTERM/SIGHUP; and the
//! one loop that reads crossterm events.

use crate::app::App;
use crate::input;
use crate::view;
use crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event as TermEvent};
use crossterm::execute;
use ratatui::layout::Rect;
use ratatui::DefaultTerminal;
use signal_hook::consts::{SIGHUP, SIGTERM};
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

/// Raw mode, the alternate screen and mouse reporting while it lives. `ratatui::try_init`
/// enters the first two and installs a panic hook that restores them before the panic message
/// is printed; ours, in front of it, turns mouse reporting off too. Dropping the guard restores
/// everything otherwise. The terminal shows the cursor again when it is dropped (ratatui hides
/// it while drawing).
pub struct TerminalGuard {
    pub terminal: DefaultTerminal,
}

impl TerminalGuard {
    pub fn enter() -> io::Result<TerminalGuard> {
        let terminal = match ratatui::try_init() {
            Ok(t) => t,
            Err(e) => {
                // raw mode may be on already
                let _ = ratatui::try_restore();
                return Err(e);
            }
        };
        install_panic_hook();
        if let Err(e) = execute!(io::stdout(), EnableMouseCapture) {
            let _ = ratatui::try_restore();
            return Err(e);
        }
        Ok(TerminalGuard { terminal })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        // while unwinding from a panic, the hooks have restored the terminal already: leaving
        // the alternate screen twice would move the cursor back over the panic message
        if !std::thread::panicking() {
            let _ = execute!(io::stdout(), DisableMouseCapture);
            ratatui::restore();
        }
    }
}

/// Turns mouse reporting off before ratatui's hook restores the rest and the panic is printed.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = execute!(io::stdout(), DisableMouseCapture);
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
