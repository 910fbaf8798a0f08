//! Allocation of the filters' word arrays, on transparent huge pages where the OS offers them.
//!
//! A filter that outgrows the caches touches `k` random words per operation, and with 4 KiB
//! pages nearly every one of them also misses the TLB: a 12 MiB filter (10^7 URLs at 1%) spans
//! 3,000 pages, more than the TLB holds, and in a virtual machine each page walk is itself
//! several memory accesses. On 2 MiB pages the same filter is 6 TLB entries. Linux hands out
//! such pages to a mapping only when asked (`madvise(MADV_HUGEPAGE)`) unless the machine is set
//! to `always`, which is not the default on most distributions; so arrays of at least
//! [`HUGE_PAGE`] bytes are advised before their pages are first touched. BENCHMARKS.md §1 has
//! the measured gain; where the kernel refuses (THP `never`, another OS) nothing changes.
//!
//! It also holds [`prefetch`], the hint the batch operations give the processor about words
//! they will read soon.
//!
//! The `unsafe` here: one system call on memory the array owns, and one prefetch
//! instruction. (The crate's other is in `bits.rs`.)

use std::sync::atomic::AtomicU64;

/// Size of a transparent huge page on x86-64 and most aarch64 kernels.
const HUGE_PAGE: usize = 2 << 20;

/// An all-zero array of `len` words.
pub(crate) fn zeroed(len: usize) -> Box<[AtomicU64]> {
    // `vec!` of zeros takes fresh zero pages from the OS (calloc) without touching them, so
    // the advice comes before the first fault; the in-place `map` then faults them in.
    let words = vec![0u64; len];
    advise(&words, Advice::HugePages);
    let words: Box<[AtomicU64]> = words.into_iter().map(AtomicU64::new).collect();
    // Unless the allocator reused memory it had touched before (glibc serves a freed block
    // again, already faulted in on small pages, and zeroes it): collapse what is populated.
    advise(&words, Advice::Collapse);
    words
}

/// An array holding `words` (read from a file, say). Their pages are already touched, so
/// they are advised and then collapsed into huge pages in place. No copy: a 16 GiB filter
/// does not need 32 GiB to load.
pub(crate) fn from_vec(words: Vec<u64>) -> Box<[AtomicU64]> {
    advise(&words, Advice::HugePages);
    advise(&words, Advice::Collapse);
    words.into_iter().map(AtomicU64::new).collect()
}

/// What to ask of the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Advice {
    /// `MADV_HUGEPAGE`: back this range with huge pages when it is first touched.
    HugePages,
    /// `MADV_COLLAPSE` (Linux 6.1+): move what is populated onto huge pages now.
    Collapse,
}

/// Gives `advice` for the whole 4 KiB pages inside the array `words`, which the caller owns.
/// A hint: errors (an old kernel, THP disabled, no huge page free) are ignored; the array
/// works the same either way.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn advise<T>(words: &[T], advice: Advice) {
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

#[cfg(not(target_os = "linux"))]
fn advise<T>(_words: &[T], _advice: Advice) {}

/// The last-level cache assumed where the OS does not say (one Zen 3 core complex's L3).
const DEFAULT_LAST_LEVEL_CACHE: usize = 32 << 20;

/// Size in bytes of the largest cache the processor of CPU 0 has — its last level, usually
/// an L3 shared by several cores — read once from Linux's sysfs, [`DEFAULT_LAST_LEVEL_CACHE`]
/// elsewhere or where it cannot be read. The batch queries take a different plan for arrays
/// that fit (`RawFilter::might_contain_hashes`).
pub(crate) fn last_level_cache_bytes() -> usize {
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| read_last_level_cache().unwrap_or(DEFAULT_LAST_LEVEL_CACHE))
}

#[cfg(target_os = "linux")]
fn read_last_level_cache() -> Option<usize> {
    let read = |index: u32, file: &str| {
        std::fs::read_to_string(format!(
            "/sys/devices/system/cpu/cpu0/cache/index{index}/{file}"
        ))
        .ok()
    };
    // (level, bytes) of the highest-level data or unified cache.
    let mut last: Option<(u32, usize)> = None;
    for index in 0..16 {
        let Some(level) = read(index, "level") else {
            break;
        };
        if read(index, "type").is_some_and(|kind| kind.trim() == "Instruction") {
            continue;
        }
        let level: u32 = level.trim().parse().ok()?;
        let bytes = parse_cache_size(&read(index, "size")?)?;
        if last.is_none_or(|(highest, _)| level > highest) {
            last = Some((level, bytes));
        }
    }
    last.map(|(_, bytes)| bytes)
}

#[cfg(not(target_os = "linux"))]
fn read_last_level_cache() -> Option<usize> {
    None
}

/// A cache size as sysfs writes it: `32768K`, `8M`, or bytes. `None` for anything else.
fn parse_cache_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, ""),
    };
    let scale = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    digits.parse::<usize>().ok()?.checked_mul(scale)
}

/// Asks the processor to start loading the cache line that holds `word`, without waiting for
/// it: a later load of the word then finds it cached, or at least already on its way. Unlike a
/// load, a prefetch retires at once, so a batch can have as many lines in flight as the memory
/// system allows instead of as many as the out-of-order window holds. A hint only: it changes
/// no value and never faults. A no-op off x86-64.
#[inline(always)]
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
pub(crate) fn prefetch(word: &AtomicU64) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 processor has (it is part of the
    // target's baseline). The instruction reads no memory architecturally and cannot fault;
    // the pointer comes from a live reference anyway.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(word.as_ptr().cast_const().cast()) }
}

/// Off x86-64 the batch operations run without the hint (their loads still overlap).
#[inline(always)]
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn prefetch(_word: &AtomicU64) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn cache_sizes_parse_as_sysfs_writes_them() {
        assert_eq!(parse_cache_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_cache_size("8M"), Some(8 << 20));
        assert_eq!(parse_cache_size("1G"), Some(1 << 30));
        assert_eq!(parse_cache_size("4096"), Some(4096));
        for bad in [
            "",
            "K",
            "12KB",
            "-1K",
            "1.5M",
            "99999999999999999999G",
            "9999999999999G",
        ] {
            assert_eq!(parse_cache_size(bad), None, "{bad:?}");
        }
        // Whatever the machine says, or the default, it is a plausible size.
        assert!(last_level_cache_bytes() >= 64 << 10);
    }

    #[test]
    fn arrays_start_zeroed_and_keep_what_they_are_given() {
        for len in [1, 100, HUGE_PAGE / 8 + 3] {
            let words = zeroed(len);
            assert_eq!(words.len(), len);
            assert!(words.iter().all(|w| w.load(Ordering::Relaxed) == 0));
            let given: Vec<u64> = (0..len as u64).map(|i| i.wrapping_mul(0x9E37)).collect();
            let words = from_vec(given.clone());
            let back: Vec<u64> = words.iter().map(|w| w.load(Ordering::Relaxed)).collect();
            assert_eq!(back, given);
        }
    }
}
