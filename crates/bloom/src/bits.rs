//! `BitArray`: Guava's `LockFreeBitArray` in Rust — `AtomicU64` words, check-first sets, and an
//! exact striped bit count.
//!
//! Bit `i` lives in word `i / 64` at position `i % 64`, exactly as in Guava, so the words
//! serialise to the same bytes. `set` first *loads* the word and returns without writing when
//! the bit is already 1: in a crawler most links are duplicates, and a plain load keeps the
//! cache line shared between cores where any read-modify-write would pull it exclusive.
//! Only a bit that looks clear is set atomically, and only the call that really flipped it
//! returns `true` and bumps the count — so the count equals the popcount of the words once
//! concurrent writers are done.
//!
//! Two atomic set paths exist because the issue asks to measure both: `set` uses `fetch_or`
//! (one `lock or` on x86-64, cannot fail) and `set_cas` mirrors Guava's compare-and-swap loop.
//! Both are lock-free; BENCHMARKS.md has the figures, and `set` is the one the filters use.
//!
//! Memory ordering is `Relaxed` throughout: a Bloom filter publishes no other data through its
//! bits, and callers that hand an item to another thread synchronise through their own channel
//! (the frontier's queue), which orders the bit writes before the other thread's reads.

#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};

use crate::counter::StripedCounter;
use crate::error::Error;

/// The largest word count Guava's format can carry (a signed 32-bit length).
pub const MAX_WORDS: u64 = i32::MAX as u64;

/// A fixed-size array of bits that many threads may set at once.
#[derive(Debug)]
pub struct BitArray {
    words: Box<[AtomicU64]>,
    /// Number of 1 bits, kept striped so that concurrent setters do not share a cache line.
    count: StripedCounter,
}

impl BitArray {
    /// Creates an all-zero array of at least `bits` bits, rounded up to whole 64-bit words
    /// (Guava: `LongMath.divide(bits, 64, CEILING)`).
    pub fn with_bits(bits: u64) -> Result<Self, Error> {
        let words = bits.div_ceil(64);
        if words == 0 {
            return Err(Error::ZeroBits { bits });
        }
        if words > MAX_WORDS {
            return Err(Error::TooLarge { bits });
        }
        let words = crate::words::zeroed(words as usize);
        Ok(Self {
            words,
            count: StripedCounter::default(),
        })
    }

    /// Takes ownership of existing words (e.g. read from a file); the count is recomputed.
    pub fn from_words(words: Vec<u64>) -> Result<Self, Error> {
        let bits = (words.len() as u64).saturating_mul(64);
        if words.is_empty() {
            return Err(Error::ZeroBits { bits });
        }
        if words.len() as u64 > MAX_WORDS {
            return Err(Error::TooLarge { bits });
        }
        let ones = words.iter().map(|w| u64::from(w.count_ones())).sum();
        Ok(Self {
            words: crate::words::from_vec(words),
            count: StripedCounter::new(ones),
        })
    }

    /// Number of bits (always a multiple of 64).
    #[inline]
    pub fn bit_size(&self) -> u64 {
        self.words.len() as u64 * 64
    }

    /// Number of 64-bit words.
    #[inline]
    pub fn word_count(&self) -> usize {
        self.words.len()
    }

    /// Sets bit `index`; returns `true` only if this call changed it from 0 to 1.
    ///
    /// # Panics
    /// If `index >= bit_size()` (a caller bug, not an input error).
    #[inline]
    pub fn set(&self, index: u64) -> bool {
        let word = &self.words[(index >> 6) as usize];
        let mask = 1u64 << (index & 63);
        if word.load(Ordering::Relaxed) & mask != 0 {
            return false;
        }
        let previous = word.fetch_or(mask, Ordering::Relaxed);
        if previous & mask != 0 {
            return false;
        }
        self.count.add(1);
        true
    }

    /// Sets the bits `indices[i]` for every bit `i` of `clear` with `fetch_or`, *without* the
    /// check-first load — for callers that have just loaded the words and seen those bits
    /// clear — and returns how many of them this call flipped, leaving the count to the
    /// caller, who adds all of one item's (or batch's) flips at once with
    /// [`add_count`](Self::add_count).
    ///
    /// Written so that x86-64 gets one `lock bts` per bit: LLVM emits it for a `fetch_or` of a
    /// single bit whose old value is only tested, but turning that test into arithmetic
    /// (`flipped += u64::from(flipped_it)`) makes it fall back to a `lock cmpxchg` loop (an
    /// extra load and a retry branch; 37% of a cache-resident batch `put` sat on it). The
    /// branch and the empty `black_box(())` keep the test a test. Either way the result is
    /// the same; only the instructions differ.
    #[inline]
    pub(crate) fn or_clear_uncounted(&self, indices: &[u64], mut clear: u32) -> u64 {
        let mut flipped = 0;
        while clear != 0 {
            let index = indices[clear.trailing_zeros() as usize];
            clear &= clear - 1;
            let mask = 1u64 << (index & 63);
            if self.words[(index >> 6) as usize].fetch_or(mask, Ordering::Relaxed) & mask != 0 {
                continue; // another thread set it since our load
            }
            flipped += 1;
            std::hint::black_box(());
        }
        flipped
    }

    /// Adds flips made with [`or_clear_uncounted`](Self::or_clear_uncounted) to the count.
    #[inline]
    pub(crate) fn add_count(&self, flipped: u64) {
        self.count.add(flipped as i64);
    }

    /// Like [`set`](Self::set), but with Guava's compare-and-swap loop instead of `fetch_or`.
    #[inline]
    pub fn set_cas(&self, index: u64) -> bool {
        let word = &self.words[(index >> 6) as usize];
        let mask = 1u64 << (index & 63);
        let mut old = word.load(Ordering::Relaxed);
        loop {
            if old & mask != 0 {
                return false;
            }
            match word.compare_exchange_weak(old, old | mask, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(actual) => old = actual,
            }
        }
        self.count.add(1);
        true
    }

    /// Whether bit `index` is 1.
    #[inline]
    pub fn get(&self, index: u64) -> bool {
        self.words[(index >> 6) as usize].load(Ordering::Relaxed) & (1u64 << (index & 63)) != 0
    }

    /// Starts loading the word that holds bit `index` into the caches without waiting for it,
    /// so that a [`get`](Self::get) or [`set`](Self::set) of that bit a little later finds the
    /// line near. A hint: it changes nothing and has no effect off x86-64. The batch
    /// operations of the filters use it; it is public for callers that pipeline their own
    /// accesses (and for the memory-ceiling benchmark).
    ///
    /// # Panics
    /// If `index >= bit_size()`.
    #[inline(always)]
    pub fn prefetch(&self, index: u64) {
        crate::hints::prefetch(&self.words[(index >> 6) as usize]);
    }

    /// Number of 1 bits, from the striped count (exact once concurrent writers finish).
    pub fn bit_count(&self) -> u64 {
        self.count.sum()
    }

    /// Number of 1 bits, recounted word by word (O(words); for checks and tests).
    pub fn popcount(&self) -> u64 {
        self.words
            .iter()
            .map(|w| u64::from(w.load(Ordering::Relaxed).count_ones()))
            .sum()
    }

    /// Word `i` as it is now.
    #[inline]
    pub fn word(&self, i: usize) -> u64 {
        self.words[i].load(Ordering::Relaxed)
    }

    /// ORs `other` into `self` word by word (Guava's `putAll`), keeping the count exact.
    ///
    /// # Panics
    /// If the sizes differ; callers check compatibility first.
    pub fn union(&self, other: &BitArray) {
        assert_eq!(
            self.words.len(),
            other.words.len(),
            "bit arrays differ in size"
        );
        let mut added = 0i64;
        for (ours, theirs) in self.words.iter().zip(other.words.iter()) {
            let theirs = theirs.load(Ordering::Relaxed);
            if theirs == 0 {
                continue;
            }
            let before = ours.fetch_or(theirs, Ordering::Relaxed);
            added += i64::from((before | theirs).count_ones()) - i64::from(before.count_ones());
        }
        self.count.add(added);
    }

    /// Zeroes every word and the count. Concurrent setters during a clear may leave bits the
    /// count does not know about; callers (rotation) clear only arrays nobody writes to.
    pub fn clear(&self) {
        for w in self.words.iter() {
            w.store(0, Ordering::Relaxed);
        }
        self.count.reset(0);
    }

    /// A copy of the words as they are now.
    pub fn to_words(&self) -> Vec<u64> {
        self.words
            .iter()
            .map(|w| w.load(Ordering::Relaxed))
            .collect()
    }

    /// Approximate heap bytes held by the words.
    pub fn heap_bytes(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_up_to_words_and_refuses_empty_or_huge() {
        assert_eq!(BitArray::with_bits(1).unwrap().bit_size(), 64);
        assert_eq!(BitArray::with_bits(64).unwrap().bit_size(), 64);
        assert_eq!(BitArray::with_bits(65).unwrap().bit_size(), 128);
        assert_eq!(
            BitArray::with_bits(0).unwrap_err(),
            Error::ZeroBits { bits: 0 }
        );
        let too_many = (MAX_WORDS + 1) * 64;
        assert_eq!(
            BitArray::with_bits(too_many).unwrap_err(),
            Error::TooLarge { bits: too_many }
        );
    }

    #[test]
    fn set_reports_only_real_flips_for_both_paths() {
        let bits = BitArray::with_bits(128).unwrap();
        assert!(bits.set(3));
        assert!(!bits.set(3));
        assert!(bits.set_cas(100));
        assert!(!bits.set_cas(100));
        assert!(!bits.set_cas(3));
        assert!(bits.get(3) && bits.get(100) && !bits.get(4));
        assert_eq!(bits.word(0), 1 << 3);
        assert_eq!(bits.word(1), 1 << (100 - 64));
        assert_eq!(bits.bit_count(), 2);
        assert_eq!(bits.popcount(), 2);
    }

    #[test]
    fn union_counts_only_new_bits() {
        let a = BitArray::from_words(vec![0b1011, 0]).unwrap();
        let b = BitArray::from_words(vec![0b0110, 1 << 63]).unwrap();
        a.union(&b);
        assert_eq!(a.to_words(), vec![0b1111, 1 << 63]);
        assert_eq!(a.bit_count(), 5);
        assert_eq!(a.popcount(), 5);
        a.clear();
        assert_eq!((a.bit_count(), a.popcount()), (0, 0));
    }

    #[test]
    fn concurrent_setters_keep_count_exact() {
        let bits = BitArray::with_bits(1 << 16).unwrap();
        let flipped: u64 = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4u64)
                .map(|t| {
                    let bits = &bits;
                    s.spawn(move || {
                        let mut mine = 0u64;
                        // Overlapping index sets: every thread touches the same bits.
                        for i in 0..50_000u64 {
                            let index = (i * 2_654_435_761 + t * 7) % (1 << 16);
                            let hit = if t % 2 == 0 {
                                bits.set(index)
                            } else {
                                bits.set_cas(index)
                            };
                            mine += u64::from(hit);
                        }
                        mine
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(bits.bit_count(), bits.popcount());
        assert_eq!(flipped, bits.popcount(), "each bit is flipped exactly once");
    }
}
