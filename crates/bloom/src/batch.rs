//! The batch operations of [`RawFilter`]: `put_hashes` and `might_contain_hashes` answer
//! exactly as one call per item would, but overlap the memory accesses of many items — the
//! probes of [`BATCH`] items loaded together, software-pipelined with prefetches on arrays of
//! [`PREFETCH_MIN_BYTES`](crate::raw::PREFETCH_MIN_BYTES) and more. They serve `crawler bloom build` / `query` (1.5–2.5× one
//! call per key at 10^8 keys, BENCHMARKS.md §1); the crawl's frontier uses the single-key
//! calls. The prefetch itself is a hint of `hints.rs`, where the crate's `unsafe` lives.

#![forbid(unsafe_code)]

use crate::funnel::Hash128;
use crate::raw::{with_k, RawFilter, INLINE_PROBES};

/// Items whose probes the batch operations load together.
pub const BATCH: usize = 16;

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

impl RawFilter {
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
    /// `j` of the next batch are reduced, and on arrays of at least [`PREFETCH_MIN_BYTES`](crate::raw::PREFETCH_MIN_BYTES)
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
    /// On arrays of at least [`PREFETCH_MIN_BYTES`](crate::raw::PREFETCH_MIN_BYTES) the probes are software-pipelined
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
    /// below [`PREFETCH_MIN_BYTES`](crate::raw::PREFETCH_MIN_BYTES), with `k` = [`Self::k`], until a batch passes whole.
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

    /// Batch queries of known keys, with `k` = [`Self::k`]: while batch `c` reads all `k`
    /// probes of each of its items, the probes of batch `c + 1` are reduced and, on an array
    /// of at least [`PREFETCH_MIN_BYTES`](crate::raw::PREFETCH_MIN_BYTES), their lines prefetched — `put_hashes`' plan,
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
    /// and, on arrays of at least [`PREFETCH_MIN_BYTES`](crate::raw::PREFETCH_MIN_BYTES), their lines prefetched.
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bits::BitArray;
    use crate::raw::tests::random_hashes;
    use crate::strategy::Strategy;

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
}
