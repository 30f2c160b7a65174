//! Cache hints: asking the processor to bring memory in before it is read.
//!
//! With thousands of ranks the state that one message touches (the receiver's slot, its
//! record in the diagnosis, the message itself) has left the cache since the rank's last
//! message, a whole round of the collective ago. The engine knows which events come next, and
//! so which ranks they will touch, several events before it handles them: a hint given then
//! lets those loads overlap the work in between. A hint changes nothing a run computes.

/// Asks for the cache line at `p`.
#[inline(always)]
pub(crate) fn prefetch_addr(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch reads nothing the program sees and faults on no address, and
        // SSE, which it needs, is part of every x86-64 processor
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Asks for the cache lines of `x` (all of them: a rank's slot spans a dozen).
#[inline(always)]
pub(crate) fn prefetch<T>(x: &T) {
    let p = (x as *const T).cast::<u8>();
    for off in (0..std::mem::size_of::<T>()).step_by(64) {
        prefetch_addr(p.wrapping_add(off));
    }
}
