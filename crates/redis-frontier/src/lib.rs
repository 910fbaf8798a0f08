//! A crawl frontier several crawler processes, on several machines, share through one Redis.
//!
//! [`RedisFrontier`] implements the engine's `Frontier` trait, so a crawl switches to it with
//! one setting (`frontier.backend = "redis"`) and passes the same contract suite as the local
//! frontier. The design answers what goes wrong with scrapy-redis:
//! - **No URL lost when a process dies**: a URL handed out is a *lease* (scored by expiry,
//!   named by its holder, renewed by a heartbeat); an expired lease goes back to the front
//!   of its host's queue, and a completion is idempotent — a late one after the URL was
//!   handed to another process changes nothing.
//! - **No record twice from a paused process**: a page's record is written only after the
//!   frontier confirms its lease is still held (the fence, answered with the page's offer),
//!   and the lease is then pinned until it is completed.
//! - **Faults that change nothing**: leases expire by the crawl's clock, which stands still
//!   while no process reaches Redis (an outage takes no live lease); a full Redis refuses
//!   each script whole (each script's first write is one Redis refuses when out of memory),
//!   and the crawl waits for room.
//! - **Compact, atomic visited set**: the local filter's Guava-layout Bloom filter — the same
//!   bit indices for the same URL — as a Redis bitmap (≈1.2 bytes per URL at 1%, against
//!   ~100 for a SET of SHA1 hex strings); a page's links are tested, set and queued by one
//!   server-side script, so no two processes admit the same URL. `dedup = "exact"` confirms
//!   a "maybe seen" in a set of 16-byte fingerprints.
//! - **Politeness across processes**: per-host queues, a sorted set of hosts by next
//!   allowed fetch time, in-flight counts, `Crawl-delay` and back-off all live in Redis and
//!   change only in scripts, with the server's clock.
//!
//! The client is `redis` (redis-rs) with its connection manager rather than `fred`: about as
//! fast to build here (65 crates, 33 s cold), and a command in flight when the connection
//! drops comes back as an error the engine retries with back-off. Every script is safe to
//! run again after such an error: an admission that did run finds its URLs seen, a lease
//! whose reply was lost expires and is served again, a completion is idempotent.

mod conn;
mod crawls;
mod errors;
mod export;
mod frontier;
mod hosts;
mod rules;
mod scripts;
mod tags;
mod visited;

pub use crate::frontier::{RedisConfig, RedisFrontier};
pub use crawls::{create_crawl, delete_crawl, join_crawl, named_crawl_id, named_crawls, Created};
pub use export::{export_guava, export_partitions, merge_partitions};
pub use rules::agree_rules;
pub use visited::{partition_of, partition_prefix, Visited};

/// The most partitions a crawl may have (a lease token is its id × partitions + partition).
pub const MAX_PARTITIONS: u32 = 1024;

/// What can go wrong opening a shared frontier.
#[derive(Debug, thiserror::Error)]
pub enum RedisFrontierError {
    /// Redis could not be reached, or refused a command.
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
    /// The frontier's rules are invalid (scope patterns).
    #[error("frontier: {0}")]
    Frontier(#[from] ::frontier::BuildError),
    /// A crawl id that cannot be a key prefix.
    #[error("crawl id `{0}`: use 1 to 128 printable ASCII characters without braces")]
    CrawlId(String),
    /// The crawl's visited set in Redis has another shape than these settings make.
    #[error(
        "the crawl's visited set in Redis has {} bits and {} hashes, these settings make {} and {}: \
         give every process of the crawl the same frontier.expected_urls and frontier.fpp",
        stored.0, stored.1, ours.0, ours.1
    )]
    ShapeMismatch {
        /// Bits and hashes recorded by the crawl's first process.
        stored: (u64, u32),
        /// Bits and hashes of this process' settings.
        ours: (u64, u32),
    },
    /// The crawl's queue entries are of a newer format than this build reads (a newer
    /// crawler's processes share it): joining, this process would drop them as undecodable.
    #[error(
        "the crawl's queue entries in Redis are of format {stored}, written by a newer \
         crawler; this one reads up to format {ours}: run the same version in every process"
    )]
    NewerEntries {
        /// The entry format the crawl records.
        stored: u64,
        /// The newest this build reads.
        ours: u64,
    },
    /// No crawl of that id in this Redis (no visited set recorded).
    #[error("no crawl `{0}` in this Redis")]
    NoCrawl(String),
    /// A Redis older than the scripts need.
    #[error("Redis {0} is too old: the shared frontier needs Redis 6.2 or later")]
    Version(String),
    /// The URL names the other kind of server: a `redis://` URL reaching a Redis Cluster
    /// node, or a `redis+cluster://` URL reaching a plain Redis (the settings' fault).
    #[error("{0}")]
    WrongKind(String),
    /// The crawl was made with another number of partitions than these settings give.
    #[error(
        "the crawl in Redis has {stored} partitions, these settings give {ours}: give every \
         process of the crawl the same frontier.partitions (0: the crawl's own)"
    )]
    Partitions {
        /// Partitions the crawl's first process recorded.
        stored: u32,
        /// This process' setting.
        ours: u32,
    },
    /// Settings this crawl's shape does not serve yet.
    #[error("{0}")]
    Unsupported(String),
    /// Redis has no room for the crawl: its `maxmemory` is reached, or would be by the
    /// visited set the crawl needs before it queues a URL.
    #[error("Redis has no room for this crawl: {0}")]
    Full(String),
}

impl RedisFrontierError {
    /// Whether Redis could not be reached, refused this process or has no room: something
    /// outside the crawl's settings (exit 69), rather than the settings (exit 64).
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            RedisFrontierError::Redis(_) | RedisFrontierError::Full(_)
        )
    }
}
