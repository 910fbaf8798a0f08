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
//! The interface is the [`Frontier`] trait (see its module for the design): the engine holds
//! an `Arc<dyn Frontier>`, so a Redis-backed frontier for several machines can replace
//! [`LocalFrontier`] without touching the fetchers, and `test_support::contract` is the one
//! test suite every implementation passes. `LocalFrontier` keeps:
//! - a **bounded** in-memory queue: at most `memory_capacity` entries; beyond that, admitted
//!   URLs wait in append-only spill files and come back in order (per host) as room frees,
//!   so memory is flat whatever the number of admitted URLs;
//! - **per-host queues and a ready-time heap**: `next` hands out a URL only when its host's
//!   delay (`max(delay, Crawl-delay, back-off)`) has passed and it has fewer than
//!   `max_per_host` fetches in flight; a host with a million URLs waits its turn like any
//!   other;
//! - **never-blocking producers**: `offer` only ever appends (memory or disk), so the crawl
//!   cannot deadlock when every worker is producer and consumer at once;
//! - **exact termination**: `next` ends exactly when nothing is queued (memory or disk) and
//!   nothing is in flight;
//! - **the page budget**: `max_pages` counts recorded completions and leases out, so no more
//!   than that many records are ever written.

#![forbid(unsafe_code)]

mod address;
mod api;
mod canon;
mod client_info;
pub mod credentials;
mod entry;
mod hosts;
mod lease;
mod listing;
mod local;
mod pace;
mod reschedule;
mod resume;
mod robots_share;
mod scheduler;
mod scope;
mod spill;
mod visit;

pub use address::AddressKey;
pub use api::{
    prepare_seeds, Admission, BoxFuture, End, Fenced, Frontier, FrontierError, Lease, Link, Next,
    Outcome, Recrawled, Stats,
};
pub use canon::{CanonConfig, Canonicalizer, Invalid, DEFAULT_MAX_URL_LEN};
pub use client_info::{ClientInfo, MAX_CLIENT_BYTES, MAX_KEY_BYTES};
pub use entry::{Entry, Via};
pub use hosts::{is_active, paginate, HostControls, HostInfo, HostPage, HostQuery, HostSort};
pub use listing::{Found, ListedUrl, Pager, UrlPage, UrlQuery};
pub use local::{
    fingerprint, host_key, queue_key, BuildError, Dedup, FrontierConfig, LocalFrontier,
    DEFAULT_EXPECTED_URLS, DEFAULT_FPP, DEFAULT_MAX_REDIRECTS, DEFAULT_MEMORY_CAPACITY,
};
pub use pace::{latency_term, DelayReason, PaceTerms};
pub use reschedule::reschedule;
pub use resume::{Journal, Resumable};
pub use robots_share::{RobotsShare, SharedRobots};
pub use scheduler::{HostBackoff, Order, Politeness, DEFAULT_DELAY, DEFAULT_MAX_PER_HOST};
pub use scope::{
    registrable_domain, HostScope, OutOfScope, PatternError, Scope, ScopeConfig,
    DEFAULT_MAX_PATH_SEGMENTS, DEFAULT_MAX_QUERY_PARAMS, DEFAULT_MAX_REPEATED_SEGMENTS,
};
pub use visit::{Visit, Visited};
