//! External fetchers (url-frontier's model over HTTP): a program in any language takes due
//! URLs with a lease (`POST /api/v1/leases`) and gives back what it fetched
//! (`POST /api/v1/leases/complete`).
//!
//! A lease here wraps the frontier's own [`Lease`], so politeness holds exactly as for the
//! built-in workers (the host's delay and in-flight limit count external fetches too), and
//! robots.txt is checked before a URL is handed out, with the same gate. An unreturned lease
//! expires: the reaper gives it back to the frontier ([`Outcome::Released`]) and the URL is
//! served again. A completion is taken once: a late or repeated one for a lease that expired
//! or was completed is answered `unknown_lease` and changes nothing, so a URL is never
//! counted twice.

use std::sync::Arc;
use std::time::Duration;

use frontier::{Lease, Link, Outcome};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use url::Url;

use crate::lease_table::Leases;
use crate::tail::Response;
use crate::worker::Fetching;

/// What external fetchers' leases take: the fetching they share with the workers (its gate
/// and tail), the table of leases out, and the fetch slots they hold. A cheap-clone handle.
#[derive(Debug, Clone)]
pub(crate) struct ExternalLeases {
    pub(crate) fetching: Arc<Fetching>,
    pub(crate) table: Arc<Leases>,
    pub(crate) fetch_slots: Arc<tokio::sync::Semaphore>,
}

/// An external fetcher's lease, as handed out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leased {
    /// The lease id to complete it with.
    pub id: u64,
    /// The URL to fetch.
    pub url: String,
    /// Its link depth.
    pub depth: u32,
    /// The page that linked here.
    pub parent: Option<String>,
    /// Seconds the lease holds.
    pub lease_secs: u64,
    /// Its queue: the politeness key (a client's key, or the URL's host).
    pub key: String,
    /// What a url-frontier client put with the URL (its string, its metadata).
    pub client: Option<Box<frontier::ClientInfo>>,
}

/// What an external fetcher reports for one lease.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    /// The lease id.
    pub id: u64,
    /// HTTP status (`None`: no response, see `error`).
    pub status: Option<u16>,
    /// Where the fetch ended (a redirect's `Location`, resolved or not).
    pub final_url: Option<String>,
    /// `Content-Type` as received.
    pub content_type: Option<String>,
    /// Body bytes read.
    pub bytes: u64,
    /// Fetch time in milliseconds.
    pub fetch_ms: u64,
    /// Links found on the page (absolute, or relative to the URL).
    pub links: Vec<String>,
    /// What went wrong, if anything.
    pub error: Option<String>,
    /// The server's `Retry-After`, in seconds.
    pub retry_after_secs: Option<u64>,
}

/// What became of one completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completed {
    /// Recorded (a `pages.jsonl` line); the URL is done.
    Recorded,
    /// A transient failure with retries left: the URL is served again later.
    Retried,
    /// No such lease (expired, completed already, or never handed out): nothing changed.
    UnknownLease,
}

/// Hands out up to `max` due URLs for `lease_secs`. Nothing while the crawl is paused or
/// stopping, and no more than fetch slots are free (`crawl.concurrency` counts the built-in
/// workers' fetches and the leases out together). URLs that the SSRF guard or robots.txt
/// rules out are finished here and not handed out.
impl ExternalLeases {
    /// `checked`: the SSRF guard and robots.txt rule out URLs first (an external fetcher of
    /// this crawl); without, a client that decides those itself gets every due URL (a
    /// url-frontier client). `from`: of that host's queue alone.
    pub(crate) async fn lease(
        &self,
        max: usize,
        lease_secs: u64,
        checked: bool,
        from: Option<&str>,
    ) -> Vec<Leased> {
        // A hold that has passed ends before anything is handed out, so that its URL is
        // served again at once, not when the reaper next looks.
        self.release_expired(false).await;
        let mut out = Vec::new();
        let lease_for = Duration::from_secs(lease_secs.max(1));
        while out.len() < max && !self.fetching.run().held() && !self.fetching.run().stopped() {
            let Ok(slot) = Arc::clone(&self.fetch_slots).try_acquire_owned() else {
                break;
            };
            let Some(Some(lease)) = self
                .fetching
                .frontier()
                .with_frontier("try_next", |f| match from {
                    Some(host) => f.try_next_from(host),
                    None => f.try_next(),
                })
                .await
            else {
                break;
            };
            let Ok(url) = Url::parse(&lease.entry().url) else {
                self.give_back(lease, Outcome::Skipped).await;
                continue;
            };
            if lease.entry().sitemap > 0 {
                // Sitemap files are read by the crawler itself, not handed out: an external
                // fetcher reports links, and a sitemap's are in XML.
                let this = self.clone();
                tokio::spawn(async move {
                    let mut lease = lease;
                    let outcome = this.fetching.process(&mut lease).await;
                    drop(slot);
                    this.give_back(lease, outcome).await;
                });
                continue;
            }
            if checked {
                if let Some(outcome) = self.fetching.gate(&lease, &url).await {
                    self.give_back(lease, outcome).await;
                    continue;
                }
            }
            let entry = lease.entry();
            let (url, depth, parent) = (entry.url.clone(), entry.depth, entry.parent.clone());
            let client = entry.client.clone();
            let key = lease.host().to_owned();
            let id = self.table.hold(lease, slot, Instant::now() + lease_for);
            out.push(Leased {
                id,
                url,
                depth,
                parent,
                lease_secs: lease_for.as_secs(),
                key,
                client,
            });
        }
        out
    }

    async fn give_back(&self, lease: Lease, outcome: Outcome) {
        let completed = self
            .fetching
            .frontier()
            .with_frontier("complete", |f| f.complete(lease.clone(), outcome.clone()))
            .await;
        if completed.is_some() {
            self.fetching.output().completed(lease.entry().id);
        }
    }

    /// Finishes a lease whose client fetched and recorded the URL itself (url-frontier's
    /// "known"): the URL is done and counts as a page, the host is healthy, and no record is
    /// written here. It is due again at `due_at` (Unix seconds) when given, with a recrawl
    /// schedule or without, in the same completion, carrying `client`'s string and metadata
    /// in place of those it was put with when given. `false`: no such lease.
    pub(crate) async fn finish_by_client(
        &self,
        id: u64,
        due_at: Option<u64>,
        client: Option<Box<frontier::ClientInfo>>,
    ) -> bool {
        let Some(mut lease) = self.table.take(id) else {
            return false;
        };
        if let Some(at) = due_at {
            lease.set_due_at(at);
            if let Some(c) = client {
                if !lease.replace_client(c) {
                    tracing::debug!(
                        "an update's string and metadata with the URL's queue key pass the \
                         bound: the URL keeps the fields it had"
                    );
                }
            }
        }
        self.give_back(lease, Outcome::Done).await;
        true
    }

    /// Takes one external fetcher's result: as a built-in worker would, the URL is retried
    /// (transient failure with retries left) or its links are offered, its record written and
    /// its lease completed.
    pub(crate) async fn complete(&self, c: Completion) -> Completed {
        let Some(mut lease) = self.table.take(c.id) else {
            return Completed::UnknownLease;
        };
        let entry = lease.entry().clone();
        let fetch_ms = c.fetch_ms.min(u64::from(u32::MAX));
        self.fetching
            .tail
            .counters()
            .latency
            .observe(Duration::from_millis(fetch_ms));
        // No response is a failure that may pass, like a status that asks to come back.
        let transient = c.status.is_none_or(crate::fetch::transient_status);
        let retry_after = c.retry_after_secs.map(Duration::from_secs);
        if let Some(outcome) = self.fetching.tail.retry(&entry, transient, retry_after) {
            self.give_back(lease, outcome).await;
            return Completed::Retried;
        }
        let page = Url::parse(&entry.url).ok();
        let mut error = c
            .error
            .clone()
            .or_else(|| self.fetching.tail.wait_refused(transient, retry_after));
        let mut offers = Vec::new();
        let mut final_url = entry.url.clone();
        match (c.status, &page) {
            (Some(status @ 300..=399), Some(page)) => {
                match Link::redirect(&entry, page, status, c.final_url.as_deref()) {
                    Ok(link) => {
                        final_url = link.url.to_string();
                        offers.push(link);
                    }
                    Err(why) => error = error.or(Some(why)),
                }
            }
            (_, Some(page)) => {
                if let Some(f) = c.final_url.as_deref().and_then(|f| page.join(f).ok()) {
                    final_url = f.to_string();
                }
                let base = Url::parse(&final_url).unwrap_or_else(|_| page.clone());
                let depth = entry.depth + 1;
                offers = c
                    .links
                    .iter()
                    .filter_map(|l| base.join(l.trim()).ok())
                    .filter(|u| matches!(u.scheme(), "http" | "https"))
                    .map(|u| Link::new(u, depth))
                    .collect();
            }
            (_, None) => {}
        }
        let response = Response {
            status: c.status,
            final_url,
            content_type: c.content_type,
            bytes: c.bytes,
            fetch_ms,
            truncated: false,
            error,
            transient,
            retry_after,
            // An external fetcher reports an outcome, not the bytes: nothing to archive.
            capture: None,
            ..Response::default()
        };
        let found = offers.len();
        let outcome = self
            .fetching
            .tail
            .finish(&lease, response, offers, found)
            .await;
        let recorded = outcome.is_recorded();
        // The fetcher's duration paces the host as a worker's does (`delay_factor`).
        if c.status.is_some() && fetch_ms > 0 {
            lease.set_elapsed(Duration::from_millis(fetch_ms));
        }
        self.give_back(lease, outcome).await;
        if recorded {
            Completed::Recorded
        } else {
            Completed::Retried
        }
    }

    /// Gives the leases whose hold has passed (`all`: every lease out) back to the frontier:
    /// their URLs are served again.
    pub(crate) async fn release_expired(&self, all: bool) {
        for lease in self.table.take_expired(Instant::now(), all) {
            tracing::debug!(url = %frontier::credentials::mask(&lease.entry().url), "external lease expired; served again");
            self.give_back(lease, Outcome::Released).await;
        }
    }

    /// Gives expired leases back to the frontier every `every`, until `stop`; then every lease
    /// still out is given back (a graceful stop keeps them queued).
    pub(crate) async fn reap(self, every: Duration, stop: CancellationToken) {
        let mut tick = tokio::time::interval(every);
        loop {
            let stopping = tokio::select! {
                _ = tick.tick() => false,
                _ = stop.cancelled() => true,
            };
            self.release_expired(stopping).await;
            if stopping {
                return;
            }
        }
    }
}
