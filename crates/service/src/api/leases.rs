//! The external fetchers' handlers: `POST /api/v1/leases` hands out due URLs, `POST
//! /api/v1/leases/complete` takes their results (each a page's record, links and outcome).

use axum::http::StatusCode;
use axum::Json;
use engine::{Completed, Completion};

use super::{check_count, ApiResult};
use crate::body::JsonObject;
use crate::crawl_select::CrawlState;
use crate::error::ApiError;
use crate::protect::StateChange;
use crate::types::*;

/// Leases due URLs to an external fetcher.
#[utoipa::path(post, path = "/api/v1/leases", request_body = LeaseRequest,
    responses((status = 200, body = LeasesResponse), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 413, body = ErrorBody),
              (status = 415, body = ErrorBody)))]
pub(crate) async fn leases(
    CrawlState(state): CrawlState,
    _: StateChange,
    JsonObject(req): JsonObject<LeaseRequest>,
) -> ApiResult<LeasesResponse> {
    if req.max > MAX_PER_CALL {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("max must be at most {MAX_PER_CALL}"),
        )
        .field("max"));
    }
    // "At most" N: a request for more than one call may carry gets the most it may.
    let max = req.max.min(state.limits.max_urls);
    if req.lease_secs == Some(0) || req.lease_secs.is_some_and(|s| s > 86_400) {
        return Err(
            ApiError::new(StatusCode::BAD_REQUEST, "lease_secs must be 1..=86400")
                .field("lease_secs"),
        );
    }
    let leased = state
        .control
        .lease(usize::try_from(max).unwrap_or(usize::MAX), req.lease_secs)
        .await;
    Ok(Json(LeasesResponse {
        leases: leased
            .into_iter()
            .map(|l| LeaseBody {
                lease_id: l.id.to_string(),
                url: l.url,
                depth: l.depth,
                parent: l.parent,
                lease_secs: l.lease_secs,
            })
            .collect(),
    }))
}

/// Takes external fetchers' results.
#[utoipa::path(post, path = "/api/v1/leases/complete", request_body = CompleteRequest,
    responses((status = 200, body = CompleteResponse), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 413, body = ErrorBody),
              (status = 415, body = ErrorBody)))]
pub(crate) async fn complete(
    CrawlState(state): CrawlState,
    _: StateChange,
    JsonObject(req): JsonObject<CompleteRequest>,
) -> ApiResult<CompleteResponse> {
    check_count(req.results.len(), state.limits.max_urls, "results")?;
    let links: usize = req.results.iter().map(|r| r.links.len()).sum();
    // A page's links are bounded by the body limit already; this bounds a whole call.
    check_count(links, state.limits.max_urls.saturating_mul(100), "links")?;
    let mut ids = Vec::with_capacity(req.results.len());
    let mut completions = Vec::with_capacity(req.results.len());
    for (i, r) in req.results.iter().enumerate() {
        if r.status.is_some_and(|s| !(100..=599).contains(&s)) {
            return Err(
                ApiError::new(StatusCode::BAD_REQUEST, "status must be 100..=599")
                    .field(&format!("results[{i}].status")),
            );
        }
    }
    for r in req.results {
        // An id that is not a number cannot be a lease of ours: it is answered unknown.
        let id = r.lease_id.parse::<u64>().unwrap_or(0);
        ids.push(r.lease_id);
        completions.push(Completion {
            id,
            status: r.status.map(|s| s as u16),
            final_url: r.final_url,
            content_type: r.content_type,
            bytes: r.bytes,
            fetch_ms: r.fetch_ms,
            links: r.links,
            error: r.error,
            retry_after_secs: r.retry_after_secs,
        });
    }
    let done = state.control.complete(completions).await;
    Ok(Json(CompleteResponse {
        results: ids
            .into_iter()
            .zip(done)
            .map(|(lease_id, c)| CompletedBody {
                lease_id,
                result: match c {
                    Completed::Recorded => "recorded",
                    Completed::Retried => "retried",
                    Completed::UnknownLease => "unknown_lease",
                }
                .to_owned(),
            })
            .collect(),
    }))
}
