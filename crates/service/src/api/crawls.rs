//! `GET /api/v1/crawls`: the service's crawls — `DEFAULT`, the crawl it runs, and those
//! url-frontier clients made — with their figures; every other route addresses one of them
//! with `?crawl=ID` ([`crate::crawl_select`]).

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::AppState;

/// The service's crawls.
#[derive(Debug, Serialize, ToSchema)]
pub struct CrawlsResponse {
    /// `DEFAULT` first, then by ID.
    pub crawls: Vec<CrawlSummary>,
}

/// One crawl's figures.
#[derive(Debug, Serialize, ToSchema)]
pub struct CrawlSummary {
    /// Its ID (`?crawl=` takes it).
    pub id: String,
    /// `running`, `paused` or `stopping`.
    pub state: &'static str,
    /// URLs queued.
    pub queued: u64,
    /// URLs out (fetched by the built-in workers or held by clients).
    pub in_flight: u64,
    /// Hosts known.
    pub hosts: u64,
    /// URLs done.
    pub done: u64,
    /// Why the figures are zeros: the frontier did not answer (a shared frontier's Redis).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The service's crawls and their figures.
#[utoipa::path(get, path = "/api/v1/crawls",
    responses((status = 200, body = CrawlsResponse), (status = 401, body = crate::types::ErrorBody)))]
pub(crate) async fn crawls(State(state): State<AppState>) -> Json<CrawlsResponse> {
    Json(CrawlsResponse {
        crawls: summaries(&state, None).await,
    })
}

/// Every crawl's figures, `DEFAULT` first; `default` is the `DEFAULT` crawl's frontier
/// figures when the caller has read them already (a `/metrics` scrape).
pub(crate) async fn summaries(
    state: &AppState,
    default: Option<&frontier::Stats>,
) -> Vec<CrawlSummary> {
    let mut crawls = Vec::new();
    for crawl in state.crawls.all() {
        let control = &crawl.control;
        let state = if control.stopping() {
            "stopping"
        } else if control.paused() {
            "paused"
        } else {
            "running"
        };
        let mut summary = CrawlSummary {
            id: crawl.id.to_string(),
            state,
            queued: 0,
            in_flight: 0,
            hosts: 0,
            done: 0,
            error: None,
        };
        let stats = match default.filter(|_| &*crawl.id == engine::crawls::DEFAULT_CRAWL) {
            Some(s) => Ok(s.clone()),
            None => control.frontier_stats().await,
        };
        match stats {
            Ok(s) => {
                summary.queued = s.queued;
                summary.in_flight = s.in_flight;
                summary.hosts = s.hosts;
                summary.done = s.pages;
            }
            Err(e) => summary.error = Some(e),
        }
        crawls.push(summary);
    }
    crawls
}
