//! A lock-free Bloom filter over `AtomicU64` words that is Guava's `BloomFilter`, bit for bit.
//!
//! Every link the crawler discovers passes through a filter of this crate, from many fetch
//! workers at once, before it may enter the URL queue. The design follows Guava's
//! `BloomFilter` with `BloomFilterStrategies.LockFreeBitArray` so closely that filters move
//! between the two: a Java service can `BloomFilter.readFrom` what [`BloomFilter::write_to`]
//! wrote, and we query what it wrote. The correspondence, piece by piece:
//!
//! | Guava                                          | here                                         |
//! |------------------------------------------------|----------------------------------------------|
//! | `LockFreeBitArray` (`AtomicLongArray`, CAS)     | [`BitArray`] (`Box<[AtomicU64]>`, check-first `fetch_or`; `set_cas` for Guava's loop) |
//! | `LockFreeBitArray.bitCount` (`LongAddable`)     | a striped, cache-padded counter, exact once writers finish |
//! | `optimalNumOfBits`, `optimalNumOfHashFunctions` | [`optimal_num_of_bits`], [`optimal_num_of_hash_functions`] (Java's rounding and casts kept) |
//! | `MURMUR128_MITZ_64` / `MURMUR128_MITZ_32`       | [`Strategy`] (Murmur3 x64-128, seed 0, from the `mur3` crate) |
//! | `Funnel<T>`, `PrimitiveSink`, `Funnels.*`       | [`Funnel`], [`Sink`], [`StringFunnel`], [`UnencodedCharsFunnel`], [`ByteArrayFunnel`], [`IntegerFunnel`], [`LongFunnel`] |
//! | `put`, `mightContain`, `putAll`, `isCompatible`, `approximateElementCount`, `expectedFpp`, `copy` | the same names in snake case on [`BloomFilter`] |
//! | `writeTo` / `readFrom`                          | [`BloomFilter::write_to`] / [`BloomFilter::read_from`], byte-identical |
//!
//! Design decisions:
//! - **Check first, then set.** `put` loads each word before writing and skips bits that are
//!   already 1. Duplicates are the common case in a crawl, and a load leaves the cache line
//!   shared between cores where a read-modify-write would bounce it.
//! - **`put` may say "new" twice.** Two threads putting the same new item at the same moment
//!   can both flip some bit and both get `true` — exactly as in Guava. Callers that need
//!   exactly-once admission (the frontier) tolerate this as a rare duplicate fetch or
//!   deduplicate downstream; a filter never says "new" for an item put *before* the call
//!   started.
//! - **No false negatives, ever**, under any interleaving: bits are only ever set (clearing
//!   happens only in [`RotatingBloomFilter`] rotation and in [`CountingBloomFilter::remove`],
//!   both by design).
//! - **Batches for throughput.** [`BloomFilter::put_batch`] and
//!   [`BloomFilter::might_contain_batch`] answer exactly as one call per item would, but load
//!   the probes of [`BATCH`] items before writing any, so that once the filter outgrows the
//!   caches their memory accesses overlap instead of queueing behind each `put`'s locked
//!   writes; on arrays of 2 MiB or more they are also software-pipelined, prefetching the
//!   next batch's lines while the current one is read and set. Queries follow the stream:
//!   once every item of a batch passes its first probe (known keys), the rest of the call
//!   reads all `k` probes of a batch while the next batch's are computed, where otherwise
//!   each absent item stops at its first clear bit; on big arrays only if the array fits in
//!   the processor's last-level cache (read from sysfs). `put_batch` also reduces the
//!   next batch's probes while the current batch's locked writes wait, where a single `put`
//!   waits doing nothing. For callers with many keys at hand: `crawler bloom build` / `query`
//!   use them.
//! - **A copy per hash count.** Guava's index `((h1 + i·h2) & i64::MAX) % bit_size` is
//!   computed exactly with a precomputed reciprocal instead of a division, and the single-key
//!   and query loops are compiled once for each hash count from 1 to 16, so that they unroll
//!   (2–10% faster single calls, up to 8% for batch queries; BENCHMARKS.md §1).
//! - **Huge pages and prefetches, behind the `hints` feature.** With it, arrays of 2 MiB or
//!   more are advised onto transparent huge pages (Linux `madvise`), so that `k` random
//!   probes into a filter of hundreds of megabytes do not each miss the TLB too, and the
//!   batch operations prefetch the lines they will read. These two hints (`hints.rs`) are the
//!   crate's only `unsafe`; without the feature the crate is `forbid(unsafe_code)`, and every
//!   other module is with it. The single-key core the crawl's frontier uses (`raw.rs`,
//!   `bits.rs`, `filter.rs`, `format.rs`) has no `unsafe` either way. BENCHMARKS.md §1 has
//!   the measured gains. (A path that wrote `put_batch`'s batches inside Intel RTM
//!   transactions was removed: it helped on the one machine of nine that had RTM, which
//!   Intel has since disabled on most parts.)
//! - **Hostile bytes are errors.** Deserialisation validates the header and allocates only as
//!   fast as real bytes arrive, so a 6-byte file claiming 16 GiB of words costs nothing.
//! - **Sizing limits are Guava's**: at most 2^31-1 words (≈1.4·10^11 bits, 16 GiB) because
//!   the format stores a signed 32-bit word count; 1 to 255 hash functions (one byte).
//!
//! The source documents' variants are small layers on the same pieces:
//! [`CountingBloomFilter`] (removable items, 4-bit saturating counters),
//! [`ScalableBloomFilter`] (grows past its estimate while keeping its FPP below target) and
//! [`RotatingBloomFilter`] (periodic rebuild: keeps the last `G` generations).
//!
//! ```
//! use bloom::{BloomFilter, StringFunnel};
//!
//! let seen = BloomFilter::new(StringFunnel, 10_000_000, 0.01).unwrap();
//! assert!(seen.put("https://example.com/"));      // certainly new: enqueue it
//! assert!(!seen.put("https://example.com/"));     // seen before: skip it
//! let mut bytes = Vec::new();
//! seen.write_to(&mut bytes).unwrap();              // Guava's `writeTo` format
//! let again = BloomFilter::read_from(&bytes[..], StringFunnel).unwrap();
//! assert!(again.might_contain("https://example.com/"));
//! ```

// The only `unsafe` is the two hints of `hints.rs`, compiled with the `hints` feature.
#![cfg_attr(not(feature = "hints"), forbid(unsafe_code))]
#![cfg_attr(feature = "hints", deny(unsafe_code))]

mod batch;
mod bits;
mod counter;
mod counting;
mod error;
mod fastmod;
mod filter;
mod format;
mod funnel;
mod hints;
mod raw;
mod rotating;
mod scalable;
mod sizing;
mod strategy;
mod words;

pub use batch::BATCH;
pub use bits::{BitArray, MAX_WORDS};
pub use counter::StripedCounter;
pub use counting::CountingBloomFilter;
pub use error::{Error, ReadError};
pub use filter::BloomFilter;
pub use funnel::{
    ByteArrayFunnel, Funnel, Hash128, IntegerFunnel, LongFunnel, Sink, StringFunnel,
    UnencodedCharsFunnel,
};
pub use raw::RawFilter;
pub use rotating::RotatingBloomFilter;
pub use scalable::ScalableBloomFilter;
pub use sizing::{optimal_num_of_bits, optimal_num_of_hash_functions, shape_for};
pub use strategy::{Indices, Strategy};

/// A xorshift64 generator: reproducible pseudo-random words for the unit tests.
#[cfg(test)]
fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}
