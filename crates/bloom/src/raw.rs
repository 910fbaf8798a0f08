//! `RawFilter`: the untyped core every filter in this crate shares — a [`BitArray`], a hash
//! count and a [`Strategy`], operating on already-computed [`Hash128`]s.
//!
//! Splitting hashing (the funnel, in the typed wrapper) from probing lets the scalable and
//! rotating variants hash an item once and probe several arrays with the same hash, and lets
//! callers that need a fingerprint anyway (the frontier's exact mode) reuse it.

#![forbid(unsafe_code)]

use crate::bits::BitArray;
use crate::error::Error;
use crate::fastmod::FastMod;
use crate::funnel::Hash128;
use crate::sizing;
use crate::strategy::Strategy;

/// Arrays from this size up are prefetched by the batch operations. Below it the lines are
/// near (in the L2, or in an L3 a few tens of cycles away), and a filter for 10^6 keys
/// (1.2 MB) ran 5–15% *slower* with the prefetches on a machine with 1 MiB of L2 per core,
/// and lost 5–7% on present keys with 512 KiB; at 2.4 MB they were even, from 4.8 MB on they
/// pay (BENCHMARKS.md §1).
pub(crate) const PREFETCH_MIN_BYTES: usize = 2 << 20;
/// Hash functions the fast paths keep on the stack; more (or Guava's MITZ_32 strategy) take
/// the one-bit-at-a-time path.
pub(crate) const INLINE_PROBES: usize = 16;

/// Calls `$self.$op::<K>(args)` with `K` equal to the filter's hash count, for counts
/// `1..=16` ([`INLINE_PROBES`]), and with `K = 0` (the count read at run time) above that.
///
/// Each count gets its own copy of the single-key and query loops: with `k` a constant the
/// compiler unrolls them and keeps the pipelined query's ring arithmetic (`% (k + 1)`) off the
/// divider. Measured at 10^6 and 10^7 keys: one call per key 2–10% faster, the batch queries
/// up to 8% (BENCHMARKS.md §1). `put_hashes`, whose time goes to its locked writes, gained
/// nothing and keeps one copy.
macro_rules! with_k {
    ($self:ident.$op:ident($($arg:expr),*)) => {
        match $self.num_hashes {
            1 => $self.$op::<1>($($arg),*),
            2 => $self.$op::<2>($($arg),*),
            3 => $self.$op::<3>($($arg),*),
            4 => $self.$op::<4>($($arg),*),
            5 => $self.$op::<5>($($arg),*),
            6 => $self.$op::<6>($($arg),*),
            7 => $self.$op::<7>($($arg),*),
            8 => $self.$op::<8>($($arg),*),
            9 => $self.$op::<9>($($arg),*),
            10 => $self.$op::<10>($($arg),*),
            11 => $self.$op::<11>($($arg),*),
            12 => $self.$op::<12>($($arg),*),
            13 => $self.$op::<13>($($arg),*),
            14 => $self.$op::<14>($($arg),*),
            15 => $self.$op::<15>($($arg),*),
            16 => $self.$op::<16>($($arg),*),
            _ => $self.$op::<0>($($arg),*),
        }
    };
}

pub(crate) use with_k;

// `with_k!` has one arm per count the fast paths take.
const _: () = assert!(INLINE_PROBES == 16);

/// A Bloom filter without a funnel: bits, hash count and strategy.
#[derive(Debug)]
pub struct RawFilter {
    pub(crate) bits: BitArray,
    pub(crate) num_hashes: u32,
    pub(crate) strategy: Strategy,
    /// `% bit_size` without a division instruction; derived from `bits`.
    pub(crate) modulo: FastMod,
    /// Whether the batch operations prefetch: the array is at least
    /// [`PREFETCH_MIN_BYTES`](PREFETCH_MIN_BYTES).
    pub(crate) prefetch: bool,
    /// Whether the array fits in the processor's last-level cache, where batch queries of
    /// known keys go one batch at a time with all their lines prefetched.
    pub(crate) fits_in_cache: bool,
}

impl RawFilter {
    /// Sized as Guava's `BloomFilter.create(_, expected_insertions, fpp)` sizes it.
    pub fn new(expected_insertions: u64, fpp: f64) -> Result<Self, Error> {
        Self::with_strategy(expected_insertions, fpp, Strategy::default())
    }

    /// Like [`new`](Self::new) with an explicit strategy.
    pub fn with_strategy(
        expected_insertions: u64,
        fpp: f64,
        strategy: Strategy,
    ) -> Result<Self, Error> {
        let (bits, num_hashes) = sizing::shape_for(expected_insertions, fpp)?;
        Self::from_parts(BitArray::with_bits(bits)?, num_hashes, strategy)
    }

    /// Assembles a filter from a bit array and a hash count in `1..=255`.
    pub fn from_parts(bits: BitArray, num_hashes: u32, strategy: Strategy) -> Result<Self, Error> {
        if !(1..=255).contains(&num_hashes) {
            return Err(Error::InvalidHashFunctionCount(u64::from(num_hashes)));
        }
        Ok(Self {
            modulo: FastMod::new(bits.bit_size()),
            prefetch: bits.word_count() * 8 >= PREFETCH_MIN_BYTES,
            fits_in_cache: bits.word_count() * 8 <= crate::words::last_level_cache_bytes(),
            bits,
            num_hashes,
            strategy,
        })
    }

    /// Sets the item's bits; `true` if any bit changed (the item was certainly new).
    ///
    /// Two passes: the first only *loads* the `k` words — independent loads whose cache misses
    /// overlap — remembering each index and which bits were clear, and returns at once for an
    /// item already present (no write at all); the second `fetch_or`s just the clear bits, whose
    /// lines are now cached, and adds all flips to the count in one step. (A locked `fetch_or`
    /// orders the memory operations around it, so interleaving loads and `fetch_or`s would
    /// serialise the misses.)
    #[inline]
    pub fn put_hash(&self, hash: Hash128) -> bool {
        if !self.fast_path() {
            return self.put_hash_generic(hash);
        }
        with_k!(self.put_hash_k(hash))
    }

    /// [`put_hash`](Self::put_hash) on the fast path with `k` = [`Self::k`].
    #[inline(always)]
    fn put_hash_k<const K: usize>(&self, hash: Hash128) -> bool {
        let k = self.k::<K>();
        let mut indices = [0u64; INLINE_PROBES];
        let mut clear = 0u32; // bit i set: probe i found its bit clear
        let mut combined = hash.h1;
        for (i, slot) in indices.iter_mut().enumerate().take(k) {
            let index = self.modulo.reduce(combined);
            *slot = index;
            clear |= u32::from(!self.bits.get(index)) << i;
            combined = combined.wrapping_add(hash.h2);
        }
        if clear == 0 {
            return false;
        }
        let flipped = self.bits.or_clear_uncounted(&indices[..k], clear);
        if flipped == 0 {
            return false; // other threads set the clear bits between the passes
        }
        self.bits.add_count(flipped);
        true
    }

    /// Whether the stack-array paths apply: Guava's MITZ_64 layout (the default) with at most
    /// [`INLINE_PROBES`] hash functions.
    #[inline]
    pub(crate) fn fast_path(&self) -> bool {
        self.strategy == Strategy::Murmur128Mitz64 && self.num_hashes as usize <= INLINE_PROBES
    }

    /// The one-bit-at-a-time path: Guava's MITZ_32 strategy, or more hash functions than the
    /// fast path keeps on the stack.
    #[cold]
    pub(crate) fn put_hash_generic(&self, hash: Hash128) -> bool {
        let mut changed = false;
        for index in self
            .strategy
            .indices(hash, self.num_hashes, self.bits.bit_size())
        {
            changed |= self.bits.set(index);
        }
        changed
    }

    /// `false` if the item was certainly never put; `true` if it might have been.
    #[inline]
    pub fn might_contain_hash(&self, hash: Hash128) -> bool {
        if self.strategy != Strategy::Murmur128Mitz64 {
            return self
                .strategy
                .indices(hash, self.num_hashes, self.bits.bit_size())
                .all(|i| self.bits.get(i));
        }
        with_k!(self.might_contain_k(hash))
    }

    /// [`might_contain_hash`](Self::might_contain_hash) for Guava's MITZ_64 layout with `k` =
    /// [`Self::k`].
    #[inline(always)]
    fn might_contain_k<const K: usize>(&self, hash: Hash128) -> bool {
        let mut combined = hash.h1;
        for _ in 0..self.k::<K>() {
            if !self.probe(combined) {
                return false;
            }
            combined = combined.wrapping_add(hash.h2);
        }
        true
    }
    /// Whether the bit of the probe whose combined hash is `combined` is set: Guava's index
    /// `(combined & i64::MAX) % bit_size`. (An unchecked read here measured 3–10% faster
    /// batch queries at 10^6 keys; it was given up for a core without `unsafe`.)
    #[inline(always)]
    pub(crate) fn probe(&self, combined: u64) -> bool {
        self.bits.get(self.modulo.reduce(combined))
    }

    /// The hash count the fast paths loop over: `K` in a copy made for one count by
    /// [`with_k!`], the filter's own count where `K` is 0.
    #[inline(always)]
    pub(crate) fn k<const K: usize>(&self) -> usize {
        if K == 0 {
            self.num_hashes as usize
        } else {
            K
        }
    }

    /// The bit array.
    pub fn bits(&self) -> &BitArray {
        &self.bits
    }

    /// Number of bits (a multiple of 64).
    pub fn bit_size(&self) -> u64 {
        self.bits.bit_size()
    }

    /// Number of hash functions `k`.
    pub fn num_hash_functions(&self) -> u32 {
        self.num_hashes
    }

    /// The hashing strategy.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Guava's `approximateElementCount`: `-m/k · ln(1 - bitCount/m)`, rounded half up.
    pub fn approximate_element_count(&self) -> u64 {
        let bit_size = self.bits.bit_size() as f64;
        let fraction = self.bits.bit_count() as f64 / bit_size;
        let estimate = -(-fraction).ln_1p() * bit_size / f64::from(self.num_hashes);
        // DoubleMath.roundToLong(x, HALF_UP); the estimate is finite and ≥ 0 except for a
        // completely full filter, where Guava would throw and we saturate instead.
        let floor = estimate.floor();
        let rounded = if estimate - floor >= 0.5 {
            floor + 1.0
        } else {
            floor
        };
        rounded as u64
    }

    /// Guava's `expectedFpp`: `(bitCount / bitSize) ^ k`, with `pow` as Java computes it (not
    /// repeated multiplication, which differs in the last bit).
    pub fn expected_fpp(&self) -> f64 {
        (self.bits.bit_count() as f64 / self.bits.bit_size() as f64)
            .powf(f64::from(self.num_hashes))
    }

    /// Guava's `isCompatible`, minus the funnel (the typed wrapper checks that).
    pub fn is_compatible(&self, other: &RawFilter) -> bool {
        self.num_hashes == other.num_hashes
            && self.bit_size() == other.bit_size()
            && self.strategy == other.strategy
    }

    /// Why `other` cannot be merged into `self`, if it cannot.
    pub(crate) fn incompatibility(&self, other: &RawFilter) -> Option<String> {
        if std::ptr::eq(self, other) {
            return Some("cannot combine a filter with itself".into());
        }
        if self.num_hashes != other.num_hashes {
            return Some(format!(
                "hash function counts differ ({} vs {})",
                self.num_hashes, other.num_hashes
            ));
        }
        if self.bit_size() != other.bit_size() {
            return Some(format!(
                "bit sizes differ ({} vs {})",
                self.bit_size(),
                other.bit_size()
            ));
        }
        if self.strategy != other.strategy {
            return Some(format!(
                "strategies differ ({} vs {})",
                self.strategy.name(),
                other.strategy.name()
            ));
        }
        None
    }

    /// ORs `other` into `self` (Guava's `putAll`).
    pub fn put_all(&self, other: &RawFilter) -> Result<(), Error> {
        if let Some(reason) = self.incompatibility(other) {
            return Err(Error::Incompatible(reason));
        }
        self.bits.union(&other.bits);
        Ok(())
    }

    /// A deep copy (Guava's `copy`).
    pub fn copy(&self) -> Self {
        let bits = BitArray::from_words(self.bits.to_words())
            .expect("a live filter has a valid word count");
        Self::from_parts(bits, self.num_hashes, self.strategy)
            .expect("a live filter has a valid hash count")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `n` hashes drawn from `next`.
    pub(crate) fn random_hashes(next: &mut impl FnMut() -> u64, n: usize) -> Vec<Hash128> {
        (0..n)
            .map(|_| Hash128 {
                h1: next(),
                h2: next(),
            })
            .collect()
    }

    pub(crate) fn sample() -> RawFilter {
        let f = RawFilter::new(100, 0.01).unwrap();
        for i in 0..100u64 {
            f.put_hash(Hash128::of_bytes(&i.to_le_bytes()));
        }
        f
    }

    #[test]
    fn put_all_refuses_mismatched_shapes() {
        let a = sample();
        let b = RawFilter::new(1000, 0.01).unwrap();
        assert!(matches!(a.put_all(&b), Err(Error::Incompatible(_))));
        assert!(matches!(a.put_all(&a), Err(Error::Incompatible(_))));
        let c = RawFilter::with_strategy(100, 0.01, Strategy::Murmur128Mitz32).unwrap();
        assert!(matches!(a.put_all(&c), Err(Error::Incompatible(_))));
        let d = RawFilter::new(100, 0.01).unwrap();
        d.put_all(&a).unwrap();
        assert_eq!(d.bits().to_words(), a.bits().to_words());
        assert_eq!(d.bits().bit_count(), a.bits().popcount());
    }
}
