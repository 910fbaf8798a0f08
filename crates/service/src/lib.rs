//! `crawler serve`: a running crawl behind an HTTP API — status, seeds, pause and resume,
//! hosts and their controls, leases for external fetchers, server-sent events, Prometheus
//! metrics, an OpenAPI document and a dashboard.
//!
//! Design choices:
//! - **[`serve`]`(listener, control, settings, shutdown)`**: the caller binds the listener and
//!   owns the shutdown, so tests run a real server on `127.0.0.1:0` and stop it.
//! - **A thin layer**: each handler makes one [`engine::Control`] call; the rules (scope,
//!   politeness, robots.txt, leases) live in the engine and the frontier, so a call over HTTP
//!   does exactly what a worker or the command line would.
//! - **The OpenAPI document is generated** from the handlers' annotations and the body types
//!   (utoipa), so it cannot drift from what the handlers take and give.
//! - **Security**: a token (when set) is compared in constant time on every `/api` route
//!   (and `/metrics` when `protect_metrics`); bodies are limited in bytes and in URLs per
//!   call, and every error is JSON naming the reason and the field.
//! - **The dashboard is one embedded HTML file** with its script inline: no build step, no
//!   CDN; it polls the API every second and reads the event stream.

#![forbid(unsafe_code)]

mod api;
pub mod metrics;
mod types;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::Router;
use engine::Control;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use utoipa::OpenApi;

pub use api::ApiError;

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
        }
    }
}

/// Why `crawler serve` refuses to start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A non-loopback address without a token.
    #[error(
        "service.listen = {0} is not a loopback address and service.api_token is empty: anyone \
         who reaches it could steer the crawl; set a token (CRAWLER_SERVICE_API_TOKEN) or \
         listen on 127.0.0.1"
    )]
    OpenWithoutToken(std::net::SocketAddr),
}

/// Refuses to serve a non-loopback address without a token.
pub fn check_exposure(addr: std::net::SocketAddr, settings: &Settings) -> Result<(), ServeError> {
    if !addr.ip().is_loopback() && settings.api_token.is_empty() {
        return Err(ServeError::OpenWithoutToken(addr));
    }
    Ok(())
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_urls: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct AppState {
    pub(crate) control: Control,
    pub(crate) limits: Limits,
    token: Arc<str>,
    pub(crate) shutdown: CancellationToken,
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "crawler",
        description = "A running crawl: status, seeds, pause and resume, hosts, external fetchers' leases, events."
    ),
    paths(
        api::status,
        api::seeds,
        api::forget,
        api::pause,
        api::resume,
        api::hosts,
        api::put_host,
        api::leases,
        api::complete,
        api::events
    ),
    components(schemas(types::ErrorBody)),
    modifiers(&BearerAuth)
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

/// The OpenAPI 3 document of the API, as JSON.
pub fn openapi_json() -> String {
    ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// Constant-time comparison of the presented token with ours.
fn token_ok(presented: &[u8], ours: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    presented.len() == ours.len() && bool::from(presented.ct_eq(ours))
}

async fn require_token(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if state.token.is_empty() {
        return next.run(req).await;
    }
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if token_ok(presented.as_bytes(), state.token.as_bytes()) {
        next.run(req).await
    } else {
        let mut r = ApiError::new(
            StatusCode::UNAUTHORIZED,
            "missing or wrong token (Authorization: Bearer …)",
        )
        .into_response();
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
        r
    }
}

async fn metrics_handler(State(state): State<AppState>) -> Response {
    let text = metrics::encode(state.control.metrics().await);
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], text).into_response()
}

async fn openapi_handler() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], openapi_json()).into_response()
}

async fn dashboard() -> Html<&'static str> {
    Html(include_str!("../assets/index.html"))
}

/// The application: every route, its limits and its authentication.
pub fn app(control: Control, settings: &Settings, shutdown: CancellationToken) -> Router {
    let state = AppState {
        control,
        limits: Limits {
            max_urls: settings.max_urls_per_call,
        },
        token: Arc::from(settings.api_token.as_str()),
        shutdown,
    };
    let auth = middleware::from_fn_with_state(state.clone(), require_token);
    let api = Router::new()
        .route("/status", get(api::status))
        .route("/seeds", post(api::seeds))
        .route("/forget", post(api::forget))
        .route("/pause", post(api::pause))
        .route("/resume", post(api::resume))
        .route("/hosts", get(api::hosts))
        .route("/hosts/{host}", put(api::put_host))
        .route("/leases", post(api::leases))
        .route("/leases/complete", post(api::complete))
        .route("/events", get(api::events))
        .fallback(api::not_found)
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
}

/// Serves the API on `listener` until `shutdown` (open event streams end with it).
pub async fn serve(
    listener: TcpListener,
    control: Control,
    settings: Settings,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let app = app(control, &settings, shutdown.clone());
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(token_ok(b"s3cret", b"s3cret"));
        assert!(!token_ok(b"s3cre", b"s3cret"));
        assert!(!token_ok(b"s3cretX", b"s3cret"));
        assert!(!token_ok(b"", b"s3cret"));
    }

    #[test]
    fn a_public_address_needs_a_token() {
        let mut s = Settings {
            api_token: String::new(),
            protect_metrics: true,
            max_body_bytes: 1 << 20,
            max_urls_per_call: 10,
        };
        assert!(check_exposure("127.0.0.1:8700".parse().unwrap(), &s).is_ok());
        assert!(check_exposure("[::1]:8700".parse().unwrap(), &s).is_ok());
        let open = check_exposure("0.0.0.0:8700".parse().unwrap(), &s).unwrap_err();
        assert!(open.to_string().contains("api_token"), "{open}");
        s.api_token = "t".into();
        assert!(check_exposure("0.0.0.0:8700".parse().unwrap(), &s).is_ok());
    }

    #[test]
    fn the_openapi_document_lists_every_route() {
        let doc: serde_json::Value = serde_json::from_str(&openapi_json()).unwrap();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
        for path in [
            "/api/v1/status",
            "/api/v1/seeds",
            "/api/v1/forget",
            "/api/v1/pause",
            "/api/v1/resume",
            "/api/v1/hosts",
            "/api/v1/hosts/{host}",
            "/api/v1/leases",
            "/api/v1/leases/complete",
            "/api/v1/events",
        ] {
            assert!(doc["paths"].get(path).is_some(), "{path} missing");
        }
        assert!(doc["components"]["schemas"]["UrlsResponse"].is_object());
    }
}
