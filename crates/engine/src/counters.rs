//! The crawl's counters: what the workers, the recorder and the robots.txt gate count, and
//! what the reports and `/metrics` read. Each field hides its own synchronisation.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use crate::metrics::LatencyHistogram;

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) pages: AtomicU64,
    pub(crate) robots_disallowed: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) by_status: Mutex<BTreeMap<String, u64>>,
    /// Origins whose robots.txt could not be had, and why (at most [`MAX_LISTED`]).
    pub(crate) robots_unreachable: Mutex<BTreeMap<String, String>>,
    /// Origins not crawled for a robots.txt `Crawl-delay` (seconds) above
    /// `politeness.max_backoff_secs` (at most [`MAX_LISTED`]).
    pub(crate) crawl_delay_skipped: Mutex<BTreeMap<String, f64>>,
    /// Seeds (depth 0, no parent) that got a response.
    pub(crate) seeds_fetched: AtomicU64,
    /// Why seeds got none (at most [`MAX_LISTED`]).
    pub(crate) seed_errors: Mutex<Vec<String>>,
    /// Fetch durations (built-in and external fetchers).
    pub(crate) latency: LatencyHistogram,
    /// Records of earlier runs of a resumed crawl (from its state).
    pub(crate) pages_before: AtomicU64,
    /// The last error records, for the dashboard.
    pub(crate) recent_errors: crate::recent::RecentErrors,
    /// The recent rate.
    pub(crate) rate: crate::recent::RateMeter,
    /// robots.txt fetches that failed (unreachable, 5xx), by the frontier's host key: the
    /// hosts listing counts them among the host's errors.
    pub(crate) robots_failures: Mutex<std::collections::HashMap<String, u64>>,
    /// `[recrawl]`: refetches recorded that found the page changed, and unchanged.
    pub(crate) refetches_changed: AtomicU64,
    pub(crate) refetches_unchanged: AtomicU64,
    /// 304s to conditional requests, and the body bytes their last full responses had.
    pub(crate) not_modified: AtomicU64,
    pub(crate) not_modified_bytes_saved: AtomicU64,
}

impl Counters {
    /// Counts a recorded fetch under a recrawl schedule.
    pub(crate) fn count_refetch(&self, o: &crate::revisit::Observed) {
        use std::sync::atomic::Ordering::Relaxed;
        match o.changed {
            Some(true) => self.refetches_changed.fetch_add(1, Relaxed),
            Some(false) => self.refetches_unchanged.fetch_add(1, Relaxed),
            None => 0,
        };
        if o.not_modified {
            self.not_modified.fetch_add(1, Relaxed);
            self.not_modified_bytes_saved
                .fetch_add(o.bytes_saved, Relaxed);
        }
    }
}

/// Most entries kept in the summary's lists of unreachable hosts and seed errors.
pub(crate) const MAX_LISTED: usize = 100;
