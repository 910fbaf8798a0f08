//! The shape of the shared visited set: the local filter's Guava layout (same murmur3 hash,
//! strategy, bit count and hash count for the same `expected_urls` and `fpp`), kept as one
//! Redis bitmap (at most 2^32 bits, 512 MiB), and the crawl's key prefix.
//!
//! A crawl split into P partitions (`frontier.partitions`) has one such set per partition,
//! each under its own hash tag so a Redis Cluster spreads them over its masters: partition 0
//! keeps the crawl's prefix `crawl:{ID}:`, partition p ≥ 1 is `crawl:{ID p}:` or, where the
//! crawl's first process chose another tag to even out the masters (`crate::tags`),
//! `crawl:{ID p.n}:` (a space is never in a crawl id, so no other crawl's tag can be one of
//! these). A URL's bits live in
//! the partition of its queue key ([`partition_of`]), sized for a P-th of the crawl's URLs
//! with half again for uneven hosts.

use bloom::{shape_for, Funnel, Strategy, StringFunnel};

use crate::RedisFrontierError;

/// The shape of the shared visited set and where it lives.
#[derive(Debug, Clone)]
pub struct Visited {
    prefix: String,
    bit_size: u64,
    hashes: u32,
    strategy: Strategy,
}

impl Visited {
    /// The visited set of crawl `crawl_id`, sized as the local filter is for `expected_urls`
    /// at `fpp` (Guava's formulas; the bit count rounded up to whole 64-bit words).
    pub fn new(crawl_id: &str, expected_urls: u64, fpp: f64) -> Result<Self, RedisFrontierError> {
        Self::partition(crawl_id, 0, 1, expected_urls, fpp)
    }

    /// The visited set of partition `p` of `parts` (see the module header): with one
    /// partition, the same as [`Visited::new`].
    pub fn partition(
        crawl_id: &str,
        p: u32,
        parts: u32,
        expected_urls: u64,
        fpp: f64,
    ) -> Result<Self, RedisFrontierError> {
        Self::tagged(crawl_id, (p, 0), parts, expected_urls, fpp)
    }

    /// As [`Visited::partition`], partition `p` under its tag's suffix `n` (see the module
    /// header).
    pub fn tagged(
        crawl_id: &str,
        (p, n): (u32, u32),
        parts: u32,
        expected_urls: u64,
        fpp: f64,
    ) -> Result<Self, RedisFrontierError> {
        let expected = if parts > 1 {
            (expected_urls.saturating_mul(3) / 2).div_ceil(u64::from(parts))
        } else {
            expected_urls
        };
        let (bits, hashes) = shape_for(expected.max(1), fpp)?;
        let bit_size = bits.div_ceil(64) * 64;
        if bit_size > 1 << 32 {
            return Err(RedisFrontierError::TooLarge { bits: bit_size });
        }
        Ok(Self {
            prefix: partition_prefix(crawl_id, p, n),
            bit_size,
            hashes,
            strategy: Strategy::default(),
        })
    }

    /// The bitmap's key.
    pub fn bits_key(&self) -> String {
        format!("{}visited", self.prefix)
    }

    /// The prefix of every key of the crawl (`crawl:{ID}:`: one hash slot).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Bits in the filter.
    pub fn bit_size(&self) -> u64 {
        self.bit_size
    }

    /// Hash functions per URL.
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// The bit indices of `url` (as the visited set knows it: its credentials masked): the
    /// ones a local filter of the same shape sets.
    pub fn indices(&self, url: &str) -> impl Iterator<Item = u64> {
        let hash = StringFunnel.hash(&frontier::credentials::mask(url));
        self.strategy.indices(hash, self.hashes, self.bit_size)
    }
}

/// The key prefix of partition `p` of crawl `crawl_id` under its tag's suffix `n` (0: the
/// plain tag; see the module header).
pub fn partition_prefix(crawl_id: &str, p: u32, n: u32) -> String {
    match (p, n) {
        (0, _) => format!("crawl:{{{crawl_id}}}:"),
        (p, 0) => format!("crawl:{{{crawl_id} {p}}}:"),
        (p, n) => format!("crawl:{{{crawl_id} {p}.{n}}}:"),
    }
}

/// The partition of the queue `key` (a host, or a client's queue key) among `parts`: the low
/// 64 bits of its murmur3 x64-128 hash (Guava's `Hashing.murmur3_128().hashString(key,
/// UTF_8).asLong()`), unsigned, modulo `parts` — so a reader of another language routes the
/// same way.
pub fn partition_of(key: &str, parts: u32) -> u32 {
    if parts <= 1 {
        return 0;
    }
    (bloom::Hash128::of_bytes(key.as_bytes()).h1 % u64::from(parts)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_follow_the_guava_formula() {
        // Guava: Hashing.murmur3_128().hashString("", UTF_8).asLong() == 0, and
        // hashString("hello", UTF_8).asLong() == 0xcbd8a7b341bd9b02 (murmur3 x64-128 seed 0,
        // the low eight bytes little-endian), so "hello" is in partition 0xcbd8…02 mod P.
        assert_eq!(partition_of("", 7), 0);
        let h = 0xcbd8_a7b3_41bd_9b02_u64;
        for parts in [2u32, 3, 4, 6, 16] {
            assert_eq!(partition_of("hello", parts), (h % u64::from(parts)) as u32);
        }
        assert_eq!(partition_of("example.com", 1), 0);
    }

    #[test]
    fn partition_zero_keeps_the_crawls_prefix() {
        let one = Visited::new("c", 1000, 0.01).unwrap();
        let p0 = Visited::partition("c", 0, 1, 1000, 0.01).unwrap();
        assert_eq!((one.prefix(), one.bit_size()), (p0.prefix(), p0.bit_size()));
        let p2 = Visited::partition("c", 2, 4, 1000, 0.01).unwrap();
        assert_eq!(p2.prefix(), "crawl:{c 2}:");
        assert_eq!(p2.hashes(), one.hashes());
        // A quarter of the URLs and half again: 375 URLs' worth.
        let q = Visited::partition("q", 0, 1, 375, 0.01).unwrap();
        assert_eq!(p2.bit_size(), q.bit_size());
    }
}
