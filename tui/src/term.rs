//! The terminal: raw mode and the alternate screen for as long as a [`TerminalGuard`] lives,
//! restored on drop, on error and on panic; and the one loop that reads crossterm events.

use crate::app::App;
use crate::input;
use crate::ui;
use crossterm::event::{self, Event as TermEvent};
use ratatui::DefaultTerminal;
use std::io;

/// Raw mode and the alternate screen while it lives. `ratatui::try_init` enters them and
/// installs a panic hook that restores the terminal before the panic message is printed;
/// dropping the guard restores it otherwise. The terminal shows the cursor again when it is
/// dropped (ratatui hides it while drawing).
pub struct TerminalGuard {
    pub terminal: DefaultTerminal,
}

impl TerminalGuard {
    pub fn enter() -> io::Result<TerminalGuard> {
        match ratatui::try_init() {
            Ok(terminal) => Ok(TerminalGuard { terminal }),
            Err(e) => {
                // raw mode may be on already
                let _ = ratatui::try_restore();
                Err(e)
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        // while unwinding from a panic, the hook has restored the terminal already: leaving the
        // alternate screen twice would move the cursor back over the panic message
        if !std::thread::panicking() {
            ratatui::restore();
        }
    }
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
