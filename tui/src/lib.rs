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

/// Opens the viewer on a loaded trace; returns when the user quits.
pub fn view(loaded: Loaded) -> std::io::Result<()> {
    let mut app = App::new(loaded);
    term::run(&mut app)
}
