//! Launching a crawl: the one place that knows every kind of frontier. It picks the frontier
//! `frontier.backend` names, builds it — in this process ([`LocalFrontier`], which the engine
//! restores from the crawl state when `crawl.persist` is on) or shared in Redis
//! ([`RedisFrontier`], after agreeing the crawl's rules, see [`shared`]) — and hands it to the
//! engine behind the frontier traits. The engine, the service and the tests above them start a
//! crawl through here; none of them names an implementation.
//!
//! [`RedisFrontier`]: redis_frontier::RedisFrontier

#![forbid(unsafe_code)]

pub mod crawls;
pub mod shared;

use std::sync::Arc;

use engine::{CrawlConfig, CrawlFrontier, EngineError, FrontierBackend, RunOptions};
use frontier::{FrontierConfig, LocalFrontier};
use tokio_util::sync::CancellationToken;
use url::Url;

/// Why a crawl could not be launched (or, from [`run`], why it ended in error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// The engine refused the crawl or failed it.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The frontier could not be built (scope patterns, filter, spill directory).
    #[error("frontier: {0}")]
    Frontier(#[from] frontier::BuildError),
    /// The shared frontier's Redis could not be reached or used (`frontier.backend = "redis"`).
    #[error("frontier in Redis at {url}: {error}")]
    Redis {
        /// `frontier.redis_url`, its password hidden.
        url: String,
        /// What failed.
        error: redis_frontier::RedisFrontierError,
    },
    /// The url-frontier service's address or the scope cannot make a backend
    /// (`frontier.backend = "urlfrontier"`).
    #[error("frontier in a url-frontier service: {0}")]
    UrlFrontier(#[from] urlfrontier_backend::BackendError),
    /// `--fresh` with a shared frontier: the crawl lives in Redis, for every process of it.
    #[error(
        "--fresh would not start the shared crawl over: it lives in Redis for every process \
         of it; give a new frontier.crawl_id instead"
    )]
    FreshShared,
    /// `--fresh` with a url-frontier service's frontier: the crawl lives there.
    #[error(
        "--fresh would not start the crawl over: its frontier lives in the url-frontier \
         service; give a new frontier.crawl_id instead (or delete the crawl there)"
    )]
    FreshRemote,
    /// Settings this process was given differ from the shared crawl's rules.
    #[error(
        "this process' settings differ from the shared crawl `{crawl_id}`'s, which its first \
         process recorded: {}; give every process of the crawl the same values (or leave them \
         out to take the crawl's)",
        differences.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    SharedRules {
        /// `frontier.crawl_id`.
        crawl_id: String,
        /// Each setting that differs.
        differences: Vec<shared::RuleDifference>,
    },
}

impl LaunchError {
    /// Whether something outside the crawl is unreachable (the shared frontier's Redis),
    /// rather than the crawl's settings or files being wrong.
    pub fn is_unavailable(&self) -> bool {
        match self {
            LaunchError::Redis { error, .. } => error.is_unavailable(),
            LaunchError::Engine(e) => e.is_unavailable(),
            _ => false,
        }
    }
}

/// Builds the frontier of `cfg` and starts the crawl on it (see [`engine::start`]).
pub async fn start(cfg: CrawlConfig, opts: RunOptions) -> Result<engine::Running, LaunchError> {
    let (cfg, frontier) = frontier(cfg, opts).await?;
    Ok(engine::start(cfg, frontier, opts).await?)
}

/// Builds the frontier of `cfg` and runs the crawl on it to its end, or until `shutdown`
/// (see [`engine::run`]).
pub async fn run(
    cfg: CrawlConfig,
    shutdown: CancellationToken,
    opts: RunOptions,
) -> Result<engine::Summary, LaunchError> {
    let (cfg, frontier) = frontier(cfg, opts).await?;
    Ok(engine::run(cfg, frontier, shutdown, opts).await?)
}

/// The frontier `cfg` names, built; with a shared one, `cfg` as the crawl's rules make it.
/// The engine's checks come first, so a crawl that cannot start touches nothing.
pub async fn frontier(
    cfg: CrawlConfig,
    opts: RunOptions,
) -> Result<(CrawlConfig, CrawlFrontier), LaunchError> {
    let seeds = engine::check(&cfg, opts)?;
    let seeds: Vec<&str> = seeds.iter().map(Url::as_str).collect();
    if cfg.frontier.backend == FrontierBackend::Redis {
        if opts.fresh {
            return Err(LaunchError::FreshShared);
        }
        // The crawl's rules first: they may change the settings the frontier is made of.
        let cfg = shared::agree(cfg).await?;
        let redis = Arc::new(shared::connect(&cfg, frontier_config(&cfg, opts), &seeds).await?);
        let frontier = CrawlFrontier::Shared {
            frontier: redis.clone(),
            robots: redis,
        };
        return Ok((cfg, frontier));
    }
    if cfg.frontier.backend == FrontierBackend::UrlFrontier {
        if opts.fresh {
            return Err(LaunchError::FreshRemote);
        }
        let f = &cfg.frontier;
        let settings = urlfrontier_backend::BackendSettings {
            url: f.urlfrontier_url.trim().to_owned(),
            crawl_id: f.crawl_id.clone(),
            token: (!f.urlfrontier_token.is_empty()).then(|| f.urlfrontier_token.clone()),
            hold: std::time::Duration::from_secs(f.lease_secs.max(1)),
        };
        let backend = Arc::new(urlfrontier_backend::UrlFrontierBackend::connect(
            frontier_config(&cfg, opts),
            settings,
            &seeds,
        )?);
        let frontier = CrawlFrontier::Shared {
            frontier: backend.clone(),
            robots: backend,
        };
        return Ok((cfg, frontier));
    }
    let local = LocalFrontier::new(frontier_config(&cfg, opts), &seeds)?;
    Ok((cfg, CrawlFrontier::Local(Box::new(local))))
}

/// The frontier's settings: a service's frontier stays open for new seeds.
fn frontier_config(cfg: &CrawlConfig, opts: RunOptions) -> FrontierConfig {
    FrontierConfig {
        keep_open: opts.serve,
        ..engine::frontier_config(cfg)
    }
}
