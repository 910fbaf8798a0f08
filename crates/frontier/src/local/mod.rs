//! `LocalFrontier`: the in-process frontier — canonicalise → scope → Bloom visited-set →
//! budgets → host-fair bounded queue with disk spill.
//!
//! The expensive, parallel part of `offer` (parsing, scope rules, the filter) runs without any
//! lock: the filter is lock-free and counters are striped. Only a URL the filter reports as
//! new takes the scheduler mutex, for a push that never blocks (memory full → disk). So
//! producers never wait on consumers and the crawl cannot deadlock when every worker is both.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use bloom::{Hash128, ScalableBloomFilter, StringFunnel, StripedCounter};
use dashmap::DashMap;
use tokio::sync::Notify;
use tokio::time::Instant;
use url::Url;

use crate::api::{Admission, End, Lease, Link, Next, Outcome};
use crate::canon::{CanonConfig, Canonicalizer, Invalid};
use crate::entry::{Entry, Via};
use crate::resume::{Journal, Resumable};
use crate::scheduler::{Order, Politeness, Scheduler, Wait};
use crate::scope::{OutOfScope, PatternError, Scope, ScopeConfig};
use crate::spill::Spill;

mod keys;
mod resume;
mod service;
mod sleeping;
mod stats;
mod urls;

use crate::reschedule::reschedule;
pub use keys::{host_key, queue_key};
use sleeping::{unix_now, Sleeping};

/// Default number of URLs the visited-set filter is sized for before it grows.
pub const DEFAULT_EXPECTED_URLS: u64 = 10_000_000;
/// Default false-positive probability of the visited-set filter.
pub const DEFAULT_FPP: f64 = 0.01;
/// Default in-memory queue capacity (entries).
pub const DEFAULT_MEMORY_CAPACITY: usize = 100_000;
/// Default limit on redirect hops followed from one URL.
pub const DEFAULT_MAX_REDIRECTS: u8 = 5;

/// How the visited set decides that a URL was seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Dedup {
    /// The Bloom filter alone: a new URL is skipped with probability ≈ `fpp`.
    #[default]
    Bloom,
    /// The filter answers "definitely new" on its own; a "maybe seen" is confirmed against
    /// the [`Journal`]'s exact set, so a false positive never drops a URL.
    Exact,
}

/// The 128-bit fingerprint of a canonical URL: the Murmur3 hash the visited-set filter uses
/// (Guava's `stringFunnel(UTF_8)`) of the URL as the visited set knows it — its credentials
/// masked ([`crate::credentials`]) —, so a filter can be rebuilt from fingerprints alone.
pub fn fingerprint(canonical_url: &str) -> u128 {
    hash_fp(Hash128::of_bytes(
        crate::credentials::mask(canonical_url).as_bytes(),
    ))
}

fn hash_fp(h: Hash128) -> u128 {
    h.as_u128()
}

fn fp_hash(fp: u128) -> Hash128 {
    Hash128 {
        h1: fp as u64,
        h2: (fp >> 64) as u64,
    }
}

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
    /// Most pages recorded (completions with [`Outcome::is_recorded`], earlier runs included):
    /// past that `next` ends with [`End::Budget`]. Leases out count against it, so the crawl
    /// never writes more records than this.
    pub max_pages: Option<u64>,
    /// Most URLs admitted per host.
    pub max_pages_per_host: Option<u64>,
    /// Most redirect hops followed from one URL.
    pub max_redirects: u8,
    /// Per-host delays and limits.
    pub politeness: Politeness,
    /// Bloom-only or exact (needs a [`Journal`]) deduplication.
    pub dedup: Dedup,
    /// A service's frontier: when nothing is queued and nothing is in flight, `next` waits
    /// for new seeds instead of ending the crawl.
    pub keep_open: bool,
    /// The recrawl schedule: under anything but [`recrawl::Schedule::None`] a fetched URL is
    /// not done but due again, and `next` waits for it instead of ending the crawl.
    pub recrawl: recrawl::Policy,
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
            dedup: Dedup::default(),
            keep_open: false,
            recrawl: recrawl::Policy::default(),
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
    /// Written only when seeds widen it (rarely); read by every offer.
    scope: RwLock<Scope>,
    filter: ScalableBloomFilter<str, StringFunnel>,
    sched: Mutex<Scheduler>,
    /// Fetched URLs waiting to be due again (`recrawl`); locked after `sched` when both are.
    sleeping: Mutex<Sleeping>,
    /// Wakes consumers waiting in `next` when a host becomes ready or the crawl ends.
    notify: Notify,
    counters: Counters,
    /// Recorded completions, earlier runs included, for `max_pages` (changed and checked
    /// under the scheduler lock, so a lease is never handed out past the budget).
    pages: AtomicU64,
    /// Admissions per host, for `max_pages_per_host` and the host listing.
    per_host: DashMap<Arc<str>, u64>,
    /// Admission budgets an operator set for single hosts (they replace
    /// `max_pages_per_host`).
    host_budgets: DashMap<Arc<str>, u64>,
    /// Recrawl intervals an operator set for single hosts, seconds (they replace
    /// `recrawl.interval_secs` from each URL's next completion).
    host_recrawl: DashMap<Arc<str>, u32>,
    closed: AtomicBool,
    /// Serialises admissions of equal URLs (see `offer_hops`).
    admit_locks: Box<[Mutex<()>]>,
    /// Durable record of admissions and exact visited set, if any.
    journal: Option<Arc<dyn Journal>>,
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
            scope: RwLock::new(scope),
            filter,
            sched: Mutex::new(sched),
            sleeping: Mutex::new(Sleeping::default()),
            notify: Notify::new(),
            counters: Counters::default(),
            pages: AtomicU64::new(0),
            per_host: DashMap::new(),
            host_budgets: DashMap::new(),
            host_recrawl: DashMap::new(),
            closed: AtomicBool::new(false),
            admit_locks: (0..ADMIT_STRIPES).map(|_| Mutex::new(())).collect(),
            journal: None,
            cfg,
        })
    }

    /// Records every admission in `journal` (and, with [`Dedup::Exact`], confirms "maybe
    /// seen" answers against it). Set it before the first offer.
    pub fn with_journal(mut self, journal: Arc<dyn Journal>) -> Self {
        self.set_journal(journal);
        self
    }

    fn sched(&self) -> MutexGuard<'_, Scheduler> {
        // A panic while holding the lock leaves consistent counters (every operation updates
        // them last), so a poisoned lock is still usable.
        self.sched.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn sleeping(&self) -> MutexGuard<'_, Sleeping> {
        self.sleeping.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Canonicalises, scope-checks and deduplicates `url` (absolute; resolve relative links
    /// first) found at link depth `depth` on `parent`; queues it if it is new.
    pub fn offer(&self, url: &str, depth: u32, parent: Option<&str>) -> Admission {
        self.offer_hops(url, depth, parent, 0)
    }

    /// [`offer`](Self::offer) for a redirect target reached after `hops` redirects.
    pub fn offer_hops(&self, url: &str, depth: u32, parent: Option<&str>, hops: u8) -> Admission {
        let mut found = Found::plain(depth, parent);
        if hops > 0 {
            found.hops = hops;
            found.via = Via::Redirect;
        }
        self.admit(self.canon.canonicalize(url, None), found, parent, None)
    }

    /// [`offer`](Self::offer) for a link already parsed (and resolved against its page): it is
    /// not parsed again.
    pub fn offer_url(&self, url: Url, depth: u32, parent: Option<&str>) -> Admission {
        self.admit(
            self.canon.canonicalize_url(url),
            Found::plain(depth, parent),
            parent,
            None,
        )
    }

    /// Offers the links of one page (the batch form of [`offer_url`](Self::offer_url)).
    pub fn offer_links(&self, parent: Option<&str>, links: Vec<Link>) -> Vec<Admission> {
        self.offer_holding(parent, links, &mut |_| false)
    }

    /// [`offer_links`](Self::offer_links), except that an admitted entry for which `hold`
    /// returns `true` is journaled but not queued ([`Resumable::offer_links_holding`]).
    fn offer_holding(
        &self,
        parent: Option<&str>,
        links: Vec<Link>,
        hold: &mut dyn FnMut(&Entry) -> bool,
    ) -> Vec<Admission> {
        links
            .into_iter()
            .map(|l| {
                let found = Found {
                    depth: l.depth,
                    hops: l.hops,
                    via: l.via,
                    sitemap: l.sitemap,
                    lastmod: l.lastmod,
                    due: l.due,
                    client: l.client,
                };
                self.admit(
                    self.canon.canonicalize_url(l.url),
                    found,
                    parent,
                    Some(&mut *hold),
                )
            })
            .collect()
    }

    fn admit(
        &self,
        canonical: Result<Url, Invalid>,
        found: Found,
        parent: Option<&str>,
        hold: Option<&mut dyn FnMut(&Entry) -> bool>,
    ) -> Admission {
        let Found {
            depth,
            hops,
            via,
            sitemap,
            lastmod,
            due,
            client,
        } = found;
        let reject = |reason: OutOfScope| {
            self.counters.out_of_scope[reason.index()].add(1);
            Admission::OutOfScope(reason)
        };
        let Ok(canonical) = canonical else {
            return reject(OutOfScope::Invalid);
        };
        if hops > self.cfg.max_redirects {
            return reject(OutOfScope::Redirects);
        }
        let in_scope = self
            .scope
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .check(&canonical, depth);
        if let Err(reason) = in_scope {
            return reject(reason);
        }
        // The filter is lock-free, and like Guava's two concurrent `put`s of one new URL may
        // both report "new". Admission must be exactly once, so a URL that looks new is put
        // under one of a few striped locks chosen by its hash: a concurrent offer of the same
        // URL waits, then finds it present. Duplicates — the common case — take no lock.
        let fp = fingerprint(canonical.as_str());
        let hash = fp_hash(fp);
        let exact = self.cfg.dedup == Dedup::Exact && self.journal.is_some();
        let seen_exactly = |fp| self.journal.as_ref().is_some_and(|j| j.contains(fp));
        if self.filter.might_contain_hash(hash) && (!exact || seen_exactly(fp)) {
            self.counters.duplicate.add(1);
            return Admission::Duplicate;
        }
        let stripe = &self.admit_locks[(hash.h1 % ADMIT_STRIPES as u64) as usize];
        // Held until the admission is journaled: with exact dedup, a concurrent offer of the
        // same URL must find it in the journal.
        let _guard = stripe.lock().unwrap_or_else(|e| e.into_inner());
        if self.filter.might_contain_hash(hash) && (!exact || seen_exactly(fp)) {
            self.counters.duplicate.add(1);
            return Admission::Duplicate;
        }
        // Budgets count admissions, so they are checked after the filter's test: a duplicate
        // never uses budget. But before its bits are set: a URL refused for its host's
        // budget stays unseen, and is admitted if the budget is raised and it comes again.
        let host = queue_key(client.as_deref(), &canonical).to_owned();
        {
            let budget = match self.host_budgets.get(host.as_str()) {
                Some(b) => Some(*b),
                None => self.cfg.max_pages_per_host,
            };
            let mut n = self.per_host.entry(Arc::from(host.as_str())).or_insert(0);
            if budget.is_some_and(|max| *n >= max) {
                return reject(OutOfScope::HostBudget);
            }
            *n += 1;
        }
        self.filter.put_hash(hash);
        let client = client.and_then(|c| c.settle(canonical.as_str(), host_key(&canonical)));
        let mut entry = Entry::new(canonical.into(), depth, parent.map(str::to_owned));
        entry.hops = hops;
        entry.via = via;
        entry.sitemap = sitemap;
        entry.lastmod = lastmod;
        entry.client = client;
        entry.created = Entry::now_secs();
        if let Some(due) = due {
            // Asleep from the start, as a fetched URL waits for its next visit (journaled
            // with it, so a resumed crawl keeps the date).
            entry.visit = Some(Box::new(crate::visit::Visit {
                due,
                history: recrawl::History::default(),
            }));
        }
        if let Some(journal) = &self.journal {
            journal.admitted(fp, &host, &mut entry);
        }
        drop(_guard);
        self.counters.admitted.add(1);
        if hold.is_some_and(|hold| hold(&entry)) {
            return Admission::Admitted;
        }
        if due.is_some() {
            self.sched().know_host(&host);
            self.sleeping().insert(&host, &entry, fp);
            self.notify.notify_waiters();
            return Admission::Admitted;
        }
        let wake = self.sched().push(&host, entry);
        if wake {
            self.notify.notify_waiters();
        }
        Admission::Admitted
    }

    /// The next URL to fetch, waiting until one's host is ready; `None` once nothing is
    /// queued and nothing is in flight, the page budget is spent, or the frontier is closed.
    /// Offer a page's links *before* completing its lease, or other workers may see the crawl
    /// as finished.
    pub async fn next(&self) -> Option<Lease> {
        match self.next_or_end().await {
            Next::Lease(lease) => Some(lease),
            Next::End(_) => None,
        }
    }

    /// [`next`](Self::next), saying why it ends.
    pub async fn next_or_end(&self) -> Next {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.closed.load(Ordering::Acquire) {
                return Next::End(End::Closed);
            }
            let (wait, due) = {
                let mut sched = self.sched();
                let due = self.promote_due(&mut sched);
                let wait = match self.budget_left(&sched) {
                    Some(0) if sched.counts().in_flight == 0 => Err(Wait::Budget),
                    Some(0) => Err(Wait::Idle),
                    _ => sched.next_ready(Instant::now()),
                };
                (wait, due)
            };
            // A URL sleeping until a due time: wait for it too (the crawl is not finished).
            let wake_at = |at: Option<Instant>| match (at, due) {
                (Some(a), Some(d)) => Some(a.min(d)),
                (a, d) => a.or(d),
            };
            let until = match wait {
                Ok(lease) => return Next::Lease(lease),
                Err(Wait::Budget) => {
                    self.notify.notify_waiters();
                    return Next::End(End::Budget);
                }
                Err(Wait::Finished) if due.is_none() && !self.cfg.keep_open => {
                    self.notify.notify_waiters();
                    return Next::End(End::Finished);
                }
                Err(Wait::Finished | Wait::Idle) => wake_at(None),
                Err(Wait::Until(at)) => wake_at(Some(at)),
            };
            match until {
                Some(at) => {
                    tokio::select! {
                        _ = &mut notified => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Leases that may still be handed out under `max_pages` (leases out count as pages),
    /// `None` without a budget.
    fn budget_left(&self, sched: &Scheduler) -> Option<u64> {
        let max = self.cfg.max_pages?;
        let used = self.pages.load(Ordering::Relaxed) + sched.counts().in_flight;
        Some(max.saturating_sub(used))
    }

    /// Gives a lease back with its outcome (politeness and retries follow from it; a final
    /// outcome marks the URL done in the journal, and a recorded one counts as a page).
    pub fn complete(&self, lease: Lease, outcome: Outcome) {
        let id = lease.entry().id;
        let finished = outcome.is_final();
        let recorded = outcome.is_recorded();
        // Under a recrawl schedule, or with a client's date, a finished URL is not done: it
        // sleeps until due again. (A one-shot crawl copies nothing here.)
        let scheduling = self.cfg.recrawl.schedule != recrawl::Schedule::None;
        let again = (finished && (scheduling || lease.due_at().is_some()))
            .then(|| {
                let mut entry = lease.entry().clone();
                let fp = fingerprint(&entry.url);
                let policy = &self.cfg.recrawl;
                let host_secs = self.host_recrawl.get(lease.host()).map(|s| *s);
                let (now, seen) = (unix_now(), lease.visited());
                let again = reschedule(policy, &mut entry, seen, &outcome, now, fp, host_secs);
                let dated = lease.apply_due_at(&mut entry, now);
                (again || dated).then(|| (lease.host().to_owned(), entry, fp))
            })
            .flatten();
        let wake = {
            let mut sched = self.sched();
            let was_full = self.budget_left(&sched) == Some(0);
            let (wake, changed) = sched.complete(lease, outcome, Instant::now());
            if recorded {
                self.pages.fetch_add(1, Ordering::Relaxed);
            }
            // Consumers wait on the page budget only while it is full: wake them when this
            // completion freed a lease (not recorded) or spent the budget with nothing out.
            let budget_changed =
                was_full && (self.budget_left(&sched) != Some(0) || sched.counts().in_flight == 0);
            if let Some(journal) = &self.journal {
                if let Some(change) = changed {
                    journal.host_backoff(&change);
                }
                match &again {
                    Some((_, entry, _)) => journal.rescheduled(id, recorded, entry),
                    None if finished => journal.done(id, recorded),
                    None => {}
                }
            }
            if let Some((host, entry, fp)) = again {
                self.sleeping().insert(&host, &entry, fp);
            }
            wake || budget_changed
        };
        if wake {
            self.notify.notify_waiters();
        }
    }

    /// Applies a host's robots.txt `Crawl-delay` (host key as in [`Lease::host`]).
    pub fn set_crawl_delay(&self, host: &str, delay: Duration) {
        self.sched().set_crawl_delay(host, delay);
    }

    /// A leased fetch of `host` is about to start later than its lease did (its robots.txt
    /// was fetched first): the host's next fetch waits the host's delay from now.
    pub fn host_contacted(&self, host: &str) {
        self.sched().host_contacted(host, Instant::now());
    }

    /// Stops handing out URLs: `next` returns `None` from now on (graceful shutdown).
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Whether nothing is queued, nothing is in flight and nothing is due again.
    pub fn is_finished(&self) -> bool {
        let s = self.sched();
        s.queued() == 0 && s.counts().in_flight == 0 && self.sleeping().is_empty()
    }

    /// The canonicaliser (for callers that need the canonical form of a URL).
    pub fn canonicalizer(&self) -> &Canonicalizer {
        &self.canon
    }
}

/// How an offered URL was found: what its entry carries besides the URL and parent.
struct Found {
    depth: u32,
    hops: u8,
    via: Via,
    sitemap: u8,
    lastmod: Option<String>,
    /// A client's date: it sleeps until then (see [`Link::due`]).
    due: Option<u64>,
    /// A client's string and metadata (see [`Link::client`]).
    client: Option<Box<crate::ClientInfo>>,
}

impl Found {
    /// A link (or, without a parent, a seed) reached without redirects.
    fn plain(depth: u32, parent: Option<&str>) -> Self {
        Self {
            depth,
            hops: 0,
            via: if parent.is_some() {
                Via::Link
            } else {
                Via::Seed
            },
            sitemap: 0,
            lastmod: None,
            due: None,
            client: None,
        }
    }
}
