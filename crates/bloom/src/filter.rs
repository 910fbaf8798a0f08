//! `BloomFilter<T, F>`: Guava's `BloomFilter<T>` — a [`RawFilter`] plus the [`Funnel`] that
//! turns a `T` into hashed bytes.

#![forbid(unsafe_code)]

use std::fmt;
use std::io::{self, Read, Write};
use std::marker::PhantomData;

use crate::batch::BATCH;
use crate::error::{Error, ReadError};
use crate::funnel::{Funnel, Hash128};
use crate::raw::RawFilter;
use crate::strategy::Strategy;

/// A lock-free Bloom filter of `T`s, hashed through funnel `F`; `Sync`, so one filter may be
/// shared by reference (or `Arc`) between any number of threads that `put` and query at once.
pub struct BloomFilter<T: ?Sized, F> {
    raw: RawFilter,
    funnel: F,
    /// `fn(&T)`: the filter neither owns nor drops `T`s, and stays `Send + Sync` for any `T`.
    _item: PhantomData<fn(&T)>,
}

impl<T: ?Sized, F> fmt::Debug for BloomFilter<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BloomFilter")
            .field("bit_size", &self.raw.bit_size())
            .field("num_hash_functions", &self.raw.num_hash_functions())
            .field("strategy", &self.raw.strategy())
            .field("bit_count", &self.raw.bits().bit_count())
            .finish()
    }
}

impl<T: ?Sized, F: Funnel<T>> BloomFilter<T, F> {
    /// Guava's `BloomFilter.create(funnel, expectedInsertions, fpp)`.
    pub fn new(funnel: F, expected_insertions: u64, fpp: f64) -> Result<Self, Error> {
        Self::with_strategy(funnel, expected_insertions, fpp, Strategy::default())
    }

    /// Like [`new`](Self::new) with an explicit strategy (Guava's package-private overload).
    pub fn with_strategy(
        funnel: F,
        expected_insertions: u64,
        fpp: f64,
        strategy: Strategy,
    ) -> Result<Self, Error> {
        Ok(Self::from_raw(
            RawFilter::with_strategy(expected_insertions, fpp, strategy)?,
            funnel,
        ))
    }

    /// Wraps an untyped filter.
    pub fn from_raw(raw: RawFilter, funnel: F) -> Self {
        Self {
            raw,
            funnel,
            _item: PhantomData,
        }
    }

    /// The 128-bit hash this filter uses for `item`.
    #[inline]
    pub fn hash(&self, item: &T) -> Hash128 {
        self.funnel.hash(item)
    }

    /// Records `item`. Returns `true` if a bit changed, i.e. `item` was certainly not in the
    /// filter before; `false` if it might have been. Two threads putting the same new item at
    /// the same moment may both see `true` (as in Guava).
    #[inline]
    pub fn put(&self, item: &T) -> bool {
        self.raw.put_hash(self.funnel.hash(item))
    }

    /// `false` if `item` was certainly never put; `true` if it might have been.
    #[inline]
    pub fn might_contain(&self, item: &T) -> bool {
        self.raw.might_contain_hash(self.funnel.hash(item))
    }

    /// Puts every item, in order, and appends to `new` one answer per item: what
    /// [`put`](Self::put) would have returned had they been put one at a time. Faster than
    /// one at a time once the filter outgrows the caches, because the probes of
    /// [`BATCH`](crate::BATCH) items at once wait on memory together (see
    /// [`RawFilter::put_hashes`]). For callers with many keys at hand (a file of keys, a
    /// page's links); on a filter that fits in the caches it gains little (BENCHMARKS.md §1).
    pub fn put_batch<'a, I>(&self, items: I, new: &mut Vec<bool>)
    where
        I: IntoIterator<Item = &'a T>,
        T: 'a,
    {
        self.batched(items, new, RawFilter::put_hashes);
    }

    /// Queries every item and appends to `found` one answer per item, as
    /// [`might_contain`](Self::might_contain) would give it; batched like
    /// [`put_batch`](Self::put_batch).
    pub fn might_contain_batch<'a, I>(&self, items: I, found: &mut Vec<bool>)
    where
        I: IntoIterator<Item = &'a T>,
        T: 'a,
    {
        self.batched(items, found, RawFilter::might_contain_hashes);
    }

    /// Hashes `items` a batch at a time and runs `op` on each batch's hashes, appending its
    /// answers to `out`.
    fn batched<'a, I>(
        &self,
        items: I,
        out: &mut Vec<bool>,
        op: fn(&RawFilter, &[Hash128], &mut [bool]),
    ) where
        I: IntoIterator<Item = &'a T>,
        T: 'a,
    {
        // Several batches per call of `op`, which zeroes its scratch space once per call.
        const HASHES: usize = 16 * BATCH;
        let mut items = items.into_iter();
        let mut hashes = [Hash128::default(); HASHES];
        loop {
            let mut len = 0;
            for (slot, item) in hashes.iter_mut().zip(items.by_ref()) {
                *slot = self.funnel.hash(item);
                len += 1;
            }
            if len == 0 {
                return;
            }
            let start = out.len();
            out.resize(start + len, false);
            op(&self.raw, &hashes[..len], &mut out[start..]);
            if len < HASHES {
                return;
            }
        }
    }

    /// ORs `other` into `self` (Guava's `putAll`); an error if the shapes differ.
    pub fn put_all(&self, other: &Self) -> Result<(), Error>
    where
        F: PartialEq,
    {
        if self.funnel != other.funnel {
            return Err(Error::Incompatible("funnels differ".into()));
        }
        self.raw.put_all(&other.raw)
    }

    /// Guava's `isCompatible`: same bit size, hash count, strategy and funnel; not itself.
    pub fn is_compatible(&self, other: &Self) -> bool
    where
        F: PartialEq,
    {
        !std::ptr::eq(self, other)
            && self.funnel == other.funnel
            && self.raw.is_compatible(&other.raw)
    }

    /// A deep copy.
    pub fn copy(&self) -> Self
    where
        F: Clone,
    {
        Self::from_raw(self.raw.copy(), self.funnel.clone())
    }

    /// Reads a filter in Guava's format (`BloomFilter.readFrom(in, funnel)`).
    pub fn read_from<R: Read>(input: R, funnel: F) -> Result<Self, ReadError> {
        Ok(Self::from_raw(RawFilter::read_from(input)?, funnel))
    }

    /// Reads a filter that must fill `bytes` exactly.
    pub fn from_slice(bytes: &[u8], funnel: F) -> Result<Self, ReadError> {
        Ok(Self::from_raw(RawFilter::from_slice(bytes)?, funnel))
    }
}

impl<T: ?Sized, F> BloomFilter<T, F> {
    /// The untyped filter underneath.
    pub fn raw(&self) -> &RawFilter {
        &self.raw
    }

    /// The funnel.
    pub fn funnel(&self) -> &F {
        &self.funnel
    }

    /// Guava's `approximateElementCount`.
    pub fn approximate_element_count(&self) -> u64 {
        self.raw.approximate_element_count()
    }

    /// Guava's `expectedFpp`: the chance that `might_contain` errs for a new item, now.
    pub fn expected_fpp(&self) -> f64 {
        self.raw.expected_fpp()
    }

    /// Number of bits (Guava's `bitSize`, a multiple of 64).
    pub fn bit_size(&self) -> u64 {
        self.raw.bit_size()
    }

    /// Number of 1 bits.
    pub fn bit_count(&self) -> u64 {
        self.raw.bits().bit_count()
    }

    /// Number of hash functions.
    pub fn num_hash_functions(&self) -> u32 {
        self.raw.num_hash_functions()
    }

    /// The hashing strategy.
    pub fn strategy(&self) -> Strategy {
        self.raw.strategy()
    }

    /// Guava's `writeTo`.
    pub fn write_to<W: Write>(&self, out: W) -> io::Result<()> {
        self.raw.write_to(out)
    }

    /// The Guava-format bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.raw.serialized_len() as usize);
        self.raw
            .write_to(&mut out)
            .expect("writing to a Vec cannot fail");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::funnel::{LongFunnel, StringFunnel};

    #[test]
    fn put_reports_new_items_and_queries_agree() {
        let f = BloomFilter::new(StringFunnel, 1000, 0.01).unwrap();
        assert!(!f.might_contain("https://a.example/"));
        assert!(f.put("https://a.example/"));
        assert!(!f.put("https://a.example/"));
        assert!(f.might_contain("https://a.example/"));
        let owned = String::from("https://b.example/");
        f.put(&owned);
        assert!(f.might_contain(&owned));
        assert_eq!(f.approximate_element_count(), 2);
        assert_eq!(f.bit_count(), f.raw().bits().popcount());
    }

    #[test]
    fn compatibility_follows_guava() {
        let a = BloomFilter::new(LongFunnel, 100, 0.01).unwrap();
        let b = BloomFilter::new(LongFunnel, 100, 0.01).unwrap();
        assert!(a.is_compatible(&b));
        assert!(!a.is_compatible(&a));
        b.put(&5);
        a.put_all(&b).unwrap();
        assert!(a.might_contain(&5));
        let d = BloomFilter::new(LongFunnel, 10_000, 0.01).unwrap();
        assert!(a.put_all(&d).is_err());
        let e = a.copy();
        assert!(e.might_contain(&5));
        assert_eq!(e.to_bytes(), a.to_bytes());
    }
}
