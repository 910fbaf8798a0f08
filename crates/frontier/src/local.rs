//! `LocalFrontier`: the in-process frontier — canonicalise → scope → Bloom visited-set →
//! budgets → host-fair bounded queue with disk spill.
//!
//! The expensive, parallel part of `offer` (parsing, scope rules, the filter) runs without any
//! lock: the filter is lock-free and counters are striped. Only a URL the filter reports as
//! new takes the scheduler mutex, for a push that never blocks (memory full → disk). So
//! producers never wait on consumers and the crawl cannot deadlock when every worker is both.

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bloom::{ScalableBloomFilter, StringFunnel, StripedCounter};
use dashmap::DashMap;
use tokio::sync::Notify;
use tokio::time::Instant;
use url::Url;

use crate::canon::{CanonConfig, Canonicalizer};
use crate::entry::Entry;
use crate::scheduler::{Lease, Order, Outcome, Politeness, Scheduler, Wait};
use crate::scope::{OutOfScope, PatternError, Scope, ScopeConfig};
use crate::spill::Spill;
use crate::{Admission, Frontier, Stats};

/// Default number of URLs the visited-set filter is sized for before it grows.
pub const DEFAULT_EXPECTED_URLS: u64 = 10_000_000;
/// Default false-positive probability of the visited-set filter.
pub const DEFAULT_FPP: f64 = 0.01;
/// Default in-memory queue capacity (entries).
pub const DEFAULT_MEMORY_CAPACITY: usize = 100_000;
/// Default limit on redirect hops followed from one URL.
pub const DEFAULT_MAX_REDIRECTS: u8 = 5;

/// Everything a `LocalFrontier` is built from.
#[derive(Debug, Clone)]
pub struct FrontierConfig {
    /// Canonicalisation rules.
    pub canon: CanonConfig,
    /// Scope rules.
    pub scope: ScopeConfig,
    /// URLs the filter is sized for at `fpp`; past that it adds capacity (scalable filter).
    pub expected_urls: u64,
    /// Target false-positive probability of the visited set.
    pub fpp: f64,
    /// Most queued entries held in memory; the rest wait on disk.
    pub memory_capacity: usize,
    /// Directory for the disk spill (a temporary directory when `None`).
    pub spill_dir: Option<PathBuf>,
    /// Serving order within a host.
    pub order: Order,
    /// Most URLs admitted in total.
    pub max_pages: Option<u64>,
    /// Most URLs admitted per host.
    pub max_pages_per_host: Option<u64>,
    /// Most redirect hops followed from one URL.
    pub max_redirects: u8,
    /// Per-host delays and limits.
    pub politeness: Politeness,
}

impl Default for FrontierConfig {
    fn default() -> Self {
        Self {
            canon: CanonConfig::default(),
            scope: ScopeConfig::default(),
            expected_urls: DEFAULT_EXPECTED_URLS,
            fpp: DEFAULT_FPP,
            memory_capacity: DEFAULT_MEMORY_CAPACITY,
            spill_dir: None,
            order: Order::default(),
            max_pages: None,
            max_pages_per_host: None,
            max_redirects: DEFAULT_MAX_REDIRECTS,
            politeness: Politeness::default(),
        }
    }
}

/// Why a frontier could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Scope patterns that do not compile (all of them).
    #[error("{}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "))]
    Patterns(Vec<PatternError>),
    /// The filter parameters are invalid.
    #[error("visited-set filter: {0}")]
    Filter(#[from] bloom::Error),
    /// The spill directory cannot be used.
    #[error("spill directory: {0}")]
    Spill(#[from] std::io::Error),
}

/// Striped counters of `offer` results (offers run on every worker at once).
#[derive(Debug, Default)]
struct Counters {
    duplicate: StripedCounter,
    admitted: StripedCounter,
    out_of_scope: [StripedCounter; OutOfScope::ALL.len()],
}

/// The in-process frontier.
#[derive(Debug)]
pub struct LocalFrontier {
    canon: Canonicalizer,
    scope: Scope,
    filter: ScalableBloomFilter<str, StringFunnel>,
    sched: Mutex<Scheduler>,
    /// Wakes consumers waiting in `next` when a host becomes ready or the crawl ends.
    notify: Notify,
    counters: Counters,
    /// Admissions so far, for `max_pages` (exact, so one shared atomic).
    admitted_total: AtomicU64,
    /// Admissions per host, for `max_pages_per_host`.
    per_host: DashMap<Arc<str>, u64>,
    closed: AtomicBool,
    /// Serialises admissions of equal URLs (see `offer_hops`).
    admit_locks: Box<[Mutex<()>]>,
    cfg: FrontierConfig,
}

/// Lock stripes for admissions: enough that unrelated URLs rarely share one.
const ADMIT_STRIPES: usize = 256;

impl LocalFrontier {
    /// A frontier for a crawl starting at `seeds` (canonicalised; their hosts and domains
    /// define the host scope). The seeds are not offered: call [`offer`](Self::offer).
    pub fn new(cfg: FrontierConfig, seeds: &[&str]) -> Result<Self, BuildError> {
        let canon = Canonicalizer::new(cfg.canon.clone());
        let seed_urls: Vec<Url> = seeds
            .iter()
            .filter_map(|s| canon.canonicalize(s, None).ok())
            .collect();
        let scope = Scope::new(cfg.scope.clone(), &seed_urls).map_err(BuildError::Patterns)?;
        let filter = ScalableBloomFilter::new(StringFunnel, cfg.expected_urls, cfg.fpp)?;
        let spill = Spill::new(cfg.spill_dir.as_deref())?;
        let sched = Scheduler::new(
            cfg.memory_capacity,
            spill,
            cfg.order,
            cfg.politeness.clone(),
        );
        Ok(Self {
            canon,
            scope,
            filter,
            sched: Mutex::new(sched),
            notify: Notify::new(),
            counters: Counters::default(),
            admitted_total: AtomicU64::new(0),
            per_host: DashMap::new(),
            closed: AtomicBool::new(false),
            admit_locks: (0..ADMIT_STRIPES).map(|_| Mutex::new(())).collect(),
            cfg,
        })
    }

    fn sched(&self) -> MutexGuard<'_, Scheduler> {
        // A panic while holding the lock leaves consistent counters (every operation updates
        // them last), so a poisoned lock is still usable.
        self.sched.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Canonicalises, scope-checks and deduplicates `url` (absolute; resolve relative links
    /// first) found at link depth `depth` on `parent`; queues it if it is new.
    pub fn offer(&self, url: &str, depth: u32, parent: Option<&str>) -> Admission {
        self.offer_hops(url, depth, parent, 0)
    }

    /// [`offer`](Self::offer) for a redirect target reached after `hops` redirects.
    pub fn offer_hops(&self, url: &str, depth: u32, parent: Option<&str>, hops: u8) -> Admission {
        let reject = |reason: OutOfScope| {
            self.counters.out_of_scope[reason.index()].add(1);
            Admission::OutOfScope(reason)
        };
        let Ok(canonical) = self.canon.canonicalize(url, None) else {
            return reject(OutOfScope::Invalid);
        };
        if hops > self.cfg.max_redirects {
            return reject(OutOfScope::Redirects);
        }
        if let Err(reason) = self.scope.check(&canonical, depth) {
            return reject(reason);
        }
        // The filter is lock-free, and like Guava's two concurrent `put`s of one new URL may
        // both report "new". Admission must be exactly once, so a URL that looks new is put
        // under one of a few striped locks chosen by its hash: a concurrent offer of the same
        // URL waits, then finds it present. Duplicates — the common case — take no lock.
        let hash = self.filter.hash(canonical.as_str());
        if self.filter.might_contain_hash(hash) {
            self.counters.duplicate.add(1);
            return Admission::Duplicate;
        }
        let stripe = &self.admit_locks[(hash.h1 % ADMIT_STRIPES as u64) as usize];
        let admitted = {
            let _guard = stripe.lock().unwrap_or_else(|e| e.into_inner());
            self.filter.put_hash(hash)
        };
        if !admitted {
            self.counters.duplicate.add(1);
            return Admission::Duplicate;
        }
        // Budgets count admissions, so they are checked after the filter: a duplicate never
        // uses budget. A URL refused for budget stays in the filter (it stays refused).
        let host = host_key(&canonical).to_owned();
        let host_budgeted = match self.cfg.max_pages_per_host {
            Some(max) => {
                let mut n = self.per_host.entry(Arc::from(host.as_str())).or_insert(0);
                if *n >= max {
                    return reject(OutOfScope::HostBudget);
                }
                *n += 1;
                true
            }
            None => false,
        };
        if let Some(max) = self.cfg.max_pages {
            let within = self
                .admitted_total
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    (n < max).then_some(n + 1)
                })
                .is_ok();
            if !within {
                if host_budgeted {
                    if let Some(mut n) = self.per_host.get_mut(host.as_str()) {
                        *n -= 1;
                    }
                }
                return reject(OutOfScope::MaxPages);
            }
        }
        let mut entry = Entry::new(canonical.into(), depth, parent.map(str::to_owned));
        entry.hops = hops;
        self.counters.admitted.add(1);
        let wake = self.sched().push(&host, entry);
        if wake {
            self.notify.notify_waiters();
        }
        Admission::Admitted
    }

    /// The next URL to fetch, waiting until one's host is ready; `None` once nothing is
    /// queued and nothing is in flight (or the frontier is closed). Offer a page's links
    /// *before* completing its lease, or other workers may see the crawl as finished.
    pub async fn next(&self) -> Option<Lease> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.closed.load(Ordering::Acquire) {
                return None;
            }
            let wait = self.sched().next_ready(Instant::now());
            match wait {
                Ok(lease) => return Some(lease),
                Err(Wait::Finished) => {
                    self.notify.notify_waiters();
                    return None;
                }
                Err(Wait::Until(at)) => {
                    tokio::select! {
                        _ = &mut notified => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
                Err(Wait::Idle) => notified.await,
            }
        }
    }

    /// Gives a lease back with its outcome (politeness and retries follow from it).
    pub fn complete(&self, lease: Lease, outcome: Outcome) {
        let wake = self.sched().complete(lease, outcome, Instant::now());
        if wake {
            self.notify.notify_waiters();
        }
    }

    /// Applies a host's robots.txt `Crawl-delay` (host key as in [`Lease::host`]).
    pub fn set_crawl_delay(&self, host: &str, delay: Duration) {
        self.sched().set_crawl_delay(host, delay);
    }

    /// Stops handing out URLs: `next` returns `None` from now on (graceful shutdown).
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Whether nothing is queued and nothing is in flight.
    pub fn is_finished(&self) -> bool {
        let s = self.sched();
        s.queued() == 0 && s.counts().in_flight == 0
    }

    /// Counters, queue sizes and filter fill.
    pub fn stats(&self) -> Stats {
        let (q, capacity) = {
            let s = self.sched();
            (s.counts(), s.capacity())
        };
        let out_of_scope = OutOfScope::ALL
            .iter()
            .map(|r| (*r, self.counters.out_of_scope[r.index()].sum()))
            .filter(|(_, n)| *n > 0)
            .collect();
        let duplicates = self.counters.duplicate.sum();
        let admitted = self.counters.admitted.sum();
        let rejected: u64 = self
            .counters
            .out_of_scope
            .iter()
            .map(StripedCounter::sum)
            .sum();
        Stats {
            offered: duplicates + admitted + rejected,
            admitted,
            duplicates,
            out_of_scope,
            queued_memory: q.memory,
            queued_disk: q.disk,
            in_flight: q.in_flight,
            hosts: q.hosts,
            memory_capacity: capacity as u64,
            max_queued_memory: q.max_memory,
            spill_bytes: q.spill_bytes,
            spill_errors: q.spill_errors,
            filter_bits: self.filter.bit_size(),
            filter_bits_set: self.filter.bit_count(),
            filter_fpp: self.filter.expected_fpp(),
            filter_slices: self.filter.slice_count() as u64,
            filter_bytes: self.filter.heap_bytes() as u64,
        }
    }

    /// The canonicaliser (for callers that need the canonical form of a URL).
    pub fn canonicalizer(&self) -> &Canonicalizer {
        &self.canon
    }
}

/// The politeness key of a canonical URL: its authority without user info — `host`, or
/// `host:port` when the port is not the scheme's default (canonical URLs omit it).
pub fn host_key(url: &Url) -> &str {
    &url[url::Position::BeforeHost..url::Position::AfterPort]
}

impl Frontier for LocalFrontier {
    fn offer(
        &self,
        url: &str,
        depth: u32,
        parent: Option<&str>,
    ) -> impl Future<Output = Admission> + Send {
        std::future::ready(LocalFrontier::offer(self, url, depth, parent))
    }

    fn next(&self) -> impl Future<Output = Option<Lease>> + Send {
        LocalFrontier::next(self)
    }

    fn complete(&self, lease: Lease, outcome: Outcome) -> impl Future<Output = ()> + Send {
        LocalFrontier::complete(self, lease, outcome);
        std::future::ready(())
    }

    fn stats(&self) -> Stats {
        LocalFrontier::stats(self)
    }
}
