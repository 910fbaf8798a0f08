//! Hints to the operating system and the processor about the filters' memory — the crate's
//! only `unsafe`, and only with the `hints` cargo feature:
//! - [`advise`]: `madvise` asks Linux to back arrays of 2 MiB or more with transparent huge
//!   pages, so that the random probes of a big filter do not each miss the TLB too;
//! - [`prefetch`]: the batch operations start loading lines they will read soon.
//!
//! Neither changes a value: without the feature both are no-ops and every answer is the same
//! (the filters are slower on big arrays: BENCHMARKS.md §1 measures `crawler bloom build` and
//! `query` at 10^8 keys both ways). The crate is `forbid(unsafe_code)` without the feature,
//! and every other module is `forbid(unsafe_code)` with it.

#![cfg_attr(not(feature = "hints"), forbid(unsafe_code))]

use std::sync::atomic::AtomicU64;

/// Size of a transparent huge page on x86-64 and most aarch64 kernels.
#[cfg(all(feature = "hints", target_os = "linux"))]
const HUGE_PAGE: usize = 2 << 20;

/// What to ask of the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Advice {
    /// `MADV_HUGEPAGE`: back this range with huge pages when it is first touched.
    HugePages,
    /// `MADV_COLLAPSE` (Linux 6.1+): move what is populated onto huge pages now.
    Collapse,
}

/// Gives `advice` for the whole 4 KiB pages inside the array `words`, which the caller owns.
/// A hint: errors (an old kernel, THP disabled, no huge page free) are ignored; the array
/// works the same either way.
#[cfg(all(feature = "hints", target_os = "linux"))]
#[allow(unsafe_code)]
pub(crate) fn advise<T>(words: &[T], advice: Advice) {
    const PAGE: usize = 4096;
    /// Not in every libc target's bindings yet; the value is the kernel's ABI.
    const MADV_COLLAPSE: libc::c_int = 25;
    let bytes = std::mem::size_of_val(words);
    if bytes < HUGE_PAGE {
        return;
    }
    let start = words.as_ptr() as usize;
    let first = start.next_multiple_of(PAGE);
    let end = (start + bytes) / PAGE * PAGE;
    if end <= first {
        return;
    }
    let advice = match advice {
        Advice::HugePages => libc::MADV_HUGEPAGE,
        Advice::Collapse => MADV_COLLAPSE,
    };
    // SAFETY: `first..end` lies inside the allocation behind `words` (rounded inward to page
    // boundaries), so it is mapped; the callers own that allocation. Neither advice changes
    // the contents or the validity of the memory, only which pages back it, so nothing that
    // reads or writes the array (now or concurrently) can observe a difference.
    let _ = unsafe { libc::madvise(first as *mut libc::c_void, end - first, advice) };
}

/// Without the `hints` feature (or off Linux) no advice is given.
#[cfg(not(all(feature = "hints", target_os = "linux")))]
pub(crate) fn advise<T>(_words: &[T], _advice: Advice) {}

/// Asks the processor to start loading the cache line that holds `word`, without waiting for
/// it: a later load of the word then finds it cached, or at least already on its way. Unlike a
/// load, a prefetch retires at once, so a batch can have as many lines in flight as the memory
/// system allows instead of as many as the out-of-order window holds. A hint only: it changes
/// no value and never faults. A no-op off x86-64.
#[inline(always)]
#[cfg(all(feature = "hints", target_arch = "x86_64"))]
#[allow(unsafe_code)]
pub(crate) fn prefetch(word: &AtomicU64) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 processor has (it is part of the
    // target's baseline). The instruction reads no memory architecturally and cannot fault;
    // the pointer comes from a live reference anyway.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(word.as_ptr().cast_const().cast()) }
}

/// Without the `hints` feature, or off x86-64, the batch operations run without the hint
/// (their loads still overlap).
#[inline(always)]
#[cfg(not(all(feature = "hints", target_arch = "x86_64")))]
pub(crate) fn prefetch(_word: &AtomicU64) {}
