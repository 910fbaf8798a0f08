//! The [`Frontier`] trait: the one boundary between fetch workers and whatever keeps the
//! crawl's URLs — [`LocalFrontier`](crate::LocalFrontier) in this process, or a frontier
//! shared by several processes (Redis), or one reached over the network.
//!
//! Design choices, so that a remote implementation fits without changing the engine:
//! - **Object safe, used as `Arc<dyn Frontier>`**: the backend is chosen at run time from the
//!   configuration, and a service holds the same object as the workers. Every async call
//!   returns a [`BoxFuture`]; one allocation per call is nothing next to a fetch, and the
//!   engine is compiled once instead of once per backend.
//! - **Every call that may cross a network returns `Result`**; only [`close`](Frontier::close)
//!   (local to this process) cannot fail.
//! - **Offers are batched**: one call per page with all its links, so a remote frontier makes
//!   one round trip per page, not per link.
//! - **[`Lease`] is opaque** but constructible by any implementation ([`Lease::new`] with a
//!   token of its own), and **[`Stats`] is implementation-neutral** with an extension map for
//!   what only one implementation has (memory vs disk queue, filter slices, …).
//! - **The URL lifecycle has one owner**: admitted (by `offer`) → leased (by `next`) → done,
//!   reported by `complete` *after* the page's record is written, so an implementation that
//!   journals "done" durably never marks a URL done whose record could still be lost. The page
//!   budget (`max_pages`) is counted here too, from the outcomes.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use url::Url;

use crate::canon::Canonicalizer;
use crate::entry::{Entry, Via};
use crate::hosts::{HostControls, HostPage, HostQuery};
use crate::scope::OutOfScope;

pub use crate::lease::Lease;

/// A boxed, sendable future: what the [`Frontier`] trait's async calls return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A frontier call that failed: the backend could not be reached or refused the call. The
/// local frontier never fails; a remote one may. A refused call changed nothing, so callers
/// retry the first two kinds with back-off; the third stops the crawl.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrontierError {
    /// The backend cannot be reached or serve now (connection lost, timeout, loading its
    /// data, read-only during a failover): retrying may succeed.
    #[error("frontier unavailable: {0}")]
    Unavailable(String),
    /// The backend is out of memory and refuses every change: the crawl waits until it has
    /// room (an operator raises its limit), losing and repeating nothing.
    #[error("frontier full: {0}")]
    Full(String),
    /// The backend answered with an error that retrying will not fix (refused credentials,
    /// keys of another type, a bug).
    #[error("frontier: {0}")]
    Failed(String),
}

impl FrontierError {
    /// Whether retrying the call may succeed ([`Unavailable`](Self::Unavailable) or
    /// [`Full`](Self::Full)).
    pub fn is_retryable(&self) -> bool {
        !matches!(self, FrontierError::Failed(_))
    }

    /// A short name of the kind: `unavailable`, `full` or `failed` (status and metrics).
    pub fn kind(&self) -> &'static str {
        match self {
            FrontierError::Unavailable(_) => "unavailable",
            FrontierError::Full(_) => "full",
            FrontierError::Failed(_) => "failed",
        }
    }
}

/// What [`Frontier::offer_and_hold`] answers: each link's admission, and whether the lease is
/// still held (`None`: not asked in that call).
pub type Fenced = (Vec<Admission>, Option<bool>);

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

/// One URL offered to the frontier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The absolute URL (resolved against its page; canonicalised by the frontier).
    pub url: Url,
    /// Link depth: the page's depth + 1 for a link, the same depth for a redirect target,
    /// 0 for a seed.
    pub depth: u32,
    /// Redirect hops that led here (0 unless this is a redirect target).
    pub hops: u8,
    /// How it was found.
    pub via: Via,
    /// A sitemap file to read at this nesting level (see [`Entry::sitemap`]); 0 for a page.
    pub sitemap: u8,
    /// `<lastmod>` of its sitemap entry.
    pub lastmod: Option<String>,
    /// A client's date for it (Unix seconds): admitted, it sleeps until then instead of
    /// being queued now, and due URLs come out earliest date first (url-frontier's known
    /// URL with a `refetchable_from_date`, never seen before). `None`: queued now.
    pub due: Option<u64>,
    /// What a url-frontier client put with it (its string, its metadata): kept with the
    /// queued URL and handed back with its lease. `None` for the crawl's own links.
    pub client: Option<Box<crate::ClientInfo>>,
}

impl Link {
    /// The target of `entry`'s 3xx answer from `page`, as a link one hop further at the same
    /// depth; `Err` says why there is none (no or a bad `Location`).
    pub fn redirect(
        entry: &Entry,
        page: &Url,
        status: u16,
        location: Option<&str>,
    ) -> Result<Link, String> {
        match status {
            // Not a redirect, whatever its Location says (a crawl that sends validators
            // handles its 304s before this).
            304 => return Err("304 Not Modified to a request without validators".into()),
            305 | 306 => return Err(format!("{status} is not followed (deprecated)")),
            _ => {}
        }
        match location.map(|l| page.join(l.trim())) {
            Some(Ok(target)) => Ok(Link {
                hops: entry.hops.saturating_add(1),
                via: Via::Redirect,
                ..Link::new(target, entry.depth)
            }),
            Some(Err(e)) => Err(format!("bad Location header: {e}")),
            None => Err("redirect without a Location header".into()),
        }
    }

    /// A link at `depth` reached without redirects.
    pub fn new(url: Url, depth: u32) -> Self {
        Self {
            url,
            depth,
            hops: 0,
            via: Via::Link,
            sitemap: 0,
            lastmod: None,
            due: None,
            client: None,
        }
    }
}

/// Seeds as every frontier takes them: the canonical URL of each, whose host (and domain,
/// with `host_scope = "domain"`) joins the scope, and the links marked [`Via::Seed`] to offer.
/// A seed that cannot be canonicalised widens nothing and is refused as invalid when offered.
pub fn prepare_seeds(canon: &Canonicalizer, links: Vec<Link>) -> (Vec<Url>, Vec<Link>) {
    let canonical = links
        .iter()
        .filter_map(|l| canon.canonicalize(l.url.as_str(), None).ok())
        .collect();
    let seeds = links
        .into_iter()
        .map(|l| Link {
            via: Via::Seed,
            ..l
        })
        .collect();
    (canonical, seeds)
}

/// How a leased fetch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Done with this URL, its record written (whatever the HTTP status); the host is healthy:
    /// a back-off it began before this fetch was handed out ends, and it is back to its pace.
    Done,
    /// Done with this URL, its record written, but the host is struggling (429, 503, 5xx,
    /// connection errors): back off, at least `retry_after` when the server said so.
    HostError {
        /// The server's `Retry-After`, if any.
        retry_after: Option<Duration>,
    },
    /// Done with this URL without a record (robots.txt disallows it, or it cannot be
    /// fetched at all): it does not count against the page budget, and as it did not reach
    /// the host it says nothing of it (a back-off stays).
    Skipped,
    /// Fetch this URL again later: it goes back to the front of its host's queue, and the host
    /// waits at least `after` (and backs off as for a host error).
    Retry {
        /// The server's `Retry-After`, if any.
        after: Option<Duration>,
    },
    /// The URL was not fetched (an external fetcher's lease expired, or the crawl was paused
    /// after the lease was taken): it goes back to the front of its host's queue as it was,
    /// with no back-off and no attempt counted.
    Released,
}

impl Outcome {
    /// Whether the URL is finished (not to be fetched again).
    pub fn is_final(&self) -> bool {
        !matches!(self, Outcome::Retry { .. } | Outcome::Released)
    }

    /// Whether a record was written for it (it counts against the page budget).
    pub fn is_recorded(&self) -> bool {
        matches!(self, Outcome::Done | Outcome::HostError { .. })
    }
}

/// What [`Frontier::recrawl`] did with a URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recrawled {
    /// It was fetched and waiting to be due again: it is due at the time asked now.
    Scheduled,
    /// It is queued or in flight already (fetched soon anyway).
    Queued,
    /// This crawl never admitted it.
    NeverSeen,
}

/// What [`Frontier::next`] gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// A URL to fetch.
    Lease(Lease),
    /// No URL will be handed out any more.
    End(End),
}

/// Why the frontier hands out no more URLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Nothing queued and nothing in flight: the crawl is complete.
    Finished,
    /// `max_pages` records were written.
    Budget,
    /// [`Frontier::close`] was called (graceful shutdown).
    Closed,
}

/// Counters and gauges of a frontier, the same for every implementation; what only one
/// implementation has goes in `extra`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// URLs offered.
    pub offered: u64,
    /// URLs admitted as new (queued).
    pub admitted: u64,
    /// URLs the visited set had seen.
    pub duplicates: u64,
    /// URLs refused, by reason (only reasons that occurred).
    pub out_of_scope: Vec<(OutOfScope, u64)>,
    /// URLs waiting to be fetched.
    pub queued: u64,
    /// Leases not yet completed.
    pub in_flight: u64,
    /// Hosts known.
    pub hosts: u64,
    /// Completions with a record, earlier runs included (what `max_pages` counts).
    pub pages: u64,
    /// Bits of the visited-set filter.
    pub filter_bits: u64,
    /// Bits set.
    pub filter_bits_set: u64,
    /// The filter's current false-positive probability.
    pub filter_fpp: f64,
    /// Implementation-specific figures (e.g. `queued_memory`, `queued_disk`).
    pub extra: BTreeMap<&'static str, u64>,
}

impl Stats {
    /// An implementation-specific figure; 0 when this implementation does not have it.
    pub fn extra(&self, key: &str) -> u64 {
        self.extra.get(key).copied().unwrap_or(0)
    }

    /// The fraction of the filter's bits that are set.
    pub fn filter_fill(&self) -> f64 {
        self.filter_bits_set as f64 / self.filter_bits.max(1) as f64
    }
}

/// The frontier the fetch workers use.
///
/// Contract (checked by `test_support::contract` against every implementation):
/// - `offer` admits each canonical URL at most once, whatever the concurrency;
/// - `next` hands out a URL only when its host's delay has passed and the host has fewer than
///   `max_per_host` leases out; it waits while URLs may still come, and ends with
///   [`End::Finished`] exactly when nothing is queued and nothing is leased (unless the
///   frontier is kept open for a service: then it waits for new seeds);
/// - offer a page's links *before* completing its lease, or other workers may see the crawl
///   as finished;
/// - `complete` after the page's record is written: a durable implementation marks the URL
///   done then.
pub trait Frontier: Send + Sync + std::fmt::Debug {
    /// Offers the links found on `parent` (or the seeds, with `parent` `None`); returns what
    /// became of each, in order.
    fn offer<'a>(
        &'a self,
        parent: Option<&'a str>,
        links: Vec<Link>,
    ) -> BoxFuture<'a, Result<Vec<Admission>, FrontierError>>;

    /// Offers seeds given by the operator (at start or while the crawl runs): their hosts
    /// and domains widen the host scope first, as the start seeds' do; then as `offer`.
    fn seed(&self, links: Vec<Link>) -> BoxFuture<'_, Result<Vec<Admission>, FrontierError>>;

    /// The next URL to fetch, waiting until one's host is ready.
    fn next(&self) -> BoxFuture<'_, Result<Next, FrontierError>>;

    /// A URL whose host is ready now, without waiting (`None`: none is due, or the crawl
    /// ended): what an external fetcher's lease call takes, under the same politeness.
    fn try_next(&self) -> BoxFuture<'_, Result<Option<Lease>, FrontierError>>;

    /// As [`try_next`](Self::try_next), from the queue of `host` (a politeness key, as
    /// [`Lease::host`] gives) alone, under its politeness: url-frontier's GetURLs of one key.
    /// `None` for a host unknown, empty, at its limit or not due.
    fn try_next_from<'a>(
        &'a self,
        host: &'a str,
    ) -> BoxFuture<'a, Result<Option<Lease>, FrontierError>>;

    /// Gives a lease back with its outcome (politeness, retries, the budget and the URL's
    /// done mark follow from it).
    fn complete(&self, lease: Lease, outcome: Outcome) -> BoxFuture<'_, Result<(), FrontierError>>;

    /// [`complete`](Self::complete), then [`next`](Self::next): one round trip where the
    /// frontier can (a remote one completes and leases in one call). Safe to call again
    /// after an error: a completion made twice changes nothing the second time.
    fn complete_and_next(
        &self,
        lease: Lease,
        outcome: Outcome,
    ) -> BoxFuture<'_, Result<Next, FrontierError>> {
        Box::pin(async move {
            self.complete(lease, outcome).await?;
            self.next().await
        })
    }

    /// Whether this process still holds `lease` — it did not expire and go to another
    /// fetcher — keeping it for another lease period: the fence a page's record passes
    /// before it is written, so that a fetcher paused past its lease writes nothing for a
    /// URL another one now holds. The default (leases that never expire) says yes.
    fn hold<'a>(&'a self, _lease: &'a Lease) -> BoxFuture<'a, Result<bool, FrontierError>> {
        Box::pin(std::future::ready(Ok(true)))
    }

    /// Offers the links of `lease`'s page and, where the frontier can in the same call,
    /// answers [`hold`](Self::hold) for it: `(admissions, Some(held))`, or `None` when it did
    /// not (the default: an `offer`, and the caller asks `hold` if it needs to).
    fn offer_and_hold<'a>(
        &'a self,
        lease: &'a Lease,
        links: Vec<Link>,
    ) -> BoxFuture<'a, Result<Fenced, FrontierError>> {
        Box::pin(async move {
            let admissions = self.offer(Some(&lease.entry().url), links).await?;
            Ok((admissions, None))
        })
    }

    /// Applies a host's robots.txt `Crawl-delay`. It also applies to a fetch of the host
    /// already handed out: the next one waits for it from that fetch's start.
    fn set_crawl_delay<'a>(
        &'a self,
        host: &'a str,
        delay: Duration,
    ) -> BoxFuture<'a, Result<(), FrontierError>>;

    /// A leased fetch of `host` starts later than its lease did (its robots.txt was fetched
    /// first): the host's next fetch waits its delay from now.
    fn host_contacted<'a>(&'a self, host: &'a str) -> BoxFuture<'a, Result<(), FrontierError>>;

    /// Politeness per address: `lease`'s host is fetched at address group `key` (its
    /// fetcher resolved it; again when the answer changes). Returns whether `lease` may be
    /// fetched now — `false`: the group is full or its gap has not passed, give the lease
    /// back ([`Outcome::Released`]). A frontier without politeness per address answers
    /// `true` (the default; see [`groups_by_address`](Self::groups_by_address)).
    fn place_host<'a>(
        &'a self,
        lease: &'a Lease,
        key: crate::AddressKey,
    ) -> BoxFuture<'a, Result<bool, FrontierError>> {
        let _ = (lease, key);
        Box::pin(std::future::ready(Ok(true)))
    }

    /// Whether this frontier paces hosts by address ([`place_host`](Self::place_host)).
    fn groups_by_address(&self) -> bool {
        false
    }

    /// Queues URLs again although the visited set has them (an operator's forget of URLs
    /// already done, a client's date for a URL it finished): each is journaled as a new
    /// admission and fetched again — asleep until its [`Link::due`] when it has one.
    /// Returns, in order, whether each was queued (`false`: not a canonicalisable URL).
    fn requeue(&self, links: Vec<Link>) -> BoxFuture<'_, Result<Vec<bool>, FrontierError>>;

    /// Makes URLs asleep (fetched before under a recrawl schedule, or given a client's date)
    /// due at `at` (Unix seconds; now when `None` or past), whatever their schedule said: an
    /// operator's refetch. Each URL is canonical. The local and Redis frontiers move them
    /// with a schedule or without; a frontier that keeps no sleeping URLs refuses (the
    /// default).
    fn recrawl(
        &self,
        urls: Vec<Url>,
        at: Option<u64>,
    ) -> BoxFuture<'_, Result<Vec<Recrawled>, FrontierError>> {
        let _ = (urls, at);
        Box::pin(std::future::ready(Err(FrontierError::Failed(
            "this frontier keeps no recrawl schedules".into(),
        ))))
    }

    /// A page of hosts with their queues, limits and state.
    fn hosts(&self, query: HostQuery) -> BoxFuture<'_, Result<HostPage, FrontierError>>;

    /// Changes one host's limits at run time; `Ok(false)`: the frontier knows no such host.
    fn set_host<'a>(
        &'a self,
        host: &'a str,
        controls: HostControls,
    ) -> BoxFuture<'a, Result<bool, FrontierError>>;

    /// Sets the delay between fetches of every host that has no delay of its own (an
    /// operator's [`HostControls::delay`] keeps its host's; a `Crawl-delay` and a back-off
    /// still lengthen it). It applies from each host's next hand-out: a host already waiting
    /// keeps its time. A shared frontier sets it for every process of the crawl.
    fn set_default_delay(&self, delay: Duration) -> BoxFuture<'_, Result<(), FrontierError>>;

    /// Sets how many queued URLs this process keeps in memory (the memory governor lowers
    /// it under pressure and restores the configured value after): the rest wait on disk, in
    /// order. Returns whether it did: a frontier that keeps no queue in this process ignores
    /// it and says `false` (the default). It may write to disk: call it off the reactor.
    fn set_memory_capacity(&self, _entries: usize) -> bool {
        false
    }

    /// Drops every URL queued for `host` or asleep in its queue (an operator's delete of
    /// its queue; url-frontier's DeleteQueue and PurgeURLs) — with `days` > 0 only those
    /// admitted more than `days` days ago ([`Entry::created`](crate::Entry::created); one
    /// of unknown admission time, written by an older version, stays): each is done
    /// unfetched — for a resumed crawl too — and stays in the visited set, so offering it
    /// again admits nothing. Leases out are not touched, and the host keeps its controls and
    /// figures. Returns how many URLs were dropped (0: none, or no such host).
    fn delete_queue<'a>(
        &'a self,
        host: &'a str,
        days: u32,
    ) -> BoxFuture<'a, Result<u64, FrontierError>>;

    /// Where the canonical `url` is: asleep (in any queue), queued in the queue `key`, or
    /// only in the visited set ([`crate::listing`]).
    fn find_url<'a>(
        &'a self,
        url: &'a Url,
        key: &'a str,
    ) -> BoxFuture<'a, Result<crate::Found, FrontierError>>;

    /// A page of the URLs queued or asleep (not those out with a fetcher), and how many
    /// match ([`crate::listing`]).
    fn list_urls(
        &self,
        query: crate::UrlQuery,
    ) -> BoxFuture<'_, Result<crate::UrlPage, FrontierError>>;

    /// Whether a call can fail with a [`FrontierError`]. A caller that retries keeps a copy
    /// of what it hands over (a failed remote call took it) only when this is `true`, the
    /// default; a frontier in this process never fails and says `false`, so a page's links
    /// are moved, not copied.
    fn calls_can_fail(&self) -> bool {
        true
    }

    /// Stops handing out URLs in this process: `next` ends with [`End::Closed`] from now on.
    fn close(&self);

    /// Current counters.
    fn stats(&self) -> BoxFuture<'_, Result<Stats, FrontierError>>;
}
