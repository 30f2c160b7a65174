//! `bidi-ring`: ringside's command line, with the bidirectional ring registered
//! (`bidi_ring`, and its planted bug `bidi_ring_wrong_peer`). Every command of `ringside` is
//! here and knows both by name: `bidi-ring run`, `check`, `replay`, `explain`, `tui`...

fn main() -> std::process::ExitCode {
    bidi_ring::register();
    bidi_ring::register_wrong_peer();
    ringside::main()
}
