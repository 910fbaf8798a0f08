//! The handles a crawl's tasks hold, wired once from its configuration and its parts: each
//! task gets what it uses — a worker its [`Worker`], the service its [`Control`]'s pieces,
//! the reports their [`Report`] — and no handle reaches the whole crawl. What two tasks share
//! (the frontier client, the run, the counters) is the same cheap-clone handle in both.
//!
//! [`Control`]: crate::Control

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use frontier::Frontier;

use crate::counters::Counters;
use crate::fetch::Fetcher;
use crate::frontier_call::FrontierClient;
use crate::governor::Governor;
use crate::leases::ExternalLeases;
use crate::output::Output;
use crate::parse_pool::ParsePool;
use crate::record::Recorder;
use crate::report::Report;
use crate::robots::RobotsCache;
use crate::run::Run;
use crate::sitemap::SitemapReader;
use crate::tail::{Tail, TailRules};
use crate::worker::{FetchRules, Fetching, Worker};
use crate::CrawlConfig;

/// What the crawl was opened with.
pub(crate) struct Parts {
    pub(crate) fetcher: Fetcher,
    pub(crate) robots: RobotsCache,
    pub(crate) parse: ParsePool,
    pub(crate) output: Output,
    pub(crate) store: Option<Arc<store::Store>>,
    /// Records of earlier runs of a resumed crawl.
    pub(crate) earlier_pages: u64,
    pub(crate) started: Instant,
}

/// The handles, by task.
pub(crate) struct Handles {
    /// Each built-in worker's (cloned per worker).
    pub(crate) worker: Worker,
    /// External fetchers' leases (the service and the reaper).
    pub(crate) external: ExternalLeases,
    /// The service's event stream.
    pub(crate) recorder: Recorder,
    /// The reports' sources (status, progress, summary, `/metrics`).
    pub(crate) report: Arc<Report>,
}

pub(crate) fn wire(
    cfg: &CrawlConfig,
    serving: bool,
    frontier: Arc<dyn Frontier>,
    parts: Parts,
) -> Handles {
    let Parts {
        fetcher,
        robots,
        parse,
        output,
        store,
        earlier_pages,
        started,
    } = parts;
    let out_dir: PathBuf = cfg.crawl.out_dir.clone();
    let run = Run::new(Arc::clone(&frontier));
    let client = FrontierClient::new(frontier, run.clone());
    let counters = Arc::new(Counters {
        pages_before: earlier_pages.into(),
        ..Counters::default()
    });
    let recorder = Recorder {
        frontier: client.clone(),
        output: output.clone(),
        events: tokio::sync::broadcast::channel(1024).0,
        counters: Arc::clone(&counters),
        run: run.clone(),
    };
    let tail = Tail {
        recorder: recorder.clone(),
        rules: TailRules::of(cfg),
    };
    let parse = Arc::new(parse);
    let fetching = Arc::new(Fetching {
        sitemaps: SitemapReader {
            tail: tail.clone(),
            fetcher: fetcher.clone(),
            parse: Arc::clone(&parse),
            files: Default::default(),
            max_body_bytes: cfg.fetch.max_body_bytes,
        },
        tail,
        fetcher,
        robots: Arc::new(robots),
        parse,
        rules: FetchRules::of(cfg),
        placements: crate::placements::Placements::new(cfg, &client),
    });
    let fetch_slots = Arc::new(tokio::sync::Semaphore::new(
        cfg.crawl.concurrency.max(1) as usize
    ));
    let governor = Governor::new(cfg.crawl.max_memory_mb, cfg.crawl.concurrency as usize);
    let pause = Arc::new(crate::pause::Pause::default());
    let report = Arc::new(Report {
        counters,
        frontier: client.clone(),
        run: run.clone(),
        leases: Arc::default(),
        store: store.clone(),
        pause: Arc::clone(&pause),
        started_at: crate::clock::now_rfc3339(),
        started,
        status_secs: cfg.crawl.status_secs,
        progress_secs: cfg.crawl.progress_secs,
        out_dir: out_dir.clone(),
        governor: governor.clone(),
    });
    let external = ExternalLeases {
        fetching: Arc::clone(&fetching),
        table: Arc::clone(&report.leases),
        fetch_slots: Arc::clone(&fetch_slots),
    };
    let crew = Worker {
        fetching,
        checkpoints: store.clone().map(|s| (s, pause)),
        fetch_slots,
        memory_gate: governor.as_ref().map(|g| Arc::clone(&g.gate)),
        serving,
    };

    Handles {
        worker: crew,
        external,
        recorder,
        report,
    }
}
