//! The crawl frontier: normalise → scope → Bloom visited-set → bounded, host-fair queue that
//! spills to disk.
//!
//! Fetch workers are both the consumers of this queue and the producers of new links. The
//! visited-set check sits between the producers and the queue, as the source documents
//! describe: a discovered link is canonicalised ([`Canonicalizer`]), checked against the
//! scope ([`Scope`]), then `put` into the lock-free Bloom filter of `crates/bloom` (a
//! scalable one, so a crawl that outgrows `expected_urls` keeps its false-positive rate);
//! only a URL the filter reports as new is queued.
//!
//! The interface is the small [`Frontier`] trait — `offer`, `next`, `complete`, `stats` — so a
//! Redis-backed frontier for several machines can replace [`LocalFrontier`] without touching
//! the fetchers. `LocalFrontier` keeps:
//! - a **bounded** in-memory queue: at most `memory_capacity` entries; beyond that, admitted
//!   URLs wait in append-only spill files and come back in order (per host) as room frees,
//!   so memory is flat whatever the number of admitted URLs;
//! - **per-host queues and a ready-time heap**: `next` hands out a URL only when its host's
//!   delay (`max(delay, Crawl-delay, back-off)`) has passed and it has fewer than
//!   `max_per_host` fetches in flight; a host with a million URLs waits its turn like any
//!   other;
//! - **never-blocking producers**: `offer` only ever appends (memory or disk), so the crawl
//!   cannot deadlock when every worker is producer and consumer at once;
//! - **exact termination**: `next` returns `None` exactly when nothing is queued (memory or
//!   disk) and nothing is in flight.

#![forbid(unsafe_code)]

use std::future::Future;

mod canon;
mod entry;
mod local;
mod scheduler;
mod scope;
mod spill;

pub use canon::{CanonConfig, Canonicalizer, Invalid, DEFAULT_MAX_URL_LEN};
pub use entry::Entry;
pub use local::{
    fingerprint, host_key, BuildError, Dedup, FrontierConfig, Journal, LocalFrontier,
    DEFAULT_EXPECTED_URLS, DEFAULT_FPP, DEFAULT_MAX_REDIRECTS, DEFAULT_MEMORY_CAPACITY,
};
pub use scheduler::{
    HostBackoff, Lease, Order, Outcome, Politeness, DEFAULT_DELAY, DEFAULT_MAX_PER_HOST,
};
pub use scope::{
    registrable_domain, HostScope, OutOfScope, PatternError, Scope, ScopeConfig,
    DEFAULT_MAX_PATH_SEGMENTS, DEFAULT_MAX_QUERY_PARAMS, DEFAULT_MAX_REPEATED_SEGMENTS,
};

/// What `offer` did with a URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// New and in scope: queued.
    Admitted,
    /// The visited set has (probably) seen it.
    Duplicate,
    /// Not admitted, and why.
    OutOfScope(OutOfScope),
}

/// Counters, queue sizes and filter fill of a frontier.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// URLs offered.
    pub offered: u64,
    /// URLs queued.
    pub admitted: u64,
    /// URLs the visited set had seen.
    pub duplicates: u64,
    /// URLs refused, by reason (only reasons that occurred).
    pub out_of_scope: Vec<(OutOfScope, u64)>,
    /// Queued entries in memory.
    pub queued_memory: u64,
    /// Queued entries on disk.
    pub queued_disk: u64,
    /// Leases not yet completed.
    pub in_flight: u64,
    /// Hosts seen.
    pub hosts: u64,
    /// The in-memory capacity.
    pub memory_capacity: u64,
    /// Most entries ever held in memory at once.
    pub max_queued_memory: u64,
    /// Bytes of spill on disk.
    pub spill_bytes: u64,
    /// Spill writes or reads that failed (entries then stayed in memory).
    pub spill_errors: u64,
    /// Bits of the visited-set filter.
    pub filter_bits: u64,
    /// Bits set.
    pub filter_bits_set: u64,
    /// The filter's current false-positive probability.
    pub filter_fpp: f64,
    /// Slices of the scalable filter (more than 1: the crawl outgrew `expected_urls`).
    pub filter_slices: u64,
    /// Heap bytes of the filter.
    pub filter_bytes: u64,
}

impl Stats {
    /// Entries queued in memory and on disk.
    pub fn queued(&self) -> u64 {
        self.queued_memory + self.queued_disk
    }
}

/// The frontier interface the fetch workers use. Implementations: [`LocalFrontier`]
/// (in-process); a Redis-backed one can implement the same four calls.
pub trait Frontier: Send + Sync {
    /// Offers an absolute URL found at `depth` on `parent`.
    fn offer(
        &self,
        url: &str,
        depth: u32,
        parent: Option<&str>,
    ) -> impl Future<Output = Admission> + Send;
    /// The next URL to fetch; `None` when the crawl is finished.
    fn next(&self) -> impl Future<Output = Option<Lease>> + Send;
    /// Acknowledges a leased URL. Offer its links first.
    fn complete(&self, lease: Lease, outcome: Outcome) -> impl Future<Output = ()> + Send;
    /// Current counters.
    fn stats(&self) -> Stats;
}
