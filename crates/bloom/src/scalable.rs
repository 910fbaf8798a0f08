//! `ScalableBloomFilter`: a filter that grows instead of silently degrading (Almeida, Baquero,
//! Preguiça, Hutchison, "Scalable Bloom Filters", 2007).
//!
//! A crawl that outgrows its `expected_insertions` would, with a fixed filter, see its false
//! positive rate climb — and every false positive is a page never fetched. Here the filter is
//! a series of Guava-shaped slices. Slice `i` is sized for `n0 · s^i` items at FPP
//! `p0 · r^i` (growth `s = 2`, tightening `r = 0.5`, `p0 = P · (1 - r)`), so the compound
//! false-positive probability `1 - Π(1 - p_i)` stays below `Σ p_i < P` however many slices
//! are added. An item is new when no slice might contain it; it then goes into the newest
//! slice, and the slice that reaches its design count triggers the next one.
//!
//! Slices live in a fixed array of `OnceLock`s, so readers and writers never take a lock;
//! only the thread that fills a slice takes a mutex to create the next one.

#![forbid(unsafe_code)]

use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::error::Error;
use crate::funnel::{Funnel, Hash128};
use crate::raw::RawFilter;

/// Most slices a filter can have: with growth 2, `n0 · 2^40` items — far beyond any memory.
const MAX_SLICES: usize = 40;
/// Each slice holds this many times the items of the previous one.
const GROWTH: u64 = 2;
/// Each slice's FPP is this fraction of the previous one's.
const TIGHTENING: f64 = 0.5;

#[derive(Debug)]
struct Slice {
    filter: RawFilter,
    /// Items this slice was sized for; reaching it opens the next slice.
    capacity: u64,
    /// Items recorded as new in this slice.
    added: AtomicU64,
}

/// A Bloom filter that adds capacity when it fills up, keeping its overall FPP below target.
pub struct ScalableBloomFilter<T: ?Sized, F> {
    slices: Box<[OnceLock<Slice>]>,
    /// Index of the newest slice; slices `0..=active` exist.
    active: AtomicUsize,
    initial_capacity: u64,
    target_fpp: f64,
    /// Serialises slice creation (rare); the hot paths never touch it.
    grow: Mutex<()>,
    funnel: F,
    _item: PhantomData<fn(&T)>,
}

impl<T: ?Sized, F> fmt::Debug for ScalableBloomFilter<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScalableBloomFilter")
            .field("slices", &(self.active.load(Ordering::Relaxed) + 1))
            .field("initial_capacity", &self.initial_capacity)
            .field("target_fpp", &self.target_fpp)
            .finish()
    }
}

impl<T: ?Sized, F: Funnel<T>> ScalableBloomFilter<T, F> {
    /// A filter whose first slice holds `initial_capacity` items and whose compound FPP stays
    /// below `target_fpp` as it grows.
    pub fn new(funnel: F, initial_capacity: u64, target_fpp: f64) -> Result<Self, Error> {
        if !(target_fpp > 0.0 && target_fpp < 1.0) {
            return Err(Error::InvalidFpp(target_fpp));
        }
        let filter = Self {
            slices: (0..MAX_SLICES).map(|_| OnceLock::new()).collect(),
            active: AtomicUsize::new(0),
            initial_capacity: initial_capacity.max(1),
            target_fpp,
            grow: Mutex::new(()),
            funnel,
            _item: PhantomData,
        };
        let first = filter.make_slice(0)?;
        let _ = filter.slices[0].set(first);
        Ok(filter)
    }

    fn make_slice(&self, i: usize) -> Result<Slice, Error> {
        let capacity = self
            .initial_capacity
            .saturating_mul(GROWTH.saturating_pow(i as u32));
        let fpp = self.target_fpp * (1.0 - TIGHTENING) * TIGHTENING.powi(i as i32);
        Ok(Slice {
            filter: RawFilter::new(capacity, fpp)?,
            capacity,
            added: AtomicU64::new(0),
        })
    }

    fn slices(&self) -> impl Iterator<Item = &Slice> {
        let active = self.active.load(Ordering::Acquire);
        self.slices[..=active].iter().filter_map(OnceLock::get)
    }

    /// Records `item`; `true` if no slice might have contained it (it is certainly new).
    pub fn put(&self, item: &T) -> bool {
        self.put_hash(self.funnel.hash(item))
    }

    /// [`put`](Self::put) for an already computed hash.
    pub fn put_hash(&self, hash: Hash128) -> bool {
        let active = self.active.load(Ordering::Acquire);
        let older = &self.slices[..active];
        if older
            .iter()
            .filter_map(OnceLock::get)
            .any(|s| s.filter.might_contain_hash(hash))
        {
            return false;
        }
        let Some(newest) = self.slices[active].get() else {
            return false; // unreachable: `active` is published after its slice is set
        };
        if !newest.filter.put_hash(hash) {
            return false;
        }
        if newest.added.fetch_add(1, Ordering::Relaxed) + 1 == newest.capacity {
            self.open_slice_after(active);
        }
        true
    }

    fn open_slice_after(&self, full: usize) {
        let _guard = self.grow.lock().unwrap_or_else(|e| e.into_inner());
        let next = full + 1;
        if self.active.load(Ordering::Acquire) != full || next >= MAX_SLICES {
            return;
        }
        // A slice too large to allocate leaves the filter filling its last slice: FPP then
        // degrades as with a fixed filter, which `expected_fpp` reports.
        if let Ok(slice) = self.make_slice(next) {
            let _ = self.slices[next].set(slice);
            self.active.store(next, Ordering::Release);
        }
    }

    /// `false` if `item` was certainly never put; `true` if it might have been.
    pub fn might_contain(&self, item: &T) -> bool {
        self.might_contain_hash(self.funnel.hash(item))
    }

    /// [`might_contain`](Self::might_contain) for an already computed hash.
    pub fn might_contain_hash(&self, hash: Hash128) -> bool {
        self.slices().any(|s| s.filter.might_contain_hash(hash))
    }

    /// The hash this filter uses for `item`.
    pub fn hash(&self, item: &T) -> Hash128 {
        self.funnel.hash(item)
    }

    /// Number of slices so far.
    pub fn slice_count(&self) -> usize {
        self.active.load(Ordering::Acquire) + 1
    }

    /// Items recorded as new (exact once writers finish).
    pub fn len(&self) -> u64 {
        self.slices().map(|s| s.added.load(Ordering::Relaxed)).sum()
    }

    /// Whether nothing was ever put.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The compound chance of a false positive now: `1 - Π(1 - fpp_i)`.
    pub fn expected_fpp(&self) -> f64 {
        1.0 - self
            .slices()
            .map(|s| 1.0 - s.filter.expected_fpp())
            .product::<f64>()
    }

    /// The FPP this filter promises to stay below.
    pub fn target_fpp(&self) -> f64 {
        self.target_fpp
    }

    /// Total bits over all slices.
    pub fn bit_size(&self) -> u64 {
        self.slices().map(|s| s.filter.bit_size()).sum()
    }

    /// Total 1 bits over all slices.
    pub fn bit_count(&self) -> u64 {
        self.slices().map(|s| s.filter.bits().bit_count()).sum()
    }

    /// Heap bytes held by all slices.
    pub fn heap_bytes(&self) -> usize {
        self.slices().map(|s| s.filter.bits().heap_bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::funnel::LongFunnel;

    #[test]
    fn grows_past_its_estimate_without_false_negatives() {
        let f = ScalableBloomFilter::new(LongFunnel, 1000, 0.01).unwrap();
        assert_eq!(f.slice_count(), 1);
        let mut new = 0;
        for i in 0..20_000 {
            new += u64::from(f.put(&i));
        }
        // 1000 + 2000 + 4000 + 8000 = 15000 < 20000 ≤ 31000 → 5 slices.
        assert_eq!(f.slice_count(), 5);
        assert_eq!(f.len(), new);
        // Items that hit a false positive in an older slice are not recorded: at most the
        // target FPP of them.
        assert!(
            new >= 19_800,
            "at most 1% may be lost to false positives: {new}"
        );
        assert!((0..20_000).all(|i| f.might_contain(&i)));
        assert!(f.expected_fpp() < 0.01, "{}", f.expected_fpp());
    }

    #[test]
    fn rejects_bad_fpp() {
        assert!(ScalableBloomFilter::new(LongFunnel, 10, 1.5).is_err());
        assert!(ScalableBloomFilter::new(LongFunnel, 10, 0.0).is_err());
    }
}
