//! The `ringside` binary's allocator, so that what a bench times in its own process allocates
//! as `ringside run` does (see the binary's `main.rs` for why it is mimalloc).

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;
