//! ringside-tui: the time-travel trace debugger.
//!
//! Split like tokio-console and the ratatui templates:
//! - [`state`]: what is known — the loaded trace, checkpoints for seeking, markers, filters;
//! - [`app`]: the cursor and view options, and what each action does to them;
//! - [`input`]: keys to actions, a pure function;
//! - [`ui`]: drawing, `ui::render(&App, &mut Frame)`;
//! - [`term`]: the terminal guard and the one loop that reads terminal events.

pub mod app;
pub mod input;
pub mod state;
pub mod term;
pub mod ui;

pub use app::App;
pub use state::Loaded;

use ringside_sim::trace::Trace;

/// Opens the viewer on a trace read into memory; returns when the user quits.
pub fn view(trace: Trace) -> std::io::Result<()> {
    let mut app = App::new(Loaded::new(trace));
    term::run(&mut app)
}
