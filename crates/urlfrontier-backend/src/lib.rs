//! `frontier.backend = "urlfrontier"`: the crawler's [`Frontier`] kept by a url-frontier v2
//! service (crawler-commons/url-frontier's own, or this project's `crawler serve` gRPC API),
//! so that the crawler can be the fetcher of a crawl whose frontier lives there.
//!
//! Design choices:
//! - **The service decides what it can**: deduplication, queues by key, politeness per key
//!   (its delay, its hold of what GetURLs hands out), limits and dates. What needs no
//!   agreement stays in the process, as with the Redis frontier: canonicalisation and the
//!   scope check (so an out-of-scope URL says why), the page budget, and the back-off of a
//!   failing host (a BlockQueueUntil, lifted by its next success).
//! - **A lease is a GetURLs hold**: a URL handed out is held by the service for the lease
//!   time ([`BackendSettings::hold`]); completing it is a PutURLs of it as known — date 0 when
//!   done, a date for a retry, now for one given back. Unreported, it is served again.
//! - **An entry travels whole**: what the protocol does not carry rides in reserved metadata
//!   keys ([`fields`]).
//! - **The protocol's limits are this backend's**: the service answers SKIPPED for a URL
//!   seen and for one it refuses (a budget), so both read as duplicates here; it keeps no
//!   per-host in-flight override, `Crawl-delay` is a SetDelay of whole seconds, and a fetch's
//!   observation (ETag, digest) does not reach a recrawl schedule kept there.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Mutex, RwLock};
use std::time::Duration;

use frontier::{Canonicalizer, FrontierConfig, FrontierError, Scope};
use tonic::transport::{Channel, Endpoint};
use url::Url;
use urlfrontier_proto::v2::url_frontier_client::UrlFrontierClient;

mod calls;
mod fields;
mod frontier_impl;
mod reads;

/// Where the service is and how this process takes part.
#[derive(Clone, PartialEq, Eq)]
pub struct BackendSettings {
    /// The service's gRPC address, `http://host:port` (`frontier.urlfrontier_url`).
    pub url: String,
    /// The crawl ID on the service (empty: its `DEFAULT`).
    pub crawl_id: String,
    /// A bearer token the service asks for (`None`: none sent).
    pub token: Option<String>,
    /// How long the service holds a URL it handed out (GetURLs' `delay_requestable`).
    pub hold: Duration,
}

impl std::fmt::Debug for BackendSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendSettings")
            .field("url", &self.url)
            .field("crawl_id", &self.crawl_id)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("hold", &self.hold)
            .finish()
    }
}

/// Why the backend cannot start.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The address is not one to connect to.
    #[error("frontier.urlfrontier_url: {0}")]
    Address(String),
    /// The scope's patterns are not valid.
    #[error("scope: {0}")]
    Scope(String),
}

/// A URL handed out: as the service gave it (its completion names it so, whatever this
/// process made of it), and when.
#[derive(Debug, Clone)]
struct Out {
    info: urlfrontier_proto::v2::UrlInfo,
    handed: tokio::time::Instant,
}

/// The frontier of a url-frontier service.
#[derive(Debug)]
pub struct UrlFrontierBackend {
    client: UrlFrontierClient<Channel>,
    settings: BackendSettings,
    cfg: FrontierConfig,
    canon: Canonicalizer,
    scope: RwLock<Scope>,
    /// Each URL handed out and not completed, by lease token.
    out: Mutex<HashMap<u64, Out>>,
    /// Leases being taken (a GetURLs under way): counted against `max_pages` with those out.
    taking: AtomicU64,
    next_token: AtomicU64,
    /// Completions with a record (what `max_pages` counts), from the service's count of
    /// completed URLs when first needed (a restarted fetcher goes on counting).
    pages: AtomicU64,
    pages_read: AtomicBool,
    /// The limits of finished URLs set per queue (the service does not report them).
    limits: Mutex<HashMap<String, u64>>,
    /// Until when (Unix seconds) a back-off of this process blocks each queue.
    held_until: Mutex<HashMap<String, u64>>,
    /// Until when (Unix seconds) an operator's block set here holds each queue.
    blocked: Mutex<HashMap<String, u64>>,
    /// The current back-off of each failing queue, and the first lease token handed out
    /// after it last grew: a failure of a fetch handed out before that is the same failure,
    /// not another doubling (and its success does not end the back-off).
    backoff: Mutex<HashMap<String, (Duration, u64)>>,
    offered: AtomicU64,
    admitted: AtomicU64,
    duplicates: AtomicU64,
    /// URLs refused by the scope, by [`frontier::OutOfScope::index`].
    out_of_scope: Mutex<Vec<u64>>,
    closed: AtomicBool,
    /// Held by the one waiting worker that asks the service whether the crawl is over (a
    /// GetStats of the whole crawl reads every queue there): the others only poll GetURLs.
    asking: tokio::sync::Mutex<()>,
    /// The crawl was seen over: nothing queued, held or asleep at the service, nothing here.
    over: AtomicBool,
}

impl UrlFrontierBackend {
    /// A backend for `cfg` on the service `settings` names, seeded at `seeds` (their hosts
    /// make the scope). The connection is made on the first call.
    pub fn connect(
        cfg: FrontierConfig,
        settings: BackendSettings,
        seeds: &[&str],
    ) -> Result<Self, BackendError> {
        let endpoint = Endpoint::from_shared(settings.url.clone())
            .map_err(|e| BackendError::Address(e.to_string()))?
            .connect_timeout(Duration::from_secs(10));
        let canon = Canonicalizer::new(cfg.canon.clone());
        let seed_urls: Vec<Url> = seeds
            .iter()
            .filter_map(|s| canon.canonicalize(s, None).ok())
            .collect();
        let scope = Scope::new(cfg.scope.clone(), &seed_urls).map_err(|errors| {
            BackendError::Scope(
                errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })?;
        Ok(Self {
            client: UrlFrontierClient::new(endpoint.connect_lazy()),
            settings,
            cfg,
            canon,
            scope: RwLock::new(scope),
            out: Mutex::default(),
            taking: AtomicU64::new(0),
            next_token: AtomicU64::new(1),
            pages: AtomicU64::new(0),
            pages_read: AtomicBool::new(false),
            limits: Mutex::default(),
            held_until: Mutex::default(),
            blocked: Mutex::default(),
            backoff: Mutex::default(),
            offered: AtomicU64::new(0),
            admitted: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            out_of_scope: Mutex::new(vec![0; frontier::OutOfScope::ALL.len()]),
            closed: AtomicBool::new(false),
            asking: tokio::sync::Mutex::new(()),
            over: AtomicBool::new(false),
        })
    }

    fn out(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Out>> {
        self.out.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A gRPC failure as the engine sees a frontier's: retryable unless the service refused the
/// call for good.
fn frontier_error(status: tonic::Status) -> FrontierError {
    use tonic::Code;
    match status.code() {
        Code::InvalidArgument
        | Code::Unauthenticated
        | Code::PermissionDenied
        | Code::Unimplemented
        | Code::FailedPrecondition
        | Code::ResourceExhausted => FrontierError::Failed(status.to_string()),
        _ => FrontierError::Unavailable(status.to_string()),
    }
}
