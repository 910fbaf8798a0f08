//! `RawFilter`: the untyped core every filter in this crate shares — a [`BitArray`], a hash
//! count and a [`Strategy`], operating on already-computed [`Hash128`]s.
//!
//! Splitting hashing (the funnel, in the typed wrapper) from probing lets the scalable and
//! rotating variants hash an item once and probe several arrays with the same hash, and lets
//! callers that need a fingerprint anyway (the frontier's exact mode) reuse it.

use std::io::{self, Read, Write};

use crate::bits::{BitArray, MAX_WORDS};
use crate::error::{Error, ReadError};
use crate::fastmod::FastMod;
use crate::funnel::Hash128;
use crate::sizing;
use crate::strategy::Strategy;

/// Bytes of Guava's header: strategy ordinal, hash count, word count (big-endian i32).
const HEADER_LEN: usize = 6;

/// Words read per step when deserialising, so that a header claiming 2^31 words allocates
/// only as fast as real bytes arrive.
const READ_CHUNK_WORDS: usize = 1 << 16;

/// Hash functions the fast paths keep on the stack; more (or Guava's MITZ_32 strategy) take
/// the one-bit-at-a-time path.
const INLINE_PROBES: usize = 16;

/// Items whose probes the batch operations load together.
pub const BATCH: usize = 16;

/// Arrays from this size up are prefetched by the batch operations. Below it the lines are
/// near (in the L2, or in an L3 a few tens of cycles away), and a filter for 10^6 keys
/// (1.2 MB) ran 5–15% *slower* with the prefetches on a machine with 1 MiB of L2 per core,
/// and lost 5–7% on present keys with 512 KiB; at 2.4 MB they were even, from 4.8 MB on they
/// pay (BENCHMARKS.md §1).
const PREFETCH_MIN_BYTES: usize = 2 << 20;

// The batch operations keep one bit per item in a `u32`.
const _: () = assert!(BATCH <= 32);

/// The `alive` mask of a whole batch.
const FULL_BATCH: u32 = u32::MAX >> (32 - BATCH);

/// One item in flight in [`RawFilter::might_contain_pipelined`].
#[derive(Debug, Clone, Copy, Default)]
struct Flight {
    /// `h1 + i·h2` for the probe `i` whose line is on its way.
    combined: u64,
    /// `h2`.
    step: u64,
    /// The bit index of that probe.
    index: u64,
}

/// Batch `c` of `items`: the `c`-th run of [`BATCH`] items (the last may be shorter).
#[inline]
fn nth_batch<T>(items: &[T], c: usize) -> &[T] {
    &items[c * BATCH..items.len().min((c + 1) * BATCH)]
}

/// [`nth_batch`] of a slice being written.
#[inline]
fn nth_batch_mut<T>(items: &mut [T], c: usize) -> &mut [T] {
    let end = items.len().min((c + 1) * BATCH);
    &mut items[c * BATCH..end]
}

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

// `with_k!` has one arm per count the fast paths take.
const _: () = assert!(INLINE_PROBES == 16);

/// A Bloom filter without a funnel: bits, hash count and strategy.
#[derive(Debug)]
pub struct RawFilter {
    bits: BitArray,
    num_hashes: u32,
    strategy: Strategy,
    /// `% bit_size` without a division instruction; derived from `bits`.
    modulo: FastMod,
    /// Whether the batch operations prefetch: the array is at least [`PREFETCH_MIN_BYTES`].
    prefetch: bool,
    /// Whether the array fits in the processor's last-level cache, where batch queries of
    /// known keys go one batch at a time with all their lines prefetched.
    fits_in_cache: bool,
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
    fn fast_path(&self) -> bool {
        self.strategy == Strategy::Murmur128Mitz64 && self.num_hashes as usize <= INLINE_PROBES
    }

    /// The one-bit-at-a-time path: Guava's MITZ_32 strategy, or more hash functions than the
    /// fast path keeps on the stack.
    #[cold]
    fn put_hash_generic(&self, hash: Hash128) -> bool {
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

    /// Puts many items at once: `new[j]` becomes what [`put_hash`](Self::put_hash) of
    /// `hashes[j]` would have returned had the items been put one by one, in order.
    ///
    /// Once the filter outgrows the caches a `put` waits on `k` memory accesses, and a single
    /// `put` cannot overlap them with the next one: its locked `fetch_or`s order the memory
    /// operations around them. Here the probes of up to [`BATCH`] items are loaded together —
    /// `k · BATCH` independent loads whose misses overlap — before any of them is written, so
    /// a batch waits on memory about once instead of once per item. The second pass goes item
    /// by item in order, and `fetch_or`'s answer (not the first pass's snapshot) decides what
    /// flipped, so an item whose bits an earlier item of the same batch set reads as present,
    /// as it would one at a time.
    ///
    /// The batches are software-pipelined: right after item `j`'s writes, the probes of item
    /// `j` of the next batch are reduced, and on arrays of at least [`PREFETCH_MIN_BYTES`]
    /// their lines prefetched. A locked write takes tens of cycles (about 10 ns on the
    /// Zen 1 machine of BENCHMARKS.md §1), and what follows it in program order and needs no memory —
    /// the multiplications of the reductions, the prefetches — runs during that time instead
    /// of in a stage of its own, and each line has a whole pass of writes to arrive in. Loads
    /// cannot overlap the writes that way (a locked write orders them), which is why hashing
    /// stays out of this loop: it reads the key, and moving it in measured no faster
    /// (BENCHMARKS.md §1).
    ///
    /// # Panics
    /// If the slices differ in length (a caller bug).
    pub fn put_hashes(&self, hashes: &[Hash128], new: &mut [bool]) {
        assert_eq!(hashes.len(), new.len(), "one result per hash");
        if !self.fast_path() {
            for (hash, new) in hashes.iter().zip(new.iter_mut()) {
                *new = self.put_hash_generic(*hash);
            }
            return;
        }
        let batches = hashes.len().div_ceil(BATCH);
        let mut probes = [[[0u64; INLINE_PROBES]; BATCH]; 2];
        let mut clear = [0u32; BATCH];
        if batches > 0 {
            self.stage_batch(nth_batch(hashes, 0), &mut probes[0]);
        }
        for (c, new) in new.chunks_mut(BATCH).enumerate() {
            let [even, odd] = &mut probes;
            let (now, next) = if c % 2 == 0 { (even, odd) } else { (odd, even) };
            // Batch `c + 1`, whose items are never more than this batch's.
            let coming: &[Hash128] = if c + 1 < batches {
                nth_batch(hashes, c + 1)
            } else {
                &[]
            };
            self.load_batch(new.len(), now, &mut clear);
            let flipped = self.or_batch_locked(now, &clear, new, coming, next);
            if flipped != 0 {
                self.bits.add_count(flipped);
            }
        }
    }

    /// The write pass of [`put_hashes`](Self::put_hashes) for one batch with locked writes,
    /// staging item `j` of `coming` (the next batch, or nothing) into `next[j]` right after
    /// item `j`'s writes, where the work overlaps them. Returns the bits flipped.
    #[inline]
    fn or_batch_locked(
        &self,
        probes: &[[u64; INLINE_PROBES]; BATCH],
        clear: &[u32; BATCH],
        new: &mut [bool],
        coming: &[Hash128],
        next: &mut [[u64; INLINE_PROBES]; BATCH],
    ) -> u64 {
        let k = self.num_hashes as usize;
        let mut flipped_total = 0;
        for (j, new) in new.iter_mut().enumerate() {
            let flipped = self.bits.or_clear_uncounted(&probes[j][..k], clear[j]);
            *new = flipped != 0;
            flipped_total += flipped;
            if let Some(hash) = coming.get(j) {
                self.stage_item(*hash, &mut next[j]);
            }
        }
        flipped_total
    }

    /// Queries many items at once: `found[j]` becomes
    /// [`might_contain_hash`](Self::might_contain_hash) of `hashes[j]`.
    ///
    /// On arrays of at least [`PREFETCH_MIN_BYTES`] the probes are software-pipelined
    /// (see [`might_contain_pipelined`](Self::might_contain_pipelined)): each probe's line is
    /// prefetched a round before it is read, and an item stops after its first clear bit, so an
    /// absent item costs about the lines a single query would read (≈ 2, plus one prefetched
    /// line it never reads) and a present one its `k`, with many items' lines on their way at
    /// once. On smaller arrays, whose lines are near, up to [`BATCH`] items go in two stages
    /// whose loads overlap: the first probe of every item, then — reduced only now — the
    /// other `k - 1` probes of the items whose first bit was set. After a batch whose items
    /// all passed their first probe, either plan hands the rest of the call to a third, for
    /// known keys (see [`might_contain_prefetched`](Self::might_contain_prefetched)). (Loading
    /// all `k` probes of every item always made absent items about 20% slower than one at a
    /// time, 10^7 keys; the pipeline is 10–45% slower than the two stages on a 1.2 MB
    /// filter.)
    ///
    /// # Panics
    /// If the slices differ in length (a caller bug).
    pub fn might_contain_hashes(&self, hashes: &[Hash128], found: &mut [bool]) {
        assert_eq!(hashes.len(), found.len(), "one result per hash");
        if !self.fast_path() {
            for (hash, found) in hashes.iter().zip(found.iter_mut()) {
                *found = self.might_contain_hash(*hash);
            }
            return;
        }
        if self.prefetch {
            if !with_k!(self.might_contain_pipelined(hashes, found)) {
                with_k!(self.might_contain_prefetched(hashes, found))
            }
        } else {
            with_k!(self.might_contain_staged(hashes, found))
        }
    }

    /// The two stages of [`might_contain_hashes`](Self::might_contain_hashes) for arrays
    /// below [`PREFETCH_MIN_BYTES`], with `k` = [`Self::k`], until a batch passes whole.
    ///
    /// Stage two's loads wait for stage one's, since which items go on depends on the bits
    /// stage one read. That saves an absent item (half of them stop at the first probe)
    /// `k - 1` reductions and loads, and costs a present one the wait. So once *every* item
    /// of a batch has passed its first probe — a stream of known keys, such as the links a
    /// crawl finds again — the rest of the call goes by
    /// [`might_contain_prefetched`](Self::might_contain_prefetched), which reads all `k`
    /// probes of a batch while it reduces the next batch's. A batch of absent keys passes
    /// whole about once in 65,000 (each item with probability ≈ 1/2). Measured on 10^6 keys
    /// (BENCHMARKS.md §1): present keys 11–22% faster than two stages throughout, absent
    /// keys within 3%; mixes of 75–95% present 6–13% faster than reading only the next batch
    /// in one stage, mixes of up to half present even.
    #[inline(always)]
    fn might_contain_staged<const K: usize>(&self, hashes: &[Hash128], found: &mut [bool]) {
        for (c, (batch, answers)) in hashes
            .chunks(BATCH)
            .zip(found.chunks_mut(BATCH))
            .enumerate()
        {
            let (first, hit) = self.probe_in_two_stages::<K>(batch);
            for (j, found) in answers.iter_mut().enumerate() {
                *found = hit >> j & 1 != 0;
            }
            let rest = (c + 1) * BATCH;
            if first == FULL_BATCH && rest < hashes.len() {
                self.might_contain_prefetched_apart::<K>(&hashes[rest..], &mut found[rest..]);
                return;
            }
        }
    }

    /// [`might_contain_prefetched`](Self::might_contain_prefetched) as a function of its
    /// own, for the two stages: in line there, the small arrays' queries ran 2–3% slower,
    /// present and absent keys alike, where the pipeline runs 3–5% faster with it in line
    /// (BENCHMARKS.md §1).
    #[inline(never)]
    fn might_contain_prefetched_apart<const K: usize>(
        &self,
        hashes: &[Hash128],
        found: &mut [bool],
    ) {
        self.might_contain_prefetched::<K>(hashes, found);
    }

    /// Stage one, every item's first probe; stage two, the other `k - 1` probes of the items
    /// stage one found set, all loaded together. Returns the items that passed stage one and
    /// the items found (bit `j` for `hashes[j]`).
    #[inline(always)]
    fn probe_in_two_stages<const K: usize>(&self, hashes: &[Hash128]) -> (u32, u32) {
        let alive = self.first_probes(hashes);
        let mut hit = 0u32;
        let mut rest = alive;
        while rest != 0 {
            let j = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            hit |= u32::from(self.rest_set::<K>(hashes[j])) << j;
        }
        (alive, hit)
    }

    /// The items of a batch whose first probe finds its bit set (bit `j` for `hashes[j]`).
    #[inline(always)]
    fn first_probes(&self, hashes: &[Hash128]) -> u32 {
        let mut set = 0u32;
        for (j, hash) in hashes.iter().enumerate() {
            set |= u32::from(self.probe(hash.h1)) << j;
        }
        set
    }

    /// Whether probes `1..k` of an item all find their bits set (all loaded, no early exit).
    #[inline(always)]
    fn rest_set<const K: usize>(&self, hash: Hash128) -> bool {
        let mut combined = hash.h1;
        let mut all = true;
        for _ in 1..self.k::<K>() {
            combined = combined.wrapping_add(hash.h2);
            all &= self.probe(combined);
        }
        all
    }

    /// Whether the bit of the probe whose combined hash is `combined` is set: Guava's index
    /// `(combined & i64::MAX) % bit_size`, read without a bounds check.
    #[inline(always)]
    #[allow(unsafe_code)]
    fn probe(&self, combined: u64) -> bool {
        let index = self.modulo.reduce(combined);
        // SAFETY: `modulo` divides by `bits.bit_size()` (`from_parts`, the one constructor,
        // sets both, and a filter's array never changes size), and `reduce` returns the
        // exact remainder, so `index < bit_size()`. That `reduce` is exact is a theorem (see
        // `fastmod.rs`) and is tested against the hardware `%` for thousands of divisors.
        unsafe { self.bits.get_unchecked(index) }
    }

    /// Batch queries of known keys, with `k` = [`Self::k`]: while batch `c` reads all `k`
    /// probes of each of its items, the probes of batch `c + 1` are reduced and, on an array
    /// of at least [`PREFETCH_MIN_BYTES`], their lines prefetched — `put_hashes`' plan,
    /// without the writes. Nothing waits on a load but the answer.
    ///
    /// The other plans hand the rest of a call over to it once every item of a batch has
    /// passed its first probe: the two stages (small arrays) after any such batch, the
    /// pipeline after the first batch if the array fits in the last-level cache. They stop
    /// an absent item at its first clear bit, which this plan does not, but a present item
    /// reads all `k` lines either way, and here with less work per line. Measured
    /// (BENCHMARKS.md §1), present keys: against the two stages at 10^6 keys, +11–22%
    /// (prefetching there too was slower); against the pipeline, +25–37% at 10^7 (12 MB, in
    /// a quiet 32 MiB L3), +2–16% at 3·10^7 (36 MB), but −7–12% at 5·10^7 and 10^8, where
    /// the lines come from DRAM: hence the bound by the last-level cache's size.
    #[inline(always)]
    fn might_contain_prefetched<const K: usize>(&self, hashes: &[Hash128], found: &mut [bool]) {
        let k = self.k::<K>();
        let batches = hashes.len().div_ceil(BATCH);
        let mut probes = [[[0u64; INLINE_PROBES]; BATCH]; 2];
        self.stage_batch(nth_batch(hashes, 0), &mut probes[0]);
        for (c, found) in found.chunks_mut(BATCH).enumerate() {
            let [even, odd] = &mut probes;
            let (now, next) = if c % 2 == 0 { (even, odd) } else { (odd, even) };
            if c + 1 < batches {
                self.stage_batch(nth_batch(hashes, c + 1), next);
            }
            for (found, probes) in found.iter_mut().zip(now.iter()) {
                let mut all = true;
                for &index in probes.iter().take(k) {
                    all &= self.bits.get(index);
                }
                *found = all;
            }
        }
    }

    /// The query pipeline for big arrays, one probe deep per round: in round `r` batch `r`
    /// (of up to [`BATCH`] items) enters — its first probes computed and prefetched — and
    /// every batch `c` already in flight reads its probe `r - c - 1`, prefetched in the round
    /// before, for the items still alive, and prefetches their next probe. A batch leaves
    /// after its `k`-th probe, `k` rounds after it entered, so up to `k + 1` batches are in
    /// flight and a line has a whole round to arrive. Measured against the two stages (with
    /// their lines prefetched a batch ahead): 1.5–1.9× at 10^7 keys and 1.4–2.6× at 10^8
    /// (BENCHMARKS.md §1).
    ///
    /// The next probe is prefetched whether or not the bit just read was set: for absent
    /// items that bit is a coin toss, and branching on it cost more in mispredictions than
    /// the one line an item that just died prefetches in vain (absent items 1.2–1.6× faster
    /// without the branch, present ones 5–10% slower; BENCHMARKS.md §1).
    ///
    /// On an array that fits in the last-level cache it stops after reading batch 0's first
    /// probes if every item passed, and returns `false` (its answers are then incomplete):
    /// a stream of known keys goes faster by
    /// [`might_contain_prefetched`](Self::might_contain_prefetched). Otherwise it answers
    /// every item and returns `true`.
    #[inline(always)]
    fn might_contain_pipelined<const K: usize>(
        &self,
        hashes: &[Hash128],
        found: &mut [bool],
    ) -> bool {
        let k = self.k::<K>();
        let ring_len = k + 1;
        let mut ring = [[Flight::default(); BATCH]; INLINE_PROBES + 1];
        let mut alive = [0u32; INLINE_PROBES + 1];
        let batches = hashes.len().div_ceil(BATCH);
        for round in 0..batches + k {
            if round < batches {
                let slot = round % ring_len;
                let items = nth_batch(hashes, round);
                for (flight, hash) in ring[slot].iter_mut().zip(items) {
                    flight.combined = hash.h1;
                    flight.step = hash.h2;
                    flight.index = self.modulo.reduce(hash.h1);
                    self.bits.prefetch(flight.index);
                }
                alive[slot] = u32::MAX >> (32 - items.len());
            }
            for depth in 1..=k {
                if round < depth || round - depth >= batches {
                    continue; // that batch has not entered yet, or there is no such batch
                }
                let c = round - depth;
                let slot = c % ring_len;
                let mut rest = alive[slot];
                let mut still = 0u32;
                while rest != 0 {
                    let j = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    let flight = &mut ring[slot][j];
                    let set = self.bits.get(flight.index);
                    still |= u32::from(set) << j;
                    if depth < k {
                        flight.combined = flight.combined.wrapping_add(flight.step);
                        flight.index = self.modulo.reduce(flight.combined);
                        self.bits.prefetch(flight.index);
                    }
                }
                alive[slot] = still;
                if depth == k {
                    for (j, found) in nth_batch_mut(found, c).iter_mut().enumerate() {
                        *found = still >> j & 1 != 0;
                    }
                }
            }
            if round == 1 && self.fits_in_cache && alive[0] == FULL_BATCH && hashes.len() > BATCH {
                return false; // every item of batch 0 passed its first probe
            }
        }
        true
    }

    /// Every probe's bit index of one item, for Guava's MITZ_64 layout with
    /// `1 ≤ k ≤ INLINE_PROBES`.
    ///
    /// A loop that leaves in its middle: LLVM would otherwise vectorise it, emulating the
    /// 64-bit widening multiplication with SSE2's 32-bit one at several times the cost.
    #[inline(always)]
    fn item_indices(&self, hash: Hash128, probes: &mut [u64; INLINE_PROBES]) {
        let k = self.num_hashes as usize;
        let mut combined = hash.h1;
        let mut i = 0;
        loop {
            probes[i] = self.modulo.reduce(combined);
            i += 1;
            if i >= k {
                return;
            }
            combined = combined.wrapping_add(hash.h2);
        }
    }

    /// Readies one item for [`put_hashes`](Self::put_hashes)' load pass: its probes reduced
    /// and, on arrays of at least [`PREFETCH_MIN_BYTES`], their lines prefetched.
    #[inline(always)]
    fn stage_item(&self, hash: Hash128, probes: &mut [u64; INLINE_PROBES]) {
        self.item_indices(hash, probes);
        if self.prefetch {
            self.prefetch_item(probes);
        }
    }

    /// [`stage_item`](Self::stage_item) for every item of a batch.
    #[inline(always)]
    fn stage_batch(&self, batch: &[Hash128], probes: &mut [[u64; INLINE_PROBES]; BATCH]) {
        for (hash, probes) in batch.iter().zip(probes.iter_mut()) {
            self.stage_item(*hash, probes);
        }
    }

    /// Prefetches the `k` probes of one item whose indices are computed.
    #[inline(always)]
    fn prefetch_item(&self, probes: &[u64; INLINE_PROBES]) {
        for &index in probes.iter().take(self.num_hashes as usize) {
            self.bits.prefetch(index);
        }
    }

    /// The load pass of [`put_hashes`](Self::put_hashes): one load per probe of the first
    /// `len` items, bit `i` of `clear[j]` set where item `j`'s probe `i` found its bit clear.
    #[inline]
    fn load_batch(
        &self,
        len: usize,
        probes: &[[u64; INLINE_PROBES]; BATCH],
        clear: &mut [u32; BATCH],
    ) {
        let k = self.num_hashes as usize;
        for (probes, clear) in probes.iter().zip(clear.iter_mut()).take(len) {
            let mut bits = 0u32;
            for (i, &index) in probes.iter().enumerate().take(k) {
                bits |= u32::from(!self.bits.get(index)) << i;
            }
            *clear = bits;
        }
    }

    /// The hash count the fast paths loop over: `K` in a copy made for one count by
    /// [`with_k!`], the filter's own count where `K` is 0.
    #[inline(always)]
    fn k<const K: usize>(&self) -> usize {
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

    /// Number of bytes [`write_to`](Self::write_to) produces.
    pub fn serialized_len(&self) -> u64 {
        HEADER_LEN as u64 + self.bits.word_count() as u64 * 8
    }

    /// Guava's `writeTo`: ordinal byte, hash-count byte, big-endian word count, big-endian
    /// words. Concurrent `put`s while writing may or may not be included.
    pub fn write_to<W: Write>(&self, mut out: W) -> io::Result<()> {
        let mut header = [0u8; HEADER_LEN];
        header[0] = self.strategy.ordinal();
        header[1] = self.num_hashes as u8; // 1..=255, checked at construction
        header[2..].copy_from_slice(&(self.bits.word_count() as i32).to_be_bytes());
        out.write_all(&header)?;
        // Buffer a chunk of words at a time: one `write_all` per word is slow on raw files.
        let mut buf = Vec::with_capacity(8 * 4096.min(self.bits.word_count()));
        for chunk_start in (0..self.bits.word_count()).step_by(4096) {
            buf.clear();
            let end = (chunk_start + 4096).min(self.bits.word_count());
            for i in chunk_start..end {
                buf.extend_from_slice(&self.bits.word(i).to_be_bytes());
            }
            out.write_all(&buf)?;
        }
        Ok(())
    }

    /// Guava's `readFrom`: reads exactly one filter, leaving any following bytes unread.
    /// Hostile input yields an error; memory grows only with bytes actually read.
    pub fn read_from<R: Read>(mut input: R) -> Result<Self, ReadError> {
        let mut header = [0u8; HEADER_LEN];
        let got = read_full(&mut input, &mut header)?;
        if got < HEADER_LEN {
            return Err(ReadError::Truncated {
                expected: HEADER_LEN as u64,
                found: got as u64,
            });
        }
        let ordinal = header[0] as i8;
        let strategy = u8::try_from(ordinal)
            .ok()
            .and_then(Strategy::from_ordinal)
            .ok_or(ReadError::UnknownStrategy(ordinal))?;
        let num_hashes = u32::from(header[1]);
        if num_hashes == 0 {
            return Err(ReadError::ZeroHashFunctions);
        }
        let word_count = i32::from_be_bytes([header[2], header[3], header[4], header[5]]);
        if word_count <= 0 {
            return Err(ReadError::BadWordCount(word_count));
        }
        let word_count = word_count as usize;
        debug_assert!(word_count as u64 <= MAX_WORDS);
        let expected = HEADER_LEN as u64 + word_count as u64 * 8;

        let mut words: Vec<u64> = Vec::with_capacity(word_count.min(READ_CHUNK_WORDS));
        let mut chunk = vec![0u8; 8 * word_count.min(READ_CHUNK_WORDS)];
        while words.len() < word_count {
            let want = (word_count - words.len()).min(READ_CHUNK_WORDS) * 8;
            let got = read_full(&mut input, &mut chunk[..want])?;
            words.extend(
                chunk[..got - got % 8]
                    .chunks_exact(8)
                    .map(|b| u64::from_be_bytes(b.try_into().expect("8-byte chunk"))),
            );
            if got < want {
                return Err(ReadError::Truncated {
                    expected,
                    found: HEADER_LEN as u64 + (words.len() * 8 + got % 8) as u64,
                });
            }
        }
        let bits = BitArray::from_words(words).map_err(|_| ReadError::BadWordCount(0))?;
        Self::from_parts(bits, num_hashes, strategy).map_err(|_| ReadError::ZeroHashFunctions)
    }

    /// Reads a filter that must fill `bytes` exactly.
    pub fn from_slice(mut bytes: &[u8]) -> Result<Self, ReadError> {
        let filter = Self::read_from(&mut bytes)?;
        if !bytes.is_empty() {
            return Err(ReadError::TrailingBytes(bytes.len() as u64));
        }
        Ok(filter)
    }
}

/// Reads until `buf` is full or the input ends; returns how many bytes were read.
fn read_full<R: Read>(input: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` hashes drawn from `next`.
    fn random_hashes(next: &mut impl FnMut() -> u64, n: usize) -> Vec<Hash128> {
        (0..n)
            .map(|_| Hash128 {
                h1: next(),
                h2: next(),
            })
            .collect()
    }

    fn sample() -> RawFilter {
        let f = RawFilter::new(100, 0.01).unwrap();
        for i in 0..100u64 {
            f.put_hash(Hash128::of_bytes(&i.to_le_bytes()));
        }
        f
    }

    /// `put_hashes` answers, sets and counts as one `put_hash` per item does.
    #[test]
    fn batch_puts_answer_as_single_puts() {
        let mut next = crate::xorshift(0x2545_F491_4F6C_DD1D);
        // Dense: 700 items in 8,192 bits, with repeats inside a batch and across batches
        // (the later copy must read as present). Items share words, and later items of a
        // batch find bits that earlier items of the same batch set; no batch is all new.
        let mut dense = random_hashes(&mut next, 700);
        for j in (0..dense.len() - 40).step_by(7) {
            dense[j + 3] = dense[j];
            dense[j + 37] = dense[j];
        }
        // Sparse: 3,000 items in 2^17 bits, so that runs of batches are all new and go
        // straight through, and now and then a repeat inside a batch or from the one before
        // (which must read as present there too) sends the next batch back to the check.
        let mut sparse = random_hashes(&mut next, 3000);
        for j in (100..sparse.len()).step_by(97) {
            sparse[j] = sparse[j - 5 - j % 20];
        }
        for (bits, hashes) in [(8192, dense), (1 << 17, sparse)] {
            let single =
                RawFilter::from_parts(BitArray::with_bits(bits).unwrap(), 5, Strategy::default())
                    .unwrap();
            let expected: Vec<bool> = hashes.iter().map(|h| single.put_hash(*h)).collect();
            assert!(expected.iter().any(|n| !*n) && expected.iter().any(|n| *n));
            let batched =
                RawFilter::from_parts(BitArray::with_bits(bits).unwrap(), 5, Strategy::default())
                    .unwrap();
            let mut new = vec![false; hashes.len()];
            batched.put_hashes(&hashes, &mut new);
            assert_eq!(new, expected, "{bits} bits");
            assert_eq!(batched.bits().to_words(), single.bits().to_words());
            assert_eq!(batched.bits().bit_count(), single.bits().bit_count());
            assert_eq!(batched.bits().bit_count(), batched.bits().popcount());
        }
    }

    /// Both plans for batch queries on an array of 2 MiB or more — the pipeline, and for a
    /// call whose first batch all passes its first probe the prefetched one, taken only
    /// where the array fits in the last-level cache — answer as single queries do, whatever
    /// cache this machine has.
    #[test]
    fn big_array_query_plans_answer_as_single_queries() {
        let mut next = crate::xorshift(0x9E37_79B9_7F4A_7C15);
        let words: Vec<u64> = (0..(4 << 20) / 8).map(|_| next() & next()).collect();
        let hashes = random_hashes(&mut next, 400);
        for fits_in_cache in [false, true] {
            let mut filter = RawFilter::from_parts(
                BitArray::from_words(words.clone()).unwrap(),
                7,
                Strategy::default(),
            )
            .unwrap();
            assert!(filter.prefetch);
            filter.fits_in_cache = fits_in_cache;
            // Items 0..200 present; the rest, a quarter-full array's absent items (most stop
            // at the first probe, some later, some are false positives).
            for hash in &hashes[..200] {
                filter.put_hash(*hash);
            }
            let expected: Vec<bool> = hashes
                .iter()
                .map(|h| filter.might_contain_hash(*h))
                .collect();
            assert!(expected[..200].iter().all(|f| *f));
            assert!(expected[200..].iter().any(|f| !*f));
            // From 0 and 150 the first batch is all present; from 200, absent.
            for start in [0, 150, 200, 390] {
                let mut found = vec![false; hashes.len() - start];
                filter.might_contain_hashes(&hashes[start..], &mut found);
                assert_eq!(
                    found,
                    expected[start..],
                    "from {start}, fits {fits_in_cache}"
                );
            }
        }
    }

    #[test]
    fn round_trips_through_guava_format() {
        let f = sample();
        let mut bytes = Vec::new();
        f.write_to(&mut bytes).unwrap();
        assert_eq!(bytes.len() as u64, f.serialized_len());
        assert_eq!(bytes[0], 1, "MURMUR128_MITZ_64 ordinal");
        assert_eq!(bytes[1], 7, "k for 1%");
        assert_eq!(&bytes[2..6], &(f.bits().word_count() as i32).to_be_bytes());
        let g = RawFilter::from_slice(&bytes).unwrap();
        assert_eq!(g.bits().to_words(), f.bits().to_words());
        assert_eq!(g.bits().bit_count(), f.bits().bit_count());
        assert!(g.is_compatible(&f));
    }

    #[test]
    fn hostile_headers_are_errors_not_allocations() {
        // Claims 2^31-1 words (16 GiB) but carries 3 bytes of them.
        let bytes = [1u8, 7, 0x7f, 0xff, 0xff, 0xff, 1, 2, 3];
        match RawFilter::from_slice(&bytes) {
            Err(ReadError::Truncated { expected, found }) => {
                assert_eq!(expected, 6 + (i32::MAX as u64) * 8);
                assert_eq!(found, 9);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            RawFilter::from_slice(&[1, 7, 0xff, 0xff, 0xff, 0xff]),
            Err(ReadError::BadWordCount(-1))
        ));
        assert!(matches!(
            RawFilter::from_slice(&[1, 7, 0, 0, 0, 0]),
            Err(ReadError::BadWordCount(0))
        ));
        assert!(matches!(
            RawFilter::from_slice(&[1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(ReadError::ZeroHashFunctions)
        ));
        assert!(matches!(
            RawFilter::from_slice(&[2, 7, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(ReadError::UnknownStrategy(2))
        ));
        assert!(matches!(
            RawFilter::from_slice(&[0xff, 7, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(ReadError::UnknownStrategy(-1))
        ));
        assert!(matches!(
            RawFilter::from_slice(&[1, 7]),
            Err(ReadError::Truncated {
                expected: 6,
                found: 2
            })
        ));
        assert!(matches!(
            RawFilter::from_slice(&[1, 7, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 9]),
            Err(ReadError::TrailingBytes(1))
        ));
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
