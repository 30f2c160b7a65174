//! `bidi-ring`: ringside's command line, with the bidirectional ring registered
//! (`bidi_ring`, and its planted bugs `bidi_ring_wrong_peer` and `bidi_ring_wrong_sum`). Every command of `ringside` is
//! here and knows both by name: `bidi-ring run`, `check`, `replay`, `explain`, `tui`...

fn main() -> std::process::ExitCode {
    bidi_ring::register();
    bidi_ring::register_wrong_peer();
    bidi_ring::register_wrong_sum();
    ringside::main()
}
