//! The crawl engine: fetch workers around the frontier.
//!
//! `concurrency` async workers each loop: take a URL from the frontier, check robots.txt,
//! fetch it, offer what it leads to (links, or a redirect's target — which goes through
//! canonicalisation, scope, deduplication and robots like any link), write one `pages.jsonl`
//! line, and complete the lease. Workers are both the consumers of the queue and the
//! producers of new links; a page's links are offered (one call per page) *before* its lease
//! is completed, so the crawl ends exactly when nothing is queued and nothing is in flight.
//!
//! The engine is handed its frontier ([`CrawlFrontier`], built by the `launch` crate) and sees
//! it only through the frontier traits: [`Frontier`] while crawling, [`Resumable`] while a
//! durable crawl is restored, [`RobotsShare`] for a shared crawl's robots.txt verdicts. It names
//! no implementation. The lifecycle of a URL (done once its record is written) and the page
//! budget are the frontier's; the engine reports outcomes. A frontier call that fails (a remote frontier out
//! of reach) is retried with back-off until it succeeds or the crawl stops.
//!
//! Retries (connection errors, timeouts, 5xx, 429) are not loops inside a worker: the URL goes
//! back to the front of its host's queue with a delay (exponential back-off with jitter, at
//! least `Retry-After`), so politeness holds for retries too. HTML parsing runs on a
//! fixed pool of one thread per core ([`parse_pool`]), never on the async reactor.

#![forbid(unsafe_code)]

pub use ::config;
pub use output::{archive, clock};
pub mod control;
pub mod crawls;
pub use ::fetch;
pub use ::output;
pub mod parse_pool;
pub mod robots;
mod sitemap;
pub use ::resume;
mod sync;

mod counters;
mod frontier_call;
mod frontier_config;
pub use frontier_config::frontier_config;
mod frontier_health;
mod governor;
mod handles;
mod lease_table;
mod leases;
mod metrics;
mod pause;
mod placements;
mod recent;
mod record;
mod report;
mod revisit;
mod run;
mod sitemap_budget;
mod stop;
mod tail;
mod url_reads;
mod worker;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use frontier::{Frontier, FrontierError, Link, Resumable, RobotsShare};
use tokio_util::sync::CancellationToken;
use url::Url;

pub use config::{
    ConfigError, CrawlConfig, DedupMode, FrontierBackend, Loader, LogFormat, QueueOrder, ScopeKind,
    Workers, DEFAULT_TOML,
};
pub use control::{Control, ForgetResult, HostView, MetricsSnapshot, RecrawlResult, SeedResult};
use fetch::Fetcher;
use handles::{Handles, Parts};
pub use leases::{Completed, Completion, Leased};
pub use metrics::{HistogramSnapshot, LATENCY_BUCKETS};
use output::Output;
use report::{spawn_bar, spawn_progress, spawn_status, state_name, status, summarize, Report};
pub use report::{FrontierSummary, Summary};
use robots::RobotsCache;
pub use stop::StopReason;
pub use url_reads::UrlPlace;
use worker::worker;

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
    /// The HTTP client could not be built.
    #[error("HTTP client: {0}")]
    Client(#[from] fetch::ClientError),
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
    /// `crawl.workers = 0` outside `crawler serve`: nothing would fetch.
    #[error("crawl.workers = 0 leaves the crawling to external fetchers: use `crawler serve`")]
    NoWorkers,
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
impl EngineError {
    /// Whether something outside the crawl is unreachable (a shared frontier), rather than
    /// the crawl's settings or files being wrong.
    pub fn is_unavailable(&self) -> bool {
        match self {
            EngineError::SeedOffer(e) => e.is_retryable(),
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct RunOptions {
    /// How progress is shown.
    pub progress: ProgressMode,
    /// Delete an existing crawl state (and empty `pages.jsonl`) instead of resuming.
    pub fresh: bool,
    /// Run as a service: the crawl does not end when the frontier runs dry (it waits for
    /// seeds), only on shutdown; it may start without seeds.
    pub serve: bool,
}

/// The frontier a crawl runs on. The caller builds it (the `launch` crate: in memory, durable
/// or shared in Redis) from [`frontier_config`] and the [`check`]ed seeds; the engine names no
/// implementation.
#[derive(Debug)]
pub enum CrawlFrontier {
    /// A frontier in this process. With `crawl.persist` the engine restores it from the
    /// crawl state and has it journal there from then on.
    Local(Box<dyn Resumable>),
    /// A frontier the crawl's processes share: the crawl's state is the frontier's (nothing
    /// of it is kept here), and robots.txt verdicts are shared through `robots`.
    Shared {
        /// The frontier.
        frontier: Arc<dyn Frontier>,
        /// Where the processes share robots.txt verdicts.
        robots: Arc<dyn RobotsShare>,
    },
}

/// Runs a crawl on `frontier` to its end (or until `shutdown` is cancelled), writing
/// `pages.jsonl` and `stats.json` into `crawl.out_dir`. With `crawl.persist`, an existing
/// state resumes.
pub async fn run(
    cfg: CrawlConfig,
    frontier: CrawlFrontier,
    shutdown: CancellationToken,
    opts: RunOptions,
) -> Result<Summary, EngineError> {
    start(cfg, frontier, opts).await?.finish(shutdown).await
}

/// A crawl that has started: its workers run; [`control`](Running::control) is the handle
/// a service uses, [`finish`](Running::finish) waits for the end and writes the output.
#[derive(Debug)]
pub struct Running {
    report: Arc<Report>,
    output: Output,
    /// The settings the end of a crawl applies.
    max_duration_secs: u64,
    drain_secs: u64,
    exact: bool,
    serving: bool,
    control: Control,
    workers: tokio::task::JoinSet<()>,
    progress: tokio::task::JoinHandle<()>,
    heartbeat: tokio::task::JoinHandle<()>,
    reaper: tokio::task::JoinHandle<()>,
    reaper_stop: CancellationToken,
    writer: tokio::task::JoinHandle<std::io::Result<u64>>,
    store: Option<Arc<store::Store>>,
    state_summary: Option<resume::StateSummary>,
    out_dir: PathBuf,
}

/// The crawl's seeds, after the checks a crawl must pass before anything is built for it:
/// every seed an http(s) URL, at least one outside a service, and workers to fetch them.
pub fn check(cfg: &CrawlConfig, opts: RunOptions) -> Result<Vec<Url>, EngineError> {
    let seeds = parse_seeds(cfg)?;
    if seeds.is_empty() && !opts.serve {
        return Err(EngineError::NoSeeds);
    }
    if cfg.crawl.workers.count(cfg.crawl.concurrency) == 0 && !opts.serve {
        return Err(EngineError::NoWorkers);
    }
    Ok(seeds)
}

fn parse_seeds(cfg: &CrawlConfig) -> Result<Vec<Url>, EngineError> {
    cfg.crawl
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
        .collect()
}

/// The seeds as given and as canonicalised (`strip_www` may change the host).
pub(crate) fn operator_origins(seeds: &[Url], canon: &frontier::Canonicalizer) -> Vec<Url> {
    let mut origins = seeds.to_vec();
    origins.extend(
        seeds
            .iter()
            .filter_map(|s| canon.canonicalize(s.as_str(), None).ok()),
    );
    origins
}

/// The seeds as links.
fn seed_links(seeds: &[Url]) -> Vec<Link> {
    seeds
        .iter()
        .map(|u| Link {
            via: frontier::Via::Seed,
            ..Link::new(u.clone(), 0)
        })
        .collect()
}

/// Opens the state and the output, offers the seeds and starts the workers on `frontier`.
pub async fn start(
    cfg: CrawlConfig,
    frontier: CrawlFrontier,
    opts: RunOptions,
) -> Result<Running, EngineError> {
    let started = Instant::now();
    let seeds = check(&cfg, opts)?;
    let workers_wanted = cfg.crawl.workers.count(cfg.crawl.concurrency);
    let canon = Arc::new(frontier::Canonicalizer::new(frontier_config(&cfg).canon));
    let mut fetcher = Fetcher::new(
        &cfg.fetch,
        &cfg.crawl.user_agent,
        cfg.politeness.max_per_host,
    )?;
    // The operator's seeds may be private addresses: the SSRF guard allows the socket
    // addresses they resolve to (as written, and as the crawl will fetch them).
    fetcher.allow_seeds(&operator_origins(&seeds, &canon)).await;
    let out_dir = cfg.crawl.out_dir.clone();
    let mut warc = if cfg.output.warc {
        let dir = archive::dir(&cfg);
        if opts.fresh {
            archive::remove_files(&dir).map_err(|e| EngineError::Output(dir.clone(), e))?;
        }
        let writer = warc::WarcWriter::new(archive::config(&cfg))
            .map_err(|warc::WarcError::Io { path, source }| EngineError::Output(path, source))?;
        fetcher = fetcher.archiving(&dir);
        Some(writer)
    } else {
        None
    };
    // Records of earlier runs of this crawl (a resumed one): pages_total counts them.
    let mut earlier_pages = 0;
    let mut robots_share = None;
    let (frontier, store, mut state_summary): (Arc<dyn Frontier>, _, _) = match frontier {
        CrawlFrontier::Shared { frontier, robots } => {
            if cfg.crawl.persist {
                tracing::info!(
                    "crawl.persist: the local crawl state is not used with the shared frontier"
                );
            }
            robots_share = Some(robots);
            (frontier, None, None)
        }
        CrawlFrontier::Local(local) if cfg.crawl.persist => {
            let (f, s, mut summary, mut tail) = resume::open(&cfg, local, opts.fresh)?;
            // Before anything is appended: the output after the last checkpoint made to agree
            // with the state (exactly one record per fetched URL). Pages fetched since then
            // are read back from the archive rather than fetched again.
            let replayed = match &warc {
                Some(w) => {
                    tail.replay(&*f, &resume::replay::Rules::of(&cfg), w, seed_links(&seeds))
                }
                None => resume::reconcile::Replayed::default(),
            };
            let reconciled = tail
                .apply(&out_dir, warc.as_mut())
                .map_err(|e| EngineError::Output(out_dir.clone(), e))?;
            for entry in replayed.requeue {
                f.restore_entry(entry);
            }
            // Their lines are kept (and synced): now they may be done. No output mark is
            // committed before the hook below, so none covers them before these are
            // journaled.
            for &id in &replayed.done {
                s.done(id, true);
            }
            f.restore_pages(replayed.done.len() as u64);
            earlier_pages = summary.pages_before + replayed.done.len() as u64;
            if s.resumed() {
                summary.output_tail = Some(reconciled);
            }
            (
                Arc::from(f as Box<dyn Frontier>),
                Some(Arc::new(s)),
                Some(summary),
            )
        }
        CrawlFrontier::Local(local) => (Arc::from(local as Box<dyn Frontier>), None, None),
    };
    // A URL is done in the state only once its line is written (workers complete a lease
    // after `Output::record` returns); the state writes out what is buffered and syncs the
    // file before each checkpoint. Without one, a URL is done as soon as its lease is
    // completed (the shared frontier), so a line must be in the file by then.
    let lines = match (warc, &store) {
        (Some(w), _) => output::Lines::Archived(Box::new(w)),
        (None, Some(_)) => output::Lines::UntilCheckpoints,
        (None, None) => output::Lines::WriteThrough,
    };
    let (output, writer, sync) = Output::open(&out_dir, opts.fresh, lines)
        .map_err(|e| EngineError::Output(out_dir.clone(), e))?;
    if let Some(s) = &store {
        s.set_before_commit(move || sync.sync());
        let output = output.clone();
        s.set_output_mark(move || serde_json::to_vec(&output.mark()).unwrap_or_default());
    }
    if !seeds.is_empty() {
        frontier
            .offer(None, seed_links(&seeds))
            .await
            .map_err(EngineError::SeedOffer)?;
    }
    let robots = match (&store, state_summary.as_mut()) {
        (Some(store), Some(summary)) => robots::restored(&cfg.crawl.user_agent, store, summary)?,
        _ => RobotsCache::new(&cfg.crawl.user_agent),
    };
    let robots = if cfg.output.warc {
        robots.with_archive(output.clone())
    } else {
        robots
    };
    let robots = match robots_share {
        Some(share) => robots.with_shared(share),
        None => robots,
    };
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    let parse = parse_pool::ParsePool::new(threads).map_err(EngineError::Threads)?;
    let governed = Arc::clone(&frontier);
    let Handles {
        worker: crew,
        external,
        recorder,
        report,
    } = handles::wire(
        &cfg,
        opts.serve,
        frontier,
        Parts {
            fetcher,
            robots,
            parse,
            output: output.clone(),
            store: store.clone(),
            earlier_pages,
            started,
        },
    );
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..workers_wanted {
        workers.spawn(worker(crew.clone()));
    }
    drop(crew);
    let progress = match opts.progress {
        ProgressMode::Bar => spawn_bar(Arc::clone(&report), started),
        ProgressMode::Log => spawn_progress(Arc::clone(&report), started),
    };
    let heartbeat = spawn_status(Arc::clone(&report), started);
    let reaper_stop = CancellationToken::new();
    if let Some(governor) = &report.governor {
        tokio::spawn(Arc::clone(governor).run(
            governed,
            cfg.crawl.concurrency as usize,
            usize::try_from(cfg.frontier.memory_capacity).unwrap_or(usize::MAX),
            reaper_stop.clone(),
        ));
    }
    let reaper = tokio::spawn(
        external
            .clone()
            .reap(Duration::from_millis(250), reaper_stop.clone()),
    );
    Ok(Running {
        control: Control {
            report: Arc::clone(&report),
            leases: external,
            recorder,
            canon,
            allow_private_seeds: cfg.service.allow_private_seeds,
            lease_secs: cfg.service.lease_secs,
            recrawl: revisit::policy(&cfg),
        },
        report,
        output,
        max_duration_secs: cfg.crawl.max_duration_secs,
        drain_secs: cfg.crawl.drain_secs,
        exact: cfg.frontier.dedup == DedupMode::Exact,
        serving: opts.serve,
        workers,
        progress,
        heartbeat,
        reaper,
        reaper_stop,
        writer,
        store,
        state_summary,
        out_dir,
    })
}

impl Running {
    /// The handle a service uses on this crawl.
    pub fn control(&self) -> Control {
        self.control.clone()
    }

    /// Waits for the end of the crawl (finished, a budget, `max_duration_secs`, or
    /// `shutdown`; a service ends only on the last two), drains, and writes the output.
    pub async fn finish(self, shutdown: CancellationToken) -> Result<Summary, EngineError> {
        let Running {
            report,
            output,
            max_duration_secs,
            drain_secs,
            exact,
            serving,
            control,
            mut workers,
            progress,
            heartbeat,
            reaper,
            reaper_stop,
            writer,
            store,
            mut state_summary,
            out_dir,
        } = self;
        drop(control);
        let started = report.started;
        // Stop conditions other than "finished": the duration limit and the shutdown signal.
        let deadline = (max_duration_secs > 0)
            .then(|| tokio::time::Instant::now() + Duration::from_secs(max_duration_secs));
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
            // A service's workers may end (a budget) while the service goes on.
            _ = join_all(&mut workers), if !serving => {}
            reason = stop_signal => report.run.stop(reason),
        }
        // Let in-flight fetches finish (their records are written), but not forever.
        let drain = Duration::from_secs(drain_secs);
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
        // External leases still out go back to the queue (a resume serves them).
        reaper_stop.cancel();
        let _ = reaper.await;
        progress.abort();
        let _ = progress.await;
        heartbeat.abort();
        let _ = heartbeat.await;

        let stats = report.frontier.stats().await;
        let mut summary = summarize(&report, &stats, started);
        let final_status = status(&report, &stats, started, state_name(summary.stopped_by));
        // Every worker is gone: the writer writes every record sent and ends (a service's
        // handles may still be alive; their records are refused from now on).
        output.close().await;
        drop((report, output));
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
        // Every record is written and reported done: the final checkpoint makes it all
        // durable (a resume after a graceful stop fetches nothing twice).
        if let Some(store) = &store {
            store.close()?;
            if let Some(s) = state_summary.as_mut() {
                let stats = store.stats();
                s.checkpoints = stats.checkpoints;
                if exact {
                    s.exact_index = Some(resume::ExactIndexSummary {
                        fingerprints: stats.indexed,
                        bytes: stats.index_bytes,
                        complete: stats.index_complete,
                    });
                }
            }
        }
        summary.state = state_summary;
        output::write_stats(&out_dir, &summary)
            .map_err(|e| EngineError::Output(out_dir.clone(), e))?;
        output::write_status(&out_dir, &final_status)
            .map_err(|e| EngineError::Output(out_dir.clone(), e))?;
        Ok(summary)
    }
}

async fn join_all(set: &mut tokio::task::JoinSet<()>) {
    while set.join_next().await.is_some() {}
}
