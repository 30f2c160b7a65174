//! Progress on stderr for work that takes more than about a second: shown only on a terminal,
//! never with `--quiet`, and cleared when the work is done, so stdout and logs stay clean.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use ringside_sim::units::{fmt_ms, Nanos};
use std::io::IsTerminal;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long work runs before its progress is shown.
const AFTER: Duration = Duration::from_secs(1);

pub struct Progress {
    enabled: bool,
    start: Instant,
    bar: OnceLock<ProgressBar>,
}

impl Progress {
    // progress is about the wall clock the user waits on, not virtual time
    #[allow(clippy::disallowed_methods)]
    pub fn new(quiet: bool) -> Progress {
        Progress {
            enabled: !quiet && std::io::stderr().is_terminal(),
            start: Instant::now(),
            bar: OnceLock::new(),
        }
    }

    /// The bar, once the work has run long enough to show one: a spinner for a run (`total`
    /// 0), else a bar of `total` items.
    fn bar(&self, total: u64) -> Option<&ProgressBar> {
        if !self.enabled {
            return None;
        }
        if let Some(b) = self.bar.get() {
            return Some(b);
        }
        if self.start.elapsed() < AFTER {
            return None;
        }
        Some(self.bar.get_or_init(|| {
            let (bar, template) = if total == 0 {
                (ProgressBar::new_spinner(), "{spinner} {elapsed} {msg}")
            } else {
                (
                    ProgressBar::new(total),
                    "{spinner} [{bar:40}] {pos}/{len} {msg}, {elapsed}",
                )
            };
            // the time shown is the work's, which began before the bar
            let bar = bar.with_elapsed(self.start.elapsed());
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        }))
    }

    /// A run reached virtual time `t` after `events` events.
    pub fn run(&self, t: Nanos, events: u64) {
        if let Some(b) = self.bar(0) {
            let secs = self.start.elapsed().as_secs_f64().max(1e-9);
            b.set_message(format!(
                "virtual time {}, {} events, {:.1} M events/s",
                fmt_ms(t),
                events,
                events as f64 / secs / 1e6
            ));
        }
    }

    /// `done` items of `total` are done; `what` names them and what goes on.
    pub fn items(&self, done: u64, total: u64, what: &str) {
        if let Some(b) = self.bar(total.max(1)) {
            b.set_length(total);
            b.set_position(done);
            b.set_message(items_message(what, done, self.start.elapsed()));
        }
    }

    /// Says what goes on now, when progress is shown.
    pub fn message(&self, what: &str) {
        if let Some(b) = self.bar.get() {
            b.set_message(what.to_string());
        }
    }

    pub fn finish(&self) {
        if let Some(b) = self.bar.get() {
            b.finish_and_clear();
        }
    }
}

/// What a bar of items says beside its count: what they are, and how many a second since the
/// work began (the bar, shown only after a second, would see the items done before it as done
/// at once).
fn items_message(what: &str, done: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64().max(1e-9);
    format!("{what}, {:.0}/s", done as f64 / secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_of_items_counts_from_the_start_of_the_work() {
        assert_eq!(
            items_message("cases", 4000, Duration::from_secs(2)),
            "cases, 2000/s"
        );
        assert_eq!(
            items_message("runs", 70, Duration::from_millis(1250)),
            "runs, 56/s"
        );
        assert_eq!(items_message("runs", 0, Duration::ZERO), "runs, 0/s");
    }
}
