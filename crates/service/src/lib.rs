//! `crawler serve`: a running crawl behind an HTTP API — status, seeds, pause and resume,
//! hosts and their controls, leases for external fetchers, server-sent events, Prometheus
//! metrics, an OpenAPI document and a dashboard.
//!
//! Design choices:
//! - **[`serve`]`(listener, crawls, settings, shutdown)`**: the caller binds the listener and
//!   owns the shutdown, so tests run a real server on `127.0.0.1:0` and stop it. The exposure
//!   rule ([`check_exposure`]) is checked by `serve` itself, so no listener can skip it.
//! - **Every crawl of the service behind one API**: calls are about the crawl the service
//!   runs unless `?crawl=ID` names another ([`crawl_select`]; `GET /api/v1/crawls` lists
//!   them), and the dashboard follows its own `?crawl=`.
//! - **A thin layer**: each handler makes one [`engine::Control`] call; the rules (scope,
//!   politeness, robots.txt, leases) live in the engine and the frontier, so a call over HTTP
//!   does exactly what a worker or the command line would.
//! - **The OpenAPI document is generated** from the handlers' annotations and the body types
//!   (utoipa), so it cannot drift from what the handlers take and give.
//! - **Safe to leave running**: the accept loop caps connections and times slow clients out
//!   ([`listener`]), every request names this service and state changes come from its own
//!   origin ([`protect`]; the handlers that change state take a [`protect::StateChange`]), a token (when set) is compared in constant time, bodies are limited
//!   in bytes and in URLs per call, and every error is JSON naming the reason and the field.
//! - **The dashboard is one embedded HTML file** with its script inline: no build step, no
//!   CDN; it polls the API every second and reads the event stream.

#![forbid(unsafe_code)]

mod api;
mod body;
mod crawl_select;
mod error;
pub mod listener;
pub mod metrics;
mod protect;
mod types;

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, State};
use axum::http::header;
use axum::middleware;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::Router;
use crawl_select::CrawlParam;
use engine::crawls::Crawls;
use engine::Control;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use utoipa::OpenApi;

pub use error::ApiError;
pub use protect::authorized;

/// Shortest API token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// What the server needs besides the crawl: `[service]` of the configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Bearer token for `/api` (empty: none).
    pub api_token: String,
    /// `/metrics` needs the token too.
    pub protect_metrics: bool,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Most URLs in one call.
    pub max_urls_per_call: u64,
    /// Host names (or `host:port`) the service answers to besides IP addresses and
    /// `localhost`.
    pub allowed_hosts: Vec<String>,
    /// Most API connections open at once.
    pub max_connections: usize,
    /// Most event streams open at once.
    pub max_event_streams: usize,
    /// Longest wait for a request head (and longest idle keep-alive).
    pub header_timeout: Duration,
    /// Longest time of one request, body included (not of an event stream once open).
    pub request_timeout: Duration,
    /// Longest time a response write may make no progress (a client that stopped reading).
    pub write_timeout: Duration,
}

impl Settings {
    /// The settings of `cfg`'s `[service]`.
    pub fn from_config(cfg: &engine::CrawlConfig) -> Self {
        let s = &cfg.service;
        Self {
            api_token: s.api_token.clone(),
            protect_metrics: s.protect_metrics,
            max_body_bytes: usize::try_from(s.max_body_bytes).unwrap_or(usize::MAX),
            max_urls_per_call: s.max_urls_per_call,
            allowed_hosts: s
                .allowed_hosts
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .collect(),
            max_connections: usize::try_from(s.max_connections).unwrap_or(usize::MAX),
            max_event_streams: usize::try_from(s.max_event_streams).unwrap_or(usize::MAX),
            header_timeout: Duration::from_secs(s.header_timeout_secs),
            request_timeout: Duration::from_secs(s.request_timeout_secs),
            write_timeout: Duration::from_secs(s.write_timeout_secs),
        }
    }
}

/// Why `crawler serve` refuses to start or stops.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A non-loopback address without a token.
    #[error(
        "{0} is not a loopback address and service.api_token is empty: anyone who reaches it \
         could steer the crawl; set a token of at least {MIN_TOKEN_LEN} characters \
         (CRAWLER_SERVICE_API_TOKEN) or listen on 127.0.0.1"
    )]
    OpenWithoutToken(std::net::SocketAddr),
    /// A token that cannot serve as one.
    #[error(
        "service.api_token must be at least {MIN_TOKEN_LEN} characters without spaces or \
         control characters"
    )]
    WeakToken,
    /// The listener failed.
    #[error("the API listener: {0}")]
    Io(#[from] std::io::Error),
}

/// Whether `token` can be a bearer token: at least [`MIN_TOKEN_LEN`] visible ASCII
/// characters (no spaces: one could never be sent back whole).
pub fn token_is_strong(token: &str) -> bool {
    token.len() >= MIN_TOKEN_LEN && token.bytes().all(|b| b.is_ascii_graphic())
}

/// The one exposure rule of every listener: a non-loopback address needs a token, and a
/// token must be one.
pub fn check_exposure(addr: std::net::SocketAddr, settings: &Settings) -> Result<(), ServeError> {
    if !settings.api_token.is_empty() && !token_is_strong(&settings.api_token) {
        return Err(ServeError::WeakToken);
    }
    if !addr.ip().is_loopback() && settings.api_token.is_empty() {
        return Err(ServeError::OpenWithoutToken(addr));
    }
    Ok(())
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_urls: u64,
    pub(crate) max_event_streams: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct AppState {
    /// The crawl a call is about: `DEFAULT`, or the one its `?crawl=` names
    /// ([`crawl_select::CrawlState`]).
    pub(crate) control: Control,
    /// Every crawl of the service.
    pub(crate) crawls: Arc<Crawls>,
    pub(crate) limits: Limits,
    /// Event streams open now.
    pub(crate) event_streams: Arc<AtomicUsize>,
    pub(crate) shutdown: CancellationToken,
    /// Whether the OpenAPI document declares the bearer requirement.
    token_set: bool,
    /// The request checks ([`protect`]).
    pub(crate) rules: Arc<protect::Rules>,
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "crawler",
        description = "A running crawl: status, seeds, pause and resume, hosts, external fetchers' leases, events."
    ),
    paths(
        api::status,
        api::errors,
        api::seeds,
        api::forget,
        api::recrawl,
        api::pause,
        api::resume,
        api::hosts,
        api::put_host,
        api::delete_host_queue,
        api::leases::leases,
        api::leases::complete,
        api::events,
        api::crawls::crawls
    ),
    components(schemas(types::ErrorBody)),
    modifiers(&BearerAuth, &CrawlParam)
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The OpenAPI 3 document of the API, as JSON; with `token_set`, every operation declares
/// that it needs the bearer token (and answers 401 without it).
pub fn openapi_json(token_set: bool) -> String {
    let mut doc = ApiDoc::openapi();
    if token_set {
        use utoipa::openapi::security::SecurityRequirement;
        doc.security = Some(vec![SecurityRequirement::new(
            "bearer",
            Vec::<String>::new(),
        )]);
    }
    doc.to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

async fn metrics_handler(State(state): State<AppState>) -> Response {
    let m = state.control.metrics().await;
    // A crawl whose frontier does not answer now is left out of this scrape.
    let crawls: Vec<metrics::CrawlFigures> = api::crawls::summaries(&state, Some(&m.frontier))
        .await
        .into_iter()
        .filter(|c| c.error.is_none())
        .map(|c| metrics::CrawlFigures {
            id: c.id,
            queued: c.queued,
            in_flight: c.in_flight,
            done: c.done,
        })
        .collect();
    let text = metrics::encode(m, &crawls);
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], text).into_response()
}

async fn openapi_handler(State(state): State<AppState>) -> Response {
    let doc = openapi_json(state.token_set);
    ([(header::CONTENT_TYPE, "application/json")], doc).into_response()
}

async fn dashboard() -> Html<&'static str> {
    Html(include_str!("../assets/index.html"))
}

/// The application: every route, its limits, its checks and its authentication.
pub fn app(crawls: Arc<Crawls>, settings: &Settings, shutdown: CancellationToken) -> Router {
    let rules = Arc::new(protect::Rules {
        token: settings.api_token.clone(),
        allowed_hosts: settings.allowed_hosts.clone(),
        request_timeout: settings.request_timeout,
    });
    let state = AppState {
        control: crawls.default_crawl().control.clone(),
        crawls: Arc::clone(&crawls),
        limits: Limits {
            max_urls: settings.max_urls_per_call,
            max_event_streams: settings.max_event_streams,
        },
        event_streams: Arc::default(),
        shutdown,
        token_set: !settings.api_token.is_empty(),
        rules: Arc::clone(&rules),
    };
    let auth = middleware::from_fn_with_state(Arc::clone(&rules), protect::require_token);
    let api = Router::new()
        .route("/status", get(api::status))
        .route("/errors", get(api::errors))
        .route("/seeds", post(api::seeds))
        .route("/forget", post(api::forget))
        .route("/recrawl", post(api::recrawl))
        .route("/pause", post(api::pause))
        .route("/resume", post(api::resume))
        .route("/hosts", get(api::hosts))
        .route("/hosts/{host}", put(api::put_host))
        .route("/hosts/{host}/queue", delete(api::delete_host_queue))
        .route("/leases", post(api::leases::leases))
        .route("/leases/complete", post(api::leases::complete))
        .route("/events", get(api::events))
        .route("/crawls", get(api::crawls::crawls))
        .fallback(api::not_found)
        // `?crawl=ID`, resolved after the token is checked.
        .layer(middleware::from_fn_with_state(
            crawls,
            crawl_select::select_crawl,
        ))
        .layer(auth.clone());
    let mut metrics = Router::new().route("/metrics", get(metrics_handler));
    if settings.protect_metrics {
        metrics = metrics.layer(auth);
    }
    Router::new()
        .nest("/api/v1", api)
        .merge(metrics)
        .route("/openapi.json", get(openapi_handler))
        .route("/", get(dashboard))
        .layer(DefaultBodyLimit::max(settings.max_body_bytes))
        .with_state(state)
        .layer(middleware::from_fn_with_state(
            rules,
            protect::check_request,
        ))
        .layer(middleware::from_fn(protect::json_errors))
}

/// Serves the API on `listener` until `shutdown` (open event streams end with it), under
/// the exposure rule ([`check_exposure`]) and the connection limits of `settings`.
pub async fn serve(
    listener: TcpListener,
    crawls: Arc<Crawls>,
    settings: Settings,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    check_exposure(listener.local_addr()?, &settings)?;
    let app = app(crawls, &settings, shutdown.clone());
    let limits = listener::ConnLimits {
        name: "the API",
        max_connections: settings.max_connections.max(1),
        header_timeout: settings.header_timeout,
        write_timeout: settings.write_timeout,
        over_capacity: listener::OVER_CAPACITY,
    };
    listener::accept_loop(
        listener,
        limits,
        Arc::default(),
        shutdown,
        move |stream, stop| listener::serve_http1(stream, app.clone(), limits, stop),
    )
    .await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(token: &str) -> Settings {
        Settings {
            api_token: token.into(),
            protect_metrics: true,
            max_body_bytes: 1 << 20,
            max_urls_per_call: 10,
            allowed_hosts: Vec::new(),
            max_connections: 8,
            max_event_streams: 2,
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
        }
    }

    #[test]
    fn a_public_address_needs_a_token_and_a_token_must_be_one() {
        let open = settings("");
        assert!(check_exposure("127.0.0.1:8700".parse().unwrap(), &open).is_ok());
        assert!(check_exposure("[::1]:8700".parse().unwrap(), &open).is_ok());
        let e = check_exposure("0.0.0.0:8700".parse().unwrap(), &open).unwrap_err();
        assert!(e.to_string().contains("api_token"), "{e}");
        let strong = settings("0123456789abcdef");
        assert!(check_exposure("0.0.0.0:8700".parse().unwrap(), &strong).is_ok());
        for weak in [
            "t",
            " ",
            "                ",
            "0123456789abcde",
            "0123456789 abcdef",
        ] {
            let s = settings(weak);
            let e = check_exposure("127.0.0.1:8700".parse().unwrap(), &s).unwrap_err();
            assert!(matches!(e, ServeError::WeakToken), "{weak:?}: {e}");
        }
    }

    #[test]
    fn the_openapi_document_lists_every_route_and_the_token_when_set() {
        let doc: serde_json::Value = serde_json::from_str(&openapi_json(false)).unwrap();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
        for path in [
            "/api/v1/status",
            "/api/v1/errors",
            "/api/v1/seeds",
            "/api/v1/forget",
            "/api/v1/recrawl",
            "/api/v1/pause",
            "/api/v1/resume",
            "/api/v1/hosts",
            "/api/v1/hosts/{host}",
            "/api/v1/hosts/{host}/queue",
            "/api/v1/leases",
            "/api/v1/leases/complete",
            "/api/v1/events",
        ] {
            assert!(doc["paths"].get(path).is_some(), "{path} missing");
        }
        assert!(doc["components"]["schemas"]["UrlsResponse"].is_object());
        assert!(doc.get("security").is_none_or(|s| s.is_null()));
        let with_token: serde_json::Value = serde_json::from_str(&openapi_json(true)).unwrap();
        assert_eq!(with_token["security"][0]["bearer"], serde_json::json!([]));
        assert!(with_token["components"]["securitySchemes"]["bearer"].is_object());
    }
}
