//! The terminal: raw mode and the alternate screen for as long as a [`TerminalGuard`] lives,
//! restored on drop, on error and on panic; and the one loop that reads crossterm events.

use crate::app::App;
use crate::input;
use crate::ui;
use crossterm::event::{self, Event as TermEvent};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// Whether the terminal is in raw mode on the alternate screen because of us.
static ENTERED: AtomicBool = AtomicBool::new(false);

/// Puts the terminal back as it was: cooked mode, main screen, cursor shown. Only the first
/// call after entering acts: leaving the alternate screen twice would move the cursor back
/// over what was printed in between (a panic message, say).
pub fn restore() {
    if ENTERED.swap(false, Ordering::SeqCst) {
        let _ = terminal::disable_raw_mode();
        let _ = execute!(io::stdout(), LeaveAlternateScreen, cursor::Show);
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
        if let Err(e) = execute!(out, EnterAlternateScreen, cursor::Hide) {
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

/// Runs the viewer until the user quits.
pub fn run(app: &mut App) -> io::Result<()> {
    let mut guard = TerminalGuard::enter()?;
    while !app.quit {
        guard.terminal.draw(|f| ui::render(app, f))?;
        // a resize just redraws at the new size on the next turn
        if let TermEvent::Key(key) = event::read()? {
            app.update(input::action(app.mode(), key));
        }
    }
    Ok(())
}
