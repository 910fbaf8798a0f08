//! The crawl engine: fetch workers around the frontier.
//!
//! `concurrency` async workers each loop: take a URL from the frontier, check robots.txt,
//! fetch it, offer what it leads to (links, or a redirect's target — which goes through
//! canonicalisation, scope, deduplication and robots like any link), write one `pages.jsonl`
//! line, and complete the lease. Workers are both the consumers of the queue and the
//! producers of new links; a page's links are offered (one call per page) *before* its lease
//! is completed, so the crawl ends exactly when nothing is queued and nothing is in flight.
//!
//! The workers see the frontier only through the [`Frontier`] trait (an `Arc<dyn Frontier>`):
//! the lifecycle of a URL (done once its record is written) and the page budget are the
//! frontier's; the engine reports outcomes. A frontier call that fails (a remote frontier out
//! of reach) is retried with back-off until it succeeds or the crawl stops.
//!
//! Retries (connection errors, timeouts, 5xx, 429) are not loops inside a worker: the URL goes
//! back to the front of its host's queue with a delay (exponential back-off with jitter, at
//! least `Retry-After`), so politeness holds for retries too. HTML parsing runs on a
//! fixed pool of one thread per core ([`parse_pool`]), never on the async reactor.

#![forbid(unsafe_code)]

pub mod config;
pub mod extract;
pub mod fetch;
pub mod output;
pub mod parse_pool;
pub mod robots;
pub mod state;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use frontier::{
    Admission, CanonConfig, End, Frontier, FrontierConfig, FrontierError, HostScope, Lease, Link,
    LocalFrontier, Next, Order, Outcome, Politeness, ScopeConfig,
};
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use url::Url;

pub use config::{ConfigError, CrawlConfig, Loader, DEFAULT_TOML};
use fetch::{Fetcher, Keep};
use output::{Output, PageRecord};
use robots::RobotsCache;

/// Why a crawl could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// No seed URL was usable.
    #[error("no usable seed URL (give --seed URL, --seeds-file FILE or crawl.seeds)")]
    NoSeeds,
    /// A seed is not an http(s) URL.
    #[error("seed `{0}` is not an http(s) URL: {1}")]
    BadSeed(String, String),
    /// The frontier could not be built (scope patterns, filter, spill directory).
    #[error("frontier: {0}")]
    Frontier(#[from] frontier::BuildError),
    /// The HTTP client could not be built.
    #[error("HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    /// The crawl state could not be opened or restored.
    #[error("crawl state: {0}")]
    State(#[from] store::StoreError),
    /// Output files could not be written.
    #[error("output in {0}: {1}")]
    Output(PathBuf, std::io::Error),
    /// The parsing threads could not be started.
    #[error("cannot start the parsing threads: {0}")]
    Threads(std::io::Error),
    /// The seeds could not be offered to the frontier.
    #[error("cannot offer the seeds: {0}")]
    SeedOffer(FrontierError),
}

/// How the crawl ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Nothing queued, nothing in flight.
    Finished,
    /// `max_pages` fetches made.
    MaxPages,
    /// `max_duration_secs` passed.
    MaxDuration,
    /// SIGINT/SIGTERM (or the caller's cancellation).
    Shutdown,
    /// The crawl state could not be written (several checkpoints failed in a row).
    StateError,
    /// `pages.jsonl` could not be written.
    OutputError,
}

/// What `stats.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// How the crawl ended.
    pub stopped_by: StopReason,
    /// Lines written to `pages.jsonl`.
    pub pages: u64,
    /// Pages by final status (`"200"`, `"301"`, …, `"error"` when no response).
    pub by_status: BTreeMap<String, u64>,
    /// URLs not fetched because robots.txt disallows them.
    pub robots_disallowed: u64,
    /// Retries made (transient failures re-queued).
    pub retries: u64,
    /// Body bytes read.
    pub bytes: u64,
    /// Wall time of the crawl.
    pub duration_secs: f64,
    /// `pages / duration_secs`.
    pub pages_per_sec: f64,
    /// The frontier's counters.
    pub frontier: FrontierSummary,
    /// The durable state (absent with `crawl.persist = false`).
    pub state: Option<state::StateSummary>,
}

/// The frontier part of [`Summary`].
#[derive(Debug, Clone, Serialize)]
pub struct FrontierSummary {
    /// Links offered.
    pub offered: u64,
    /// Links admitted as new.
    pub admitted: u64,
    /// Links the visited set had seen.
    pub duplicates: u64,
    /// Links refused, by reason.
    pub out_of_scope: BTreeMap<String, u64>,
    /// URLs still queued (memory + disk) when the crawl stopped.
    pub queued: u64,
    /// Most URLs held in memory at once.
    pub max_queued_memory: u64,
    /// Bits of the visited-set filter.
    pub filter_bits: u64,
    /// Fraction of them set.
    pub filter_fill: f64,
    /// The filter's estimated false-positive probability now.
    pub filter_fpp: f64,
    /// Slices of the scalable filter.
    pub filter_slices: u64,
}

#[derive(Debug, Default)]
struct Counters {
    pages: AtomicU64,
    robots_disallowed: AtomicU64,
    retries: AtomicU64,
    bytes: AtomicU64,
    by_status: Mutex<BTreeMap<String, u64>>,
}

/// Everything the workers share.
#[derive(Debug)]
struct Ctx {
    cfg: CrawlConfig,
    frontier: Arc<dyn Frontier>,
    fetcher: Fetcher,
    robots: RobotsCache,
    parse: parse_pool::ParsePool,
    output: Output,
    counters: Counters,
    stop: Mutex<Option<StopReason>>,
    store: Option<Arc<store::Store>>,
    /// Workers waiting for the state's checkpoints.
    pause: state::Pause,
}

impl Ctx {
    fn stop(&self, reason: StopReason) {
        let mut s = self.stop.lock().unwrap_or_else(|e| e.into_inner());
        if s.is_none() {
            *s = Some(reason);
            tracing::info!(?reason, "stopping: no more URLs are handed out");
        }
        self.frontier.close();
    }

    fn stopped(&self) -> bool {
        self.stop
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Runs a frontier call until it succeeds, waiting with back-off (50 ms doubling to 5 s)
    /// between failures; `None` once the crawl is stopping and the call still fails.
    async fn with_frontier<'a, T>(
        &'a self,
        what: &str,
        mut call: impl FnMut(&'a dyn Frontier) -> frontier::BoxFuture<'a, Result<T, FrontierError>>,
    ) -> Option<T> {
        let mut wait = Duration::from_millis(50);
        loop {
            match call(&*self.frontier).await {
                Ok(v) => return Some(v),
                Err(e) if self.stopped() => {
                    tracing::warn!(error = %e, call = what, "frontier call failed while stopping");
                    return None;
                }
                Err(e) => {
                    tracing::warn!(error = %e, call = what, retry_in = ?wait, "frontier call failed");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(5));
                }
            }
        }
    }
}

/// Builds the frontier configuration from the crawl configuration.
pub fn frontier_config(cfg: &CrawlConfig) -> FrontierConfig {
    let f = &cfg.frontier;
    FrontierConfig {
        canon: CanonConfig {
            sort_query: f.sort_query,
            drop_params: f.drop_params.clone(),
            strip_www: f.strip_www,
            max_url_len: f.max_url_len as usize,
        },
        scope: ScopeConfig {
            hosts: match f.scope.as_str() {
                "same-host" => HostScope::SameHost,
                "domains" => HostScope::Domains(f.domains.clone()),
                "any" => HostScope::Any,
                _ => HostScope::SameDomain,
            },
            include: f.include.clone(),
            exclude: f.exclude.clone(),
            max_depth: Some(cfg.crawl.max_depth),
            max_path_segments: f.max_path_segments as usize,
            max_repeated_segments: f.max_repeated_segments as usize,
            max_query_params: f.max_query_params as usize,
        },
        dedup: if f.dedup == "exact" {
            frontier::Dedup::Exact
        } else {
            frontier::Dedup::Bloom
        },
        expected_urls: f.expected_urls,
        fpp: f.fpp,
        memory_capacity: f.memory_capacity as usize,
        spill_dir: (!f.spill_dir.is_empty()).then(|| PathBuf::from(&f.spill_dir)),
        order: if f.order == "depth-first" {
            Order::DepthFirst
        } else {
            Order::BreadthFirst
        },
        max_pages: (cfg.crawl.max_pages > 0).then_some(cfg.crawl.max_pages),
        max_pages_per_host: (f.max_pages_per_host > 0).then_some(f.max_pages_per_host),
        max_redirects: cfg.fetch.max_redirects,
        politeness: Politeness {
            delay: Duration::from_millis(cfg.politeness.delay_ms),
            max_per_host: cfg.politeness.max_per_host,
            backoff_base: Duration::from_millis(cfg.fetch.retry_base_ms.max(1)),
            max_backoff: Duration::from_secs(cfg.politeness.max_backoff_secs),
        },
    }
}

/// How progress is shown while crawling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// A live status line (stderr is a terminal).
    Bar,
    /// A structured log line every `crawl.progress_secs`.
    Log,
}

/// How to run a crawl, besides its configuration.
#[derive(Debug, Clone, Copy)]
pub struct RunOptions {
    /// How progress is shown.
    pub progress: ProgressMode,
    /// Delete an existing crawl state (and empty `pages.jsonl`) instead of resuming.
    pub fresh: bool,
}

/// Runs a crawl to its end (or until `shutdown` is cancelled), writing `pages.jsonl` and
/// `stats.json` into `crawl.out_dir`. With `crawl.persist`, an existing state resumes.
pub async fn run(
    cfg: CrawlConfig,
    shutdown: CancellationToken,
    opts: RunOptions,
) -> Result<Summary, EngineError> {
    let progress = opts.progress;
    let started = Instant::now();
    let seeds: Vec<Url> = cfg
        .crawl
        .seeds
        .iter()
        .map(|s| {
            let u =
                Url::parse(s.trim()).map_err(|e| EngineError::BadSeed(s.clone(), e.to_string()))?;
            if matches!(u.scheme(), "http" | "https") {
                Ok(u)
            } else {
                Err(EngineError::BadSeed(
                    s.clone(),
                    "only http and https are crawled".into(),
                ))
            }
        })
        .collect::<Result<_, _>>()?;
    if seeds.is_empty() {
        return Err(EngineError::NoSeeds);
    }
    let seed_strs: Vec<&str> = seeds.iter().map(Url::as_str).collect();
    let local = LocalFrontier::new(frontier_config(&cfg), &seed_strs)?;
    let fetcher = Fetcher::new(&cfg.fetch, &cfg.crawl.user_agent)?;
    let out_dir = cfg.crawl.out_dir.clone();
    let (local, store, mut state_summary) = if cfg.crawl.persist {
        let (f, s, summary) = state::open(&cfg, local, opts.fresh)?;
        (f, Some(Arc::new(s)), Some(summary))
    } else {
        (local, None, None)
    };
    let frontier: Arc<dyn Frontier> = Arc::new(local);
    // A URL is done in the state only once its line is written (workers complete a lease
    // after `Output::record` returns); the state syncs the file before each checkpoint.
    let (output, writer, sync) =
        Output::open(&out_dir, opts.fresh).map_err(|e| EngineError::Output(out_dir.clone(), e))?;
    if let Some(s) = &store {
        s.set_before_commit(move || sync.sync_data());
    }
    let seed_links = seeds.iter().map(|u| Link::new(u.clone(), 0)).collect();
    frontier
        .offer(None, seed_links)
        .await
        .map_err(EngineError::SeedOffer)?;
    let robots = match (&store, state_summary.as_mut()) {
        (Some(store), Some(summary)) => state::robots_cache(&cfg.crawl.user_agent, store, summary)?,
        _ => RobotsCache::new(&cfg.crawl.user_agent),
    };
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    let parse = parse_pool::ParsePool::new(threads).map_err(EngineError::Threads)?;
    let ctx = Arc::new(Ctx {
        robots,
        parse,
        cfg,
        frontier,
        fetcher,
        output,
        counters: Counters::default(),
        stop: Mutex::new(None),
        store: store.clone(),
        pause: state::Pause::default(),
    });

    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..ctx.cfg.crawl.concurrency {
        workers.spawn(worker(Arc::clone(&ctx)));
    }

    // Stop conditions other than "finished": the duration limit and the shutdown signal.
    let deadline = (ctx.cfg.crawl.max_duration_secs > 0).then(|| {
        tokio::time::Instant::now() + Duration::from_secs(ctx.cfg.crawl.max_duration_secs)
    });
    let progress = match progress {
        ProgressMode::Bar => spawn_bar(Arc::clone(&ctx), started),
        ProgressMode::Log => spawn_progress(Arc::clone(&ctx), started),
    };
    let heartbeat = spawn_status(Arc::clone(&ctx), started);
    let stop_signal = async {
        tokio::select! {
            _ = shutdown.cancelled() => StopReason::Shutdown,
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            } => StopReason::MaxDuration,
        }
    };
    tokio::select! {
        _ = join_all(&mut workers) => {}
        reason = stop_signal => ctx.stop(reason),
    }
    // Let in-flight fetches finish (their records are written), but not forever.
    let drain = Duration::from_secs(ctx.cfg.crawl.drain_secs);
    if tokio::time::timeout(drain, join_all(&mut workers))
        .await
        .is_err()
    {
        tracing::warn!(
            secs = drain.as_secs(),
            "in-flight fetches did not finish in time; abandoning them"
        );
        workers.abort_all();
        join_all(&mut workers).await;
    }
    progress.abort();
    let _ = progress.await;
    heartbeat.abort();
    let _ = heartbeat.await;

    let stats = frontier_stats(&ctx).await;
    let mut summary = summarize(&ctx, &stats, started);
    let final_status = status(&ctx, &stats, started, state_name(summary.stopped_by));
    let exact = ctx.cfg.frontier.dedup == "exact";
    // Every worker is gone, so this drops the last sender: the writer drains its queue,
    // writes every record and ends.
    drop(ctx);
    let written = match tokio::time::timeout(Duration::from_secs(30), writer).await {
        Ok(Ok(Ok(_))) => Ok(()),
        Ok(Ok(Err(e))) => Err(e),
        Ok(Err(e)) => Err(std::io::Error::other(e)),
        Err(_) => Err(std::io::Error::other("the output writer did not finish")),
    };
    if let Err(e) = written {
        // Still commit what was written and acknowledged, so a resume repeats little.
        if let Some(store) = &store {
            let _ = store.close();
        }
        return Err(EngineError::Output(out_dir, e));
    }
    // Every record is written and reported done: the final checkpoint makes it all durable
    // (a resume after a graceful stop fetches nothing twice).
    if let Some(store) = &store {
        store.close()?;
        if let Some(s) = state_summary.as_mut() {
            let stats = store.stats();
            s.checkpoints = stats.checkpoints;
            if exact {
                s.exact_index = Some(state::ExactIndexSummary {
                    fingerprints: stats.indexed,
                    bytes: stats.index_bytes,
                    complete: stats.index_complete,
                });
            }
        }
    }
    summary.state = state_summary;
    output::write_stats(&out_dir, &summary).map_err(|e| EngineError::Output(out_dir.clone(), e))?;
    output::write_status(&out_dir, &final_status)
        .map_err(|e| EngineError::Output(out_dir.clone(), e))?;
    Ok(summary)
}

fn state_name(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Finished => "finished",
        StopReason::MaxPages => "max_pages",
        StopReason::MaxDuration => "max_duration",
        StopReason::Shutdown => "shutdown",
        StopReason::StateError => "state_error",
        StopReason::OutputError => "output_error",
    }
}

/// The frontier's counters; empty ones (and a warning) when the frontier cannot answer.
async fn frontier_stats(ctx: &Ctx) -> frontier::Stats {
    ctx.frontier.stats().await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "frontier statistics unavailable");
        frontier::Stats::default()
    })
}

fn status(ctx: &Ctx, s: &frontier::Stats, started: Instant, state: &str) -> output::Status {
    let pages = ctx.counters.pages.load(Ordering::Relaxed);
    output::Status {
        state: state.to_owned(),
        pid: std::process::id(),
        updated_at: output::now_rfc3339(),
        updated_unix_ms: output::now_unix_ms(),
        every_secs: ctx.cfg.crawl.status_secs,
        pages,
        pages_per_sec: pages as f64 / started.elapsed().as_secs_f64().max(1e-9),
        queued: s.queued,
        in_flight: s.in_flight,
        hosts: s.hosts,
        filter_fill: s.filter_fill(),
        filter_fpp: s.filter_fpp,
        state_backlog: ctx.store.as_ref().map_or(0, |st| st.backlog()),
        paused: ctx.pause.active(),
        paused_secs: ctx.pause.secs(),
    }
}

/// Checkpoints failed in a row after which the crawl stops.
const STATE_FAILURES_TO_STOP: u64 = 3;

/// Rewrites `status.json` every `crawl.status_secs`: a heartbeat that stops when the runtime
/// stops making progress, which is what `crawler health` checks.
fn spawn_status(ctx: Arc<Ctx>, started: Instant) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(ctx.cfg.crawl.status_secs.max(1)));
        loop {
            tick.tick().await;
            if let Some(store) = &ctx.store {
                let s = store.stats();
                if s.consecutive_failures >= STATE_FAILURES_TO_STOP {
                    tracing::error!(
                        failures = s.consecutive_failures,
                        error = s.last_error.as_deref().unwrap_or(""),
                        "the crawl state cannot be written; stopping (nothing new would be durable)"
                    );
                    ctx.stop(StopReason::StateError);
                }
            }
            let stats = frontier_stats(&ctx).await;
            let st = status(&ctx, &stats, started, "running");
            let dir = ctx.cfg.crawl.out_dir.clone();
            match tokio::task::spawn_blocking(move || output::write_status(&dir, &st)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "cannot write status.json"),
                Err(_) => return,
            }
        }
    })
}

async fn join_all(set: &mut tokio::task::JoinSet<()>) {
    while set.join_next().await.is_some() {}
}

/// A one-line live status on a terminal: pages, rate, queue (memory + disk), in flight,
/// hosts, filter fill and estimated FPP.
fn spawn_bar(ctx: Arc<Ctx>, started: Instant) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        // Cleared when the task is aborted at the end of the crawl.
        struct Clear(indicatif::ProgressBar);
        impl Drop for Clear {
            fn drop(&mut self) {
                self.0.finish_and_clear();
            }
        }
        let bar = Clear(bar);
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tick.tick().await;
            let s = frontier_stats(&ctx).await;
            let pages = ctx.counters.pages.load(Ordering::Relaxed);
            let rate = pages as f64 / started.elapsed().as_secs_f64().max(1e-9);
            bar.0.set_message(format!(
                "{pages} pages, {rate:.0}/s | queue {} mem + {} disk | {} in flight | {} hosts | filter {:.2}% full, fpp {:.1e}",
                s.extra("queued_memory"),
                s.extra("queued_disk"),
                s.in_flight,
                s.hosts,
                100.0 * s.filter_fill(),
                s.filter_fpp
            ));
            bar.0.tick();
        }
    })
}

fn spawn_progress(ctx: Arc<Ctx>, started: Instant) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let every = Duration::from_secs(ctx.cfg.crawl.progress_secs.max(1));
        let mut tick = tokio::time::interval(every);
        tick.tick().await;
        loop {
            tick.tick().await;
            let s = frontier_stats(&ctx).await;
            let pages = ctx.counters.pages.load(Ordering::Relaxed);
            let secs = started.elapsed().as_secs_f64();
            tracing::info!(
                pages,
                pages_per_sec = format_args!("{:.0}", pages as f64 / secs.max(1e-9)),
                queued_memory = s.extra("queued_memory"),
                queued_disk = s.extra("queued_disk"),
                in_flight = s.in_flight,
                hosts = s.hosts,
                filter_fill = format_args!("{:.4}", s.filter_fill()),
                filter_fpp = format_args!("{:.2e}", s.filter_fpp),
                "progress"
            );
        }
    })
}

fn summarize(ctx: &Ctx, s: &frontier::Stats, started: Instant) -> Summary {
    let c = &ctx.counters;
    let pages = c.pages.load(Ordering::Relaxed);
    let secs = started.elapsed().as_secs_f64();
    Summary {
        stopped_by: ctx
            .stop
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or(StopReason::Finished),
        pages,
        by_status: c
            .by_status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone(),
        robots_disallowed: c.robots_disallowed.load(Ordering::Relaxed),
        retries: c.retries.load(Ordering::Relaxed),
        bytes: c.bytes.load(Ordering::Relaxed),
        duration_secs: secs,
        pages_per_sec: pages as f64 / secs.max(1e-9),
        frontier: FrontierSummary {
            offered: s.offered,
            admitted: s.admitted,
            duplicates: s.duplicates,
            out_of_scope: s
                .out_of_scope
                .iter()
                .map(|(r, n)| (r.name().to_owned(), *n))
                .collect(),
            queued: s.queued,
            max_queued_memory: s.extra("max_queued_memory"),
            filter_bits: s.filter_bits,
            filter_fill: s.filter_fill(),
            filter_fpp: s.filter_fpp,
            filter_slices: s.extra("filter_slices"),
        },
        state: None,
    }
}

async fn worker(ctx: Arc<Ctx>) {
    loop {
        if let Some(store) = &ctx.store {
            ctx.pause
                .wait(store, state::BACKLOG_LIMIT, || ctx.stopped())
                .await;
        }
        let Some(next) = ctx.with_frontier("next", |f| f.next()).await else {
            break;
        };
        let lease = match next {
            Next::Lease(lease) => lease,
            Next::End(End::Budget) => {
                ctx.stop(StopReason::MaxPages);
                break;
            }
            Next::End(End::Finished | End::Closed) => break,
        };
        let outcome = process(&ctx, &lease).await;
        // Retried with a copy: a remote call that failed may not have taken the lease.
        let completed = ctx
            .with_frontier("complete", |f| f.complete(lease.clone(), outcome.clone()))
            .await;
        if completed.is_none() {
            break;
        }
    }
}

/// Fetches one leased URL, offers what it leads to and writes its record; returns the
/// outcome for the frontier.
async fn process(ctx: &Ctx, lease: &Lease) -> Outcome {
    let entry = lease.entry();
    let Ok(url) = Url::parse(&entry.url) else {
        // The frontier only queues canonical URLs, so this cannot happen; if it does, the URL
        // must not come back on every resume.
        return Outcome::Skipped;
    };
    if ctx.cfg.crawl.respect_robots {
        let verdict = ctx.robots.check(&ctx.fetcher, &url).await;
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
        }
        if !verdict.allowed {
            ctx.counters
                .robots_disallowed
                .fetch_add(1, Ordering::Relaxed);
            tracing::debug!(%url, "disallowed by robots.txt");
            return Outcome::Skipped;
        }
    }
    let mut fetched = ctx.fetcher.fetch(url.as_str(), Keep::Html).await;
    let attempts = u32::from(entry.attempt) + 1;
    if fetched.transient && entry.attempt < ctx.cfg.fetch.max_retries {
        ctx.counters.retries.fetch_add(1, Ordering::Relaxed);
        let backoff = retry_delay(ctx.cfg.fetch.retry_base_ms, entry.attempt, &entry.url);
        let after = fetched.retry_after.map_or(backoff, |r| r.max(backoff));
        tracing::debug!(%url, attempt = attempts, status = fetched.status, error = fetched.error.as_deref(), ?after, "retrying later");
        return Outcome::Retry { after: Some(after) };
    }

    let mut links_found = 0;
    let mut links_new = 0;
    let mut final_url = entry.url.clone();
    let mut error = fetched.error.clone();
    let mut offers = Vec::new();
    match fetched.status {
        Some(300..=399) => match fetched.location.as_deref().map(|l| url.join(l.trim())) {
            Some(Ok(target)) => {
                final_url = target.to_string();
                offers.push(Link {
                    url: target,
                    depth: entry.depth,
                    hops: entry.hops.saturating_add(1),
                });
            }
            Some(Err(e)) => error = Some(format!("bad Location header: {e}")),
            None => error = Some("redirect without a Location header".into()),
        },
        Some(200) if !fetched.body.is_empty() => {
            // Moved, not copied: a body may be up to `max_body_bytes`.
            let body = std::mem::take(&mut fetched.body);
            let ct = fetched.content_type.clone();
            let page = url.clone();
            let respect = ctx.cfg.crawl.respect_nofollow;
            let job = move || extract::extract(&body, ct.as_deref(), &page, respect);
            let extracted = ctx.parse.run(job).await;
            match extracted {
                Ok(e) => {
                    let depth = entry.depth + 1;
                    offers = e.links.into_iter().map(|u| Link::new(u, depth)).collect();
                }
                Err(e) => error = Some(format!("link extraction failed: {e}")),
            }
        }
        _ => {}
    }
    if !offers.is_empty() {
        links_found = offers.len() as u64;
        // Retried with a copy of the links: a remote call that failed took them.
        let admissions = ctx
            .with_frontier("offer", |f| f.offer(Some(&entry.url), offers.clone()))
            .await
            .unwrap_or_default();
        links_new = admissions
            .iter()
            .filter(|a| **a == Admission::Admitted)
            .count() as u64;
    }

    let status_key = fetched
        .status
        .map_or_else(|| "error".to_owned(), |s| s.to_string());
    *ctx.counters
        .by_status
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(status_key)
        .or_default() += 1;
    ctx.counters
        .bytes
        .fetch_add(fetched.bytes, Ordering::Relaxed);
    tracing::debug!(%url, status = fetched.status, bytes = fetched.bytes, links_found, links_new, "fetched");
    let written = ctx
        .output
        .record(PageRecord {
            url: entry.url.clone(),
            final_url,
            status: fetched.status,
            depth: entry.depth,
            parent: entry.parent.clone(),
            content_type: fetched.content_type.clone(),
            bytes: fetched.bytes,
            links_found,
            links_new,
            fetch_ms: fetched.elapsed.as_millis() as u64,
            fetched_at: output::now_rfc3339(),
            attempts,
            truncated: fetched.truncated,
            error,
        })
        .await;
    if !written {
        // Not done: a resume fetches it again.
        tracing::error!(%url, "pages.jsonl cannot be written; stopping");
        ctx.stop(StopReason::OutputError);
        return Outcome::Retry { after: None };
    }
    ctx.counters.pages.fetch_add(1, Ordering::Relaxed);
    if fetched.transient {
        Outcome::HostError {
            retry_after: fetched.retry_after,
        }
    } else {
        Outcome::Done
    }
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
