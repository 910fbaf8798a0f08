//! Allocation of the filters' word arrays, on transparent huge pages where the OS offers them.
//!
//! A filter that outgrows the caches touches `k` random words per operation, and with 4 KiB
//! pages nearly every one of them also misses the TLB: a 12 MiB filter (10^7 URLs at 1%) spans
//! 3,000 pages, more than the TLB holds, and in a virtual machine each page walk is itself
//! several memory accesses. On 2 MiB pages the same filter is 6 TLB entries. Linux hands out
//! such pages to a mapping only when asked (`madvise(MADV_HUGEPAGE)`) unless the machine is set
//! to `always`, which is not the default on most distributions; so arrays of at least
//! 2 MiB (a huge page) are advised before their pages are first touched. BENCHMARKS.md §1 has
//! the measured gain; where the kernel refuses (THP `never`, another OS) nothing changes.
//!
//! The advice itself is a hint of `hints.rs` (the crate's only `unsafe`, behind the `hints`
//! feature); without the feature arrays are allocated the same, on whatever pages the OS
//! gives.

#![forbid(unsafe_code)]

use std::sync::atomic::AtomicU64;

use crate::hints::{advise, Advice};

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
        // Up to just past a 2 MiB huge page.
        for len in [1, 100, (2 << 20) / 8 + 3] {
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
