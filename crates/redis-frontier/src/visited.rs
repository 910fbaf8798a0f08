//! The shape of the shared visited set: the local filter's Guava layout (same murmur3 hash,
//! strategy, bit count and hash count for the same `expected_urls` and `fpp`), kept as one
//! Redis bitmap (at most 2^32 bits, 512 MiB), and the crawl's key prefix.

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
        let (bits, hashes) = shape_for(expected_urls, fpp)?;
        let bit_size = bits.div_ceil(64) * 64;
        if bit_size > 1 << 32 {
            return Err(RedisFrontierError::TooLarge { bits: bit_size });
        }
        Ok(Self {
            prefix: format!("crawl:{{{crawl_id}}}:"),
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
