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

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use frontier::{Lease, Link, Outcome};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use url::Url;

use crate::worker::{finish, gate, redirect, retry, wait_refused, Ctx, Response};

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

#[derive(Debug)]
struct Held {
    lease: Lease,
    expires: Instant,
}

/// The external leases of a running crawl.
#[derive(Debug)]
pub(crate) struct Leases {
    held: Mutex<HashMap<u64, Held>>,
    next_id: AtomicU64,
    /// Leases that expired and were served again.
    pub(crate) expired: AtomicU64,
}

impl Default for Leases {
    fn default() -> Self {
        // Ids start from the clock, so an id of an earlier process is not taken for a new
        // lease after a restart.
        let start = crate::output::now_unix_ms().saturating_mul(1000);
        Self {
            held: Mutex::default(),
            next_id: AtomicU64::new(start),
            expired: AtomicU64::new(0),
        }
    }
}

impl Leases {
    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Held>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Leases out now.
    pub(crate) fn out(&self) -> u64 {
        self.held().len() as u64
    }
}

/// Hands out up to `max` due URLs for `lease_secs`. Nothing while the crawl is paused or
/// stopping. URLs that the SSRF guard or robots.txt rules out are finished here and not
/// handed out.
pub(crate) async fn lease(ctx: &Arc<Ctx>, max: usize, lease_secs: u64) -> Vec<Leased> {
    let mut out = Vec::new();
    let lease_for = Duration::from_secs(lease_secs.max(1));
    while out.len() < max && !ctx.held() && !ctx.stopped() {
        let Some(Some(lease)) = ctx.with_frontier("try_next", |f| f.try_next()).await else {
            break;
        };
        let Ok(url) = Url::parse(&lease.entry().url) else {
            give_back(ctx, lease, Outcome::Skipped).await;
            continue;
        };
        if lease.entry().sitemap > 0 {
            // Sitemap files are read by the crawler itself, not handed out: an external
            // fetcher reports links, and a sitemap's are in XML.
            let ctx = Arc::clone(ctx);
            tokio::spawn(async move {
                let outcome = crate::worker::process(&ctx, &lease).await;
                give_back(&ctx, lease, outcome).await;
            });
            continue;
        }
        if let Some(outcome) = gate(ctx, &lease, &url).await {
            give_back(ctx, lease, outcome).await;
            continue;
        }
        let id = ctx.leases.next_id.fetch_add(1, Ordering::Relaxed);
        let entry = lease.entry();
        out.push(Leased {
            id,
            url: entry.url.clone(),
            depth: entry.depth,
            parent: entry.parent.clone(),
            lease_secs: lease_for.as_secs(),
        });
        let expires = Instant::now() + lease_for;
        ctx.leases.held().insert(id, Held { lease, expires });
    }
    out
}

async fn give_back(ctx: &Ctx, lease: Lease, outcome: Outcome) {
    let completed = ctx
        .with_frontier("complete", |f| f.complete(lease.clone(), outcome.clone()))
        .await;
    if completed.is_some() {
        ctx.output.completed(lease.entry().id);
    }
}

/// Takes one external fetcher's result: as a built-in worker would, the URL is retried
/// (transient failure with retries left) or its links are offered, its record written and
/// its lease completed.
pub(crate) async fn complete(ctx: &Ctx, c: Completion) -> Completed {
    let Some(held) = ctx.leases.held().remove(&c.id) else {
        return Completed::UnknownLease;
    };
    let lease = held.lease;
    let entry = lease.entry().clone();
    let fetch_ms = c.fetch_ms.min(u64::from(u32::MAX));
    ctx.counters
        .latency
        .observe(Duration::from_millis(fetch_ms));
    let transient = matches!(c.status, None | Some(429) | Some(500..=599));
    let retry_after = c.retry_after_secs.map(Duration::from_secs);
    if let Some(outcome) = retry(ctx, &entry, transient, retry_after) {
        give_back(ctx, lease, outcome).await;
        return Completed::Retried;
    }
    let page = Url::parse(&entry.url).ok();
    let mut error = c
        .error
        .clone()
        .or_else(|| wait_refused(ctx, transient, retry_after));
    let mut offers = Vec::new();
    let mut final_url = entry.url.clone();
    match (c.status, &page) {
        (Some(300..=399), Some(page)) => match redirect(&entry, page, c.final_url.as_deref()) {
            Ok(link) => {
                final_url = link.url.to_string();
                offers.push(link);
            }
            Err(why) => error = error.or(Some(why)),
        },
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
    };
    let found = offers.len();
    let outcome = finish(ctx, &entry, response, offers, found).await;
    let recorded = outcome.is_recorded();
    give_back(ctx, lease, outcome).await;
    if recorded {
        Completed::Recorded
    } else {
        Completed::Retried
    }
}

/// Gives expired leases back to the frontier every `every`, until `stop`; then every lease
/// still out is given back (a graceful stop keeps them queued).
pub(crate) async fn reap(ctx: Arc<Ctx>, every: Duration, stop: CancellationToken) {
    let mut tick = tokio::time::interval(every);
    loop {
        let stopping = tokio::select! {
            _ = tick.tick() => false,
            _ = stop.cancelled() => true,
        };
        let now = Instant::now();
        let expired: Vec<Lease> = {
            let mut held = ctx.leases.held();
            let ids: Vec<u64> = held
                .iter()
                .filter(|(_, h)| stopping || h.expires <= now)
                .map(|(id, _)| *id)
                .collect();
            ids.into_iter()
                .filter_map(|id| held.remove(&id))
                .map(|h| h.lease)
                .collect()
        };
        if !stopping {
            ctx.leases
                .expired
                .fetch_add(expired.len() as u64, Ordering::Relaxed);
        }
        for lease in expired {
            tracing::debug!(url = %lease.entry().url, "external lease expired; served again");
            give_back(&ctx, lease, Outcome::Released).await;
        }
        if stopping {
            return;
        }
    }
}
