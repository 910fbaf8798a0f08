//! One fetch worker's loop: take a lease, check robots.txt, fetch, offer what the page
//! leads to (one frontier call per page), write its record, complete the lease with the
//! outcome. The frontier decides what the outcome means (done, retried, budget); a frontier
//! call that fails is retried with back-off until it succeeds or the crawl stops.
//!
//! The steps around the fetch — the robots.txt gate, the retry decision and [`finish`]
//! (offer, record, outcome) — are shared with external fetchers' leases (`leases.rs`), so a
//! URL fetched by another program is treated exactly as one fetched here.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use frontier::{Admission, End, Frontier, Lease, Link, Next, OutOfScope, Outcome, Via};
use url::Url;

use crate::fetch::{Fetched, Fetcher, Keep};
use crate::frontier_call::Retained;
use crate::leases::Leases;
use crate::metrics::LatencyHistogram;
use crate::output::{self, Output, PageRecord};
use crate::parse_pool::ExtractPieces;
use crate::robots::RobotsCache;
use crate::{parse_pool, state, CrawlConfig, StopReason};

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) pages: AtomicU64,
    pub(crate) robots_disallowed: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) by_status: Mutex<BTreeMap<String, u64>>,
    /// Origins whose robots.txt could not be had, and why (at most [`MAX_LISTED`]).
    pub(crate) robots_unreachable: Mutex<BTreeMap<String, String>>,
    /// Seeds (depth 0, no parent) that got a response.
    pub(crate) seeds_fetched: AtomicU64,
    /// Why seeds got none (at most [`MAX_LISTED`]).
    pub(crate) seed_errors: Mutex<Vec<String>>,
    /// Fetch durations (built-in and external fetchers).
    pub(crate) latency: LatencyHistogram,
}

/// Most entries kept in the summary's lists of unreachable hosts and seed errors.
pub(crate) const MAX_LISTED: usize = 100;

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Everything the workers share.
#[derive(Debug)]
pub(crate) struct Ctx {
    pub(crate) cfg: CrawlConfig,
    pub(crate) frontier: Arc<dyn Frontier>,
    pub(crate) fetcher: Fetcher,
    pub(crate) robots: RobotsCache,
    pub(crate) parse: parse_pool::ParsePool,
    pub(crate) output: Output,
    pub(crate) counters: Counters,
    pub(crate) stop: Mutex<Option<StopReason>>,
    pub(crate) store: Option<Arc<store::Store>>,
    /// Workers waiting for the state's checkpoints.
    pub(crate) pause: state::Pause,
    /// An operator's pause (`POST /api/v1/pause`): no new fetch starts while it is `true`.
    pub(crate) held: tokio::sync::watch::Sender<bool>,
    /// Every record written, for `GET /api/v1/events` (serialized by the stream that sends
    /// it, and only if it does: a dashboard that wants errors alone costs the crawl nothing
    /// more than this clone).
    pub(crate) events: tokio::sync::broadcast::Sender<Arc<PageRecord>>,
    /// External fetchers' leases.
    pub(crate) leases: Leases,
    /// Sitemap files offered per host (at most 1,000 each).
    pub(crate) sitemap_files: crate::sitemap::crawl::FileBudget,
    /// When the crawl started (RFC 3339) and its clock.
    pub(crate) started_at: String,
    pub(crate) started: Instant,
    /// Run as a service (`crawler serve`).
    pub(crate) serving: bool,
    /// Since when (ms since the Unix epoch) frontier calls fail; 0 while they succeed.
    pub(crate) frontier_down: AtomicU64,
}

impl Ctx {
    pub(crate) fn stop(&self, reason: StopReason) {
        let mut s = self.stop.lock().unwrap_or_else(|e| e.into_inner());
        if s.is_none() {
            *s = Some(reason);
            tracing::info!(?reason, "stopping: no more URLs are handed out");
        }
        self.frontier.close();
    }

    /// Whether an operator paused the crawl.
    pub(crate) fn held(&self) -> bool {
        *self.held.borrow()
    }

    /// Waits while an operator has the crawl paused (or until it stops).
    pub(crate) async fn wait_while_held(&self) {
        let mut rx = self.held.subscribe();
        while *rx.borrow_and_update() && !self.stopped() {
            tokio::select! {
                changed = rx.changed() => if changed.is_err() { return },
                // A stop does not change the watch: look again now and then.
                _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
        }
    }

    pub(crate) fn stopped(&self) -> bool {
        self.stop
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Seconds the frontier has been unreachable (`None`: it answers).
    pub(crate) fn frontier_unavailable_secs(&self) -> Option<f64> {
        let since = self.frontier_down.load(Ordering::Relaxed);
        (since > 0).then(|| output::now_unix_ms().saturating_sub(since) as f64 / 1000.0)
    }
}

pub(crate) async fn worker(ctx: Arc<Ctx>) {
    loop {
        if let Some(store) = &ctx.store {
            ctx.pause
                .wait(store, state::BACKLOG_LIMIT, || ctx.stopped())
                .await;
        }
        ctx.wait_while_held().await;
        let Some(next) = ctx.with_frontier("next", |f| f.next()).await else {
            break;
        };
        let lease = match next {
            Next::Lease(lease) => lease,
            Next::End(End::Budget) => {
                if !ctx.serving {
                    ctx.stop(StopReason::MaxPages);
                }
                break;
            }
            Next::End(End::Finished | End::Closed) => break,
        };
        // Paused while this worker waited for a URL: give it back untouched.
        let outcome = if ctx.held() {
            Outcome::Released
        } else {
            process(&ctx, &lease).await
        };
        let id = lease.entry().id;
        let mut handed = Retained::new((lease, outcome), ctx.frontier.calls_can_fail());
        let completed = ctx
            .with_frontier("complete", |f| {
                let (lease, outcome) = handed.take();
                f.complete(lease, outcome)
            })
            .await;
        if completed.is_none() {
            break;
        }
        // Its line (if any) is now covered by the next checkpoint.
        ctx.output.completed(id);
    }
}

/// Fetches one leased URL, offers what it leads to and writes its record; returns the
/// outcome for the frontier.
pub(crate) async fn process(ctx: &Ctx, lease: &Lease) -> Outcome {
    let entry = lease.entry();
    let Ok(url) = Url::parse(&entry.url) else {
        // The frontier only queues canonical URLs, so this cannot happen; if it does, the URL
        // must not come back on every resume.
        return Outcome::Skipped;
    };
    if let Some(outcome) = gate(ctx, lease, &url).await {
        return outcome;
    }
    if entry.sitemap > 0 {
        return crate::sitemap::crawl::read(ctx, lease, &url).await;
    }
    let cap = ctx.cfg.fetch.max_body_bytes;
    let respect = ctx.cfg.crawl.respect_nofollow;
    let mut pieces = ExtractPieces {
        pool: &ctx.parse,
        respect,
        extractor: None,
        failed: None,
    };
    let mut fetched = ctx
        .fetcher
        .fetch_pieces(
            &url,
            Keep::Html,
            cap,
            lease.last_of_host(),
            Some(&mut pieces),
        )
        .await;
    ctx.counters.latency.observe(fetched.elapsed);
    if let Some(retry) = retry(ctx, entry, fetched.transient, fetched.retry_after) {
        tracing::debug!(%url, status = fetched.status, error = fetched.error.as_deref(), "retrying later");
        return retry;
    }
    let mut error = fetched
        .error
        .clone()
        .or_else(|| wait_refused(ctx, fetched.transient, fetched.retry_after));
    let mut offers = Vec::new();
    let mut found = 0;
    let mut final_url = entry.url.clone();
    match fetched.status {
        Some(300..=399) => match redirect(entry, &url, fetched.location.as_deref()) {
            Ok(link) => {
                final_url = link.url.to_string();
                offers.push(link);
                found = 1;
            }
            Err(why) => error = Some(why),
        },
        Some(200) if pieces.failed.is_some() => {
            error = pieces
                .failed
                .map(|e| format!("link extraction failed: {e}"));
        }
        Some(200) if !fetched.body.is_empty() || pieces.extractor.is_some() => {
            // The body's last piece (or all of it), moved, not copied.
            let body = std::mem::take(&mut fetched.body);
            let ct = fetched.content_type.clone();
            let page = url.clone();
            let extractor = pieces.extractor.take();
            let size = body.len();
            let job = move || {
                let mut extractor = ExtractPieces::resume(extractor, ct.as_deref(), respect);
                extractor.feed(&body);
                extractor.finish(&page)
            };
            match ctx.parse.run_sized(size, job).await {
                Ok(e) => {
                    let depth = entry.depth + 1;
                    offers = e.links.into_iter().map(|u| Link::new(u, depth)).collect();
                    found = e.found;
                }
                Err(e) => error = Some(format!("link extraction failed: {e}")),
            }
        }
        _ => {}
    }
    finish(
        ctx,
        entry,
        Response::of(&mut fetched, final_url, error),
        offers,
        found,
    )
    .await
}

/// What stands before a leased URL's fetch: the SSRF guard (an IP literal it refuses gets a
/// record saying so; names are checked when they resolve), then robots.txt. `None` when it
/// may be fetched; otherwise the outcome (a disallowed URL is skipped; one whose robots.txt
/// cannot be had gets a record saying why).
pub(crate) async fn gate(ctx: &Ctx, lease: &Lease, url: &Url) -> Option<Outcome> {
    let entry = lease.entry();
    if let Err(why) = ctx.fetcher.guard().check_url(url) {
        return Some(unfetched(ctx, entry, why).await);
    }
    if !ctx.cfg.crawl.respect_robots {
        return None;
    }
    let verdict = ctx.robots.check(&ctx.fetcher, url).await;
    let host = lease.host();
    if let Some(delay) = verdict.crawl_delay {
        ctx.with_frontier("set_crawl_delay", |f| f.set_crawl_delay(host, delay))
            .await;
    }
    if verdict.fetched {
        // The robots.txt request took this lease's turn: the host's next fetch waits its
        // delay from the page request that follows now, not from when the lease began.
        ctx.with_frontier("host_contacted", |f| f.host_contacted(host))
            .await;
        // A host whose robots.txt could not be had is not crawled for now: its sitemaps
        // would only add records saying so.
        if ctx.cfg.crawl.sitemaps && verdict.unreachable.is_none() {
            crate::sitemap::crawl::discover(ctx, url, &verdict.sitemaps).await;
        }
    }
    if let Some(why) = verdict.unreachable {
        // Not the rules' verdict but a failure: the URL gets a record saying so.
        {
            let origin = url.origin().ascii_serialization();
            let mut hosts = lock(&ctx.counters.robots_unreachable);
            if hosts.len() < MAX_LISTED || hosts.contains_key(&origin) {
                hosts.insert(origin, why.to_string());
            }
        }
        return Some(unfetched(ctx, entry, why.to_string()).await);
    }
    if !verdict.allowed {
        ctx.counters
            .robots_disallowed
            .fetch_add(1, Ordering::Relaxed);
        tracing::debug!(%url, "disallowed by robots.txt");
        return Some(Outcome::Skipped);
    }
    None
}

/// The record of a URL not fetched, and why; the URL is done once it is written.
async fn unfetched(ctx: &Ctx, entry: &frontier::Entry, why: String) -> Outcome {
    let record = PageRecord {
        url: entry.url.clone(),
        final_url: entry.url.clone(),
        status: None,
        depth: entry.depth,
        parent: entry.parent.clone(),
        via: entry.via.as_str(),
        sitemap: entry.sitemap > 0,
        lastmod: entry.lastmod.clone(),
        content_type: None,
        bytes: 0,
        links_found: 0,
        links_new: 0,
        fetch_ms: 0,
        fetched_at: output::now_rfc3339(),
        attempts: 0,
        truncated: false,
        error: Some(why),
        warc_file: None,
        warc_offset: None,
    };
    match write_record(ctx, entry, record, None).await {
        true => Outcome::Done,
        false => Outcome::Retry { after: None },
    }
}

/// A transient failure with retries left: fetch the URL again later (after the per-URL
/// delay, or the server's `Retry-After` when longer). A `Retry-After` beyond the longest
/// back-off is not waited for ([`wait_refused`] says so in the record).
pub(crate) fn retry(
    ctx: &Ctx,
    entry: &frontier::Entry,
    transient: bool,
    retry_after: Option<Duration>,
) -> Option<Outcome> {
    if !transient
        || entry.attempt >= ctx.cfg.fetch.max_retries
        || wait_refused(ctx, transient, retry_after).is_some()
    {
        return None;
    }
    ctx.counters.retries.fetch_add(1, Ordering::Relaxed);
    let backoff = retry_delay(ctx.cfg.fetch.retry_base_ms, entry.attempt, &entry.url);
    let after = retry_after.map_or(backoff, |r| r.max(backoff));
    Some(Outcome::Retry { after: Some(after) })
}

/// Why a transient failure is not retried although retries are left: its `Retry-After`
/// (a year, say) is longer than `politeness.max_backoff_secs`, the longest the crawl waits.
pub(crate) fn wait_refused(
    ctx: &Ctx,
    transient: bool,
    retry_after: Option<Duration>,
) -> Option<String> {
    let max = ctx.cfg.politeness.max_backoff_secs;
    match retry_after {
        Some(wait) if transient && wait > Duration::from_secs(max) => Some(format!(
            "Retry-After of {} s is beyond politeness.max_backoff_secs ({max} s): not retried",
            wait.as_secs()
        )),
        _ => None,
    }
}

/// The redirect target of a 3xx, as a link one hop further at the same depth.
pub(crate) fn redirect(
    entry: &frontier::Entry,
    page: &Url,
    location: Option<&str>,
) -> Result<Link, String> {
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

/// How a fetch ended, whoever fetched.
#[derive(Debug, Default)]
pub(crate) struct Response {
    pub(crate) status: Option<u16>,
    pub(crate) final_url: String,
    pub(crate) content_type: Option<String>,
    pub(crate) bytes: u64,
    pub(crate) fetch_ms: u64,
    pub(crate) truncated: bool,
    pub(crate) error: Option<String>,
    /// The host is struggling (5xx, 429, no response): it backs off.
    pub(crate) transient: bool,
    pub(crate) retry_after: Option<Duration>,
    /// The fetch as sent and received, to archive (`output.warc`).
    pub(crate) capture: Option<Box<crate::fetch::Capture>>,
}

impl Response {
    /// How a built-in fetch ended, with the URL it ended at and the record's error; its
    /// capture moves to the response.
    pub(crate) fn of(fetched: &mut Fetched, final_url: String, error: Option<String>) -> Self {
        Self {
            status: fetched.status,
            final_url,
            content_type: fetched.content_type.clone(),
            bytes: fetched.bytes,
            fetch_ms: fetched.elapsed.as_millis() as u64,
            truncated: fetched.truncated,
            error,
            transient: fetched.transient,
            retry_after: fetched.retry_after,
            capture: fetched.capture.take(),
        }
    }
}

/// Offers what a fetched page leads to (one frontier call), writes its record and returns
/// the outcome: the end of every fetch, built-in or external.
pub(crate) async fn finish(
    ctx: &Ctx,
    entry: &frontier::Entry,
    r: Response,
    offers: Vec<Link>,
    links_found: usize,
) -> Outcome {
    let links_found = links_found as u64;
    let mut links_new = 0;
    let mut r = r;
    if !offers.is_empty() {
        let mut offers = Retained::new(offers, ctx.frontier.calls_can_fail());
        let admissions = ctx
            .with_frontier("offer", |f| f.offer(Some(&entry.url), offers.take()))
            .await
            .unwrap_or_default();
        links_new = admissions
            .iter()
            .filter(|a| **a == Admission::Admitted)
            .count() as u64;
        // A redirect whose target the frontier refused: the record says why the chain ends.
        if let (Some(300..=399), [Admission::OutOfScope(reason)], None) =
            (r.status, admissions.as_slice(), &r.error)
        {
            r.error = Some(match reason {
                OutOfScope::Redirects => format!(
                    "redirect not followed: more than {} redirects (fetch.max_redirects)",
                    ctx.cfg.fetch.max_redirects
                ),
                other => format!(
                    "redirect not followed: target out of scope ({})",
                    other.name()
                ),
            });
        }
    }
    ctx.counters.bytes.fetch_add(r.bytes, Ordering::Relaxed);
    tracing::debug!(url = %entry.url, status = r.status, bytes = r.bytes, links_found, links_new, "fetched");
    let record = PageRecord {
        url: entry.url.clone(),
        final_url: r.final_url,
        status: r.status,
        depth: entry.depth,
        parent: entry.parent.clone(),
        via: entry.via.as_str(),
        sitemap: entry.sitemap > 0,
        lastmod: entry.lastmod.clone(),
        content_type: r.content_type,
        bytes: r.bytes,
        links_found,
        links_new,
        fetch_ms: r.fetch_ms,
        fetched_at: output::now_rfc3339(),
        attempts: u32::from(entry.attempt) + 1,
        truncated: r.truncated,
        error: r.error,
        warc_file: None,
        warc_offset: None,
    };
    if !write_record(ctx, entry, record, r.capture).await {
        return Outcome::Retry { after: None };
    }
    if r.transient {
        Outcome::HostError {
            retry_after: r.retry_after,
        }
    } else {
        Outcome::Done
    }
}

/// Writes `record` and counts it (by status; a seed's response or its error). `false`: the
/// output failed — the crawl stops and the URL is not done (a resume fetches it again).
async fn write_record(
    ctx: &Ctx,
    entry: &frontier::Entry,
    record: PageRecord,
    capture: Option<Box<crate::fetch::Capture>>,
) -> bool {
    let status_key = record
        .status
        .map_or_else(|| "error".to_owned(), |s| s.to_string());
    *lock(&ctx.counters.by_status).entry(status_key).or_default() += 1;
    if entry.depth == 0 && entry.parent.is_none() {
        match (&record.status, &record.error) {
            (Some(_), _) => {
                ctx.counters.seeds_fetched.fetch_add(1, Ordering::Relaxed);
            }
            (None, error) => {
                let mut errors = lock(&ctx.counters.seed_errors);
                if errors.len() < MAX_LISTED {
                    let why = error.as_deref().unwrap_or("no response");
                    errors.push(format!("{}: {why}", record.url));
                }
            }
        }
    }
    let url = record.url.clone();
    let event = (ctx.events.receiver_count() > 0).then(|| Arc::new(record.clone()));
    if !ctx.output.record(record, capture, entry.id).await {
        tracing::error!(%url, "the output (pages.jsonl or a WARC file) cannot be written; stopping");
        ctx.stop(StopReason::OutputError);
        return false;
    }
    ctx.counters.pages.fetch_add(1, Ordering::Relaxed);
    if let Some(record) = event {
        let _ = ctx.events.send(record);
    }
    true
}

/// `base · 2^attempt`, with ±50% jitter derived from the URL and attempt (no RNG needed, and
/// different URLs of one host spread out).
fn retry_delay(base_ms: u64, attempt: u8, url: &str) -> Duration {
    let exp = base_ms.saturating_mul(1u64 << attempt.min(16));
    let h = url
        .bytes()
        .fold(u64::from(attempt) ^ 0x9E37_79B9_7F4A_7C15, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
    let jitter = (h % 1000) as f64 / 1000.0 + 0.5; // 0.5 ..= 1.5
    Duration::from_millis((exp as f64 * jitter) as u64)
}
