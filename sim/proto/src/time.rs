//! Virtual time: exact integer nanoseconds, and how they are printed for humans.

/// Virtual time and durations, in nanoseconds.
pub type Nanos = u64;

/// The instant that never comes: a sum of times that would not fit in [`Nanos`] saturates to
/// it, so that a timer set very far ahead means "never" instead of wrapping to the past.
pub const NEVER: Nanos = Nanos::MAX;

/// `now + d`, or [`NEVER`] when that is past the last representable instant.
#[inline]
pub fn later(now: Nanos, d: Nanos) -> Nanos {
    now.saturating_add(d)
}

/// Formats nanoseconds as milliseconds with three decimals, e.g. `25.000ms`.
pub fn fmt_ms(ns: Nanos) -> String {
    format!("{}.{:03}ms", ns / 1_000_000, (ns / 1_000) % 1_000)
}

/// Formats nanoseconds with an adaptive unit for humans, e.g. `312.5us`, `1.250s`.
pub fn fmt_time(ns: Nanos) -> String {
    if ns < 1_000 {
        format!("{ns}ns")
    } else if ns < 1_000_000 {
        format!("{:.3}us", ns as f64 / 1e3)
    } else if ns < 10_000_000_000 {
        fmt_ms(ns)
    } else {
        format!("{:.3}s", ns as f64 / 1e9)
    }
}
