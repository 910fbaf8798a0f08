//! A crawl frontier several crawler processes share through Redis (issue 23, in progress).
//!
//! Landed so far: the visited set and its admission. The visited set is the local filter's
//! Guava-layout Bloom filter — the same bit indices for the same URL, from the same
//! murmur3 hash and strategy — kept as a Redis bitmap; a page's links are admitted by one
//! server-side script that tests-and-sets their bits and queues the new ones, so two processes
//! can never both admit a URL (scrapy-redis' Bloom forks ran GETBIT and SETBIT as separate
//! round trips). The script only sets bits and appends, so running it again after a dropped
//! connection admits nothing twice.
//!
//! The client is `redis` (redis-rs) with its connection manager rather than `fred`: about as
//! fast to build here (65 crates, 33 s cold), and a command in flight when the connection
//! drops comes back as an error to handle, where fred resends it.

mod admission;
pub mod server;

pub use admission::{Admit, Visited};

/// What can go wrong talking to Redis.
#[derive(Debug, thiserror::Error)]
pub enum RedisFrontierError {
    /// A command or script failed (connection lost, server error).
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// The filter's shape could not be made from `expected_urls` and `fpp`.
    #[error("visited set: {0}")]
    Shape(#[from] bloom::Error),
    /// A filter larger than one Redis string can hold (2^32 bits).
    #[error("visited set of {bits} bits is larger than one Redis bitmap (2^32 bits)")]
    TooLarge {
        /// Bits the filter would need.
        bits: u64,
    },
}
