//! ringside-tui: the time-travel trace debugger.
//!
//! Split like tokio-console and the ratatui templates:
//! - [`state`]: what is known — the loaded trace, checkpoints for seeking, markers (faults,
//!   application bugs' offending calls), filters, how each rank is shown, the chains of waits
//!   behind each root cause;
//! - [`app`]: the cursor and view options, and what each action does to them;
//! - [`input`]: keys and mouse to actions;
//! - [`view`]: drawing, `view::render(&App, &mut Frame)`, and what is under a mouse cell;
//! - [`term`]: the terminal guard (signals included) and the one loop that reads terminal
//!   events.

pub mod app;
pub mod input;
pub mod state;
pub mod term;
pub mod view;

pub use app::App;
pub use state::Loaded;

/// How the viewer starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Mouse reporting on (off: the terminal selects and scrolls text as usual).
    pub mouse: bool,
    /// Colours for a light background.
    pub light: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            mouse: true,
            light: false,
        }
    }
}

/// Opens the viewer on a loaded trace; returns when the user quits. A signal that ends it
/// gives the terminal back, then ends the process as the signal would.
pub fn view(loaded: Loaded, opts: Options) -> std::io::Result<()> {
    let mut app = App::new(loaded);
    app.mouse = opts.mouse;
    app.light = opts.light;
    term::run(&mut app)
}
