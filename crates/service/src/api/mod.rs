//! The `/api/v1` handlers: each turns its request into one [`Control`] call and the answer
//! into JSON. Limits (URLs per call, lease sizes) are checked here, before any work.

use std::convert::Infallible;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::Json;
use engine::{ForgetResult, RecrawlResult, SeedResult};
use frontier::{HostControls, HostQuery, HostSort};
use futures_util::Stream;
use serde::Deserialize;

use crate::body::JsonObject;
use crate::crawl_select::CrawlState;
use crate::error::ApiError;
use crate::protect::StateChange;
use crate::types::*;
use crate::AppState;

pub(crate) mod crawls;
pub(crate) mod leases;

pub(crate) type ApiResult<T> = Result<Json<T>, ApiError>;

/// More items than one call may carry is a 400 naming the field (413 is for a body over
/// `service.max_body_bytes`).
pub(crate) fn check_count(n: usize, max: u64, field: &str) -> Result<(), ApiError> {
    if n as u64 > max.min(MAX_PER_CALL) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("{n} items in one call; at most {max} (service.max_urls_per_call)"),
        )
        .field(field));
    }
    Ok(())
}

fn unix_ms_in(d: Duration) -> u64 {
    let t = SystemTime::now() + d;
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub(crate) async fn status_body(state: &AppState) -> StatusBody {
    let s = state.control.status().await;
    StatusBody {
        state: s.state,
        scheduled: s.scheduled,
        next_due: s.next_due,
        due_next_hour: s.due_next_hour,
        refetches_changed: s.refetches_changed,
        refetches_unchanged: s.refetches_unchanged,
        started_at: s.started_at,
        pages: s.pages,
        pages_total: s.pages_total,
        pages_per_sec: s.pages_per_sec,
        pages_per_sec_avg: s.pages_per_sec_avg,
        queued: s.queued,
        queued_memory: s.queued_memory,
        queued_disk: s.queued_disk,
        in_flight: s.in_flight,
        leases_out: s.leases_out,
        hosts: s.hosts,
        by_status: s.by_status,
        bytes: s.bytes,
        filter_fill: s.filter_fill,
        filter_fpp: s.filter_fpp,
        state_backlog: s.state_backlog,
        state_paused: s.paused,
        frontier_unavailable_secs: s.frontier_unavailable_secs,
        frontier_error: s.frontier_error,
        memory: s.memory.map(|m| MemoryBody {
            rss_bytes: m.rss_bytes,
            budget_bytes: m.budget_bytes,
            throttle: m.throttle,
            reason: m.reason,
            fetch_slots: m.fetch_slots,
            queue_capacity: m.queue_capacity,
            throttled_secs: m.throttled_secs,
        }),
    }
}

/// The crawl's status.
#[utoipa::path(get, path = "/api/v1/status", responses((status = 200, body = StatusBody), (status = 401, body = ErrorBody)))]
pub(crate) async fn status(CrawlState(state): CrawlState) -> Json<StatusBody> {
    Json(status_body(&state).await)
}

/// Adds seeds to the running crawl; they widen the scope like command-line seeds.
#[utoipa::path(post, path = "/api/v1/seeds", request_body = UrlsRequest,
    responses((status = 200, body = UrlsResponse), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 413, body = ErrorBody),
              (status = 415, body = ErrorBody)))]
pub(crate) async fn seeds(
    CrawlState(state): CrawlState,
    _: StateChange,
    JsonObject(req): JsonObject<UrlsRequest>,
) -> ApiResult<UrlsResponse> {
    check_count(req.urls.len(), state.limits.max_urls, "urls")?;
    let results = state.control.add_seeds(&req.urls).await;
    Ok(Json(outcomes(req.urls, results, |r| match r {
        SeedResult::Admitted => ("admitted", None),
        SeedResult::Duplicate => ("duplicate", None),
        SeedResult::OutOfScope(rule) => ("out_of_scope", Some(rule.to_owned())),
        SeedResult::Invalid(why) => ("invalid", Some(why)),
    })))
}

/// One [`UrlOutcome`] per URL, named by `name`.
fn outcomes<T>(
    urls: Vec<String>,
    results: Vec<T>,
    name: impl Fn(T) -> (&'static str, Option<String>),
) -> UrlsResponse {
    let results = urls
        .into_iter()
        .zip(results)
        .map(|(url, r)| {
            let (result, reason) = name(r);
            UrlOutcome {
                url,
                result: result.to_owned(),
                reason,
            }
        })
        .collect();
    UrlsResponse { results }
}

/// Like `crawler forget`, on the running crawl: URLs that were fetched are queued again.
#[utoipa::path(post, path = "/api/v1/forget", request_body = UrlsRequest,
    responses((status = 200, body = UrlsResponse), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 409, body = ErrorBody),
              (status = 413, body = ErrorBody), (status = 415, body = ErrorBody)))]
pub(crate) async fn forget(
    CrawlState(state): CrawlState,
    _: StateChange,
    JsonObject(req): JsonObject<UrlsRequest>,
) -> ApiResult<UrlsResponse> {
    check_count(req.urls.len(), state.limits.max_urls, "urls")?;
    let results = state
        .control
        .forget(&req.urls)
        .await
        .map_err(|why| ApiError::new(StatusCode::CONFLICT, why))?;
    Ok(Json(outcomes(req.urls, results, |r| match r {
        ForgetResult::Requeued => ("requeued", None),
        ForgetResult::Queued => ("queued", None),
        ForgetResult::Unknown => ("unknown", None),
        ForgetResult::Invalid(why) => ("invalid", Some(why)),
    })))
}

/// `[recrawl]`: URLs fetched before are due again at `at` (now when absent).
#[utoipa::path(post, path = "/api/v1/recrawl", request_body = RecrawlRequest,
    responses((status = 200, body = UrlsResponse), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 409, body = ErrorBody),
              (status = 413, body = ErrorBody), (status = 415, body = ErrorBody)))]
pub(crate) async fn recrawl(
    CrawlState(state): CrawlState,
    _: StateChange,
    JsonObject(req): JsonObject<RecrawlRequest>,
) -> ApiResult<UrlsResponse> {
    check_count(req.urls.len(), state.limits.max_urls, "urls")?;
    if req.at.is_some_and(|t| t > MAX_BLOCKED_UNTIL / 1000) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "at must be at most {} (2100-01-01, in Unix seconds)",
                MAX_BLOCKED_UNTIL / 1000
            ),
        )
        .field("at"));
    }
    let results = state
        .control
        .recrawl(&req.urls, req.at)
        .await
        .map_err(|why| ApiError::new(StatusCode::CONFLICT, why))?;
    Ok(Json(outcomes(req.urls, results, |r| match r {
        RecrawlResult::Scheduled => ("scheduled", None),
        RecrawlResult::Queued => ("queued", None),
        RecrawlResult::NeverSeen => ("never_seen", None),
        RecrawlResult::Invalid(why) => ("invalid", Some(why)),
    })))
}

/// An empty body, or `{}`: what pause and resume take (their `Content-Type` must still be
/// JSON, so that no HTML form can send them).
fn no_fields(bytes: &[u8]) -> Result<(), ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    crate::body::parse::<Empty>(bytes).map(|_| ())
}

/// Pauses the crawl: no new fetch starts; fetches in flight finish.
#[utoipa::path(post, path = "/api/v1/pause", request_body = Empty,
    responses((status = 200, body = StateResponse), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 415, body = ErrorBody)))]
pub(crate) async fn pause(
    CrawlState(state): CrawlState,
    _: StateChange,
    body: axum::body::Bytes,
) -> ApiResult<StateResponse> {
    no_fields(&body)?;
    state.control.pause();
    Ok(Json(StateResponse {
        state: state.control.status().await.state,
    }))
}

/// Resumes a paused crawl.
#[utoipa::path(post, path = "/api/v1/resume", request_body = Empty,
    responses((status = 200, body = StateResponse), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 415, body = ErrorBody)))]
pub(crate) async fn resume(
    CrawlState(state): CrawlState,
    _: StateChange,
    body: axum::body::Bytes,
) -> ApiResult<StateResponse> {
    no_fields(&body)?;
    state.control.resume();
    Ok(Json(StateResponse {
        state: state.control.status().await.state,
    }))
}

/// `GET /api/v1/hosts` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct HostsParams {
    /// `queued` (default), `done` or `errors`: descending; `name`: by host name.
    #[param(pattern = "^(queued|done|errors|name)$")]
    sort: Option<String>,
    /// Hosts per page (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u64>,
    /// The `next` cursor of the page before.
    after: Option<String>,
}

/// Lists hosts, a page at a time.
#[utoipa::path(get, path = "/api/v1/hosts", params(HostsParams),
    responses((status = 200, body = HostsResponse), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub(crate) async fn hosts(
    CrawlState(state): CrawlState,
    params: Result<Query<HostsParams>, QueryRejection>,
) -> ApiResult<HostsResponse> {
    let Query(p) = params?;
    let sort = match p.sort.as_deref() {
        None | Some("queued") => HostSort::Queued,
        Some("done") => HostSort::Done,
        Some("errors") => HostSort::Errors,
        Some("name") => HostSort::Name,
        Some(other) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("sort `{other}`: expected queued, done, errors or name"),
            )
            .field("sort"))
        }
    };
    let limit = p.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(
            ApiError::new(StatusCode::BAD_REQUEST, "limit must be 1..=1000").field("limit"),
        );
    }
    let query = HostQuery {
        sort,
        limit: limit as usize,
        after: p.after,
        ..HostQuery::default()
    };
    let Some((views, page)) = state.control.hosts(query).await else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the frontier is not answering",
        ));
    };
    let hosts = views
        .into_iter()
        .map(|v| {
            let h = v.info;
            HostBody {
                host: h.host,
                queued: h.queued,
                in_flight: h.in_flight,
                done: h.done,
                errors: h.errors,
                admitted: h.admitted,
                delay_ms: h.delay.as_millis() as u64,
                delay_reason: h.delay_reason.as_str().to_owned(),
                latency_delay_ms: h.latency_delay.as_millis() as u64,
                crawl_delay_ms: h.crawl_delay.as_millis() as u64,
                backoff_ms: h.backoff.as_millis() as u64,
                ready_at_unix_ms: unix_ms_in(h.ready_in),
                blocked_until: h.blocked_for.map(unix_ms_in),
                max_in_flight: h.max_in_flight,
                max_pages: h.max_pages,
                max_done: h.max_done,
                robots: v.robots.to_owned(),
                address: h.address,
                address_hosts: h.address_hosts,
                address_in_flight: h.address_in_flight,
            }
        })
        .collect();
    Ok(Json(HostsResponse {
        hosts,
        next: page.next,
        total: page.total,
    }))
}

/// Changes one host's limits while the crawl runs.
#[utoipa::path(put, path = "/api/v1/hosts/{host}", request_body = HostUpdate,
    params(("host" = String, Path, description = "`host` or `host:port`")),
    responses((status = 200, body = StateResponse), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody), (status = 413, body = ErrorBody),
              (status = 415, body = ErrorBody)))]
pub(crate) async fn put_host(
    CrawlState(state): CrawlState,
    _: StateChange,
    Path(host): Path<String>,
    JsonObject(u): JsonObject<HostUpdate>,
) -> Result<Json<StateResponse>, ApiError> {
    if u.max_in_flight.is_some_and(|n| !(1..=100_000).contains(&n)) {
        return Err(
            ApiError::new(StatusCode::BAD_REQUEST, "max_in_flight must be 1..=100000")
                .field("max_in_flight"),
        );
    }
    if u.delay_ms.is_some_and(|d| d > MAX_SECS * 1000) {
        return Err(
            ApiError::new(StatusCode::BAD_REQUEST, "delay_ms must be at most a year")
                .field("delay_ms"),
        );
    }
    if u.blocked_until.is_some_and(|t| t > MAX_BLOCKED_UNTIL) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("blocked_until must be at most {MAX_BLOCKED_UNTIL} (2100-01-01, in Unix ms)"),
        )
        .field("blocked_until"));
    }
    if u.recrawl_secs.is_some_and(|s| s > MAX_SECS) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "recrawl_secs must be at most a year",
        )
        .field("recrawl_secs"));
    }
    if u.recrawl_secs.is_some() {
        if let Err(why) = state.control.check_host_recrawl() {
            return Err(ApiError::new(StatusCode::CONFLICT, why).field("recrawl_secs"));
        }
    }
    let now_ms = unix_ms_in(Duration::ZERO);
    let controls = HostControls {
        delay: u.delay_ms.map(Duration::from_millis),
        max_in_flight: u.max_in_flight.map(|n| n as u32),
        block_for: u
            .blocked_until
            .map(|t| Duration::from_millis(t.saturating_sub(now_ms))),
        max_pages: u.max_pages,
        max_done: u.max_done,
        recrawl_secs: u.recrawl_secs.map(|s| u32::try_from(s).unwrap_or(u32::MAX)),
    };
    if !state.control.set_host(&host, controls).await {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no host `{host}` in this crawl"),
        ));
    }
    Ok(Json(StateResponse {
        state: "updated".into(),
    }))
}

/// Drops every URL queued for one host or asleep in its queue (url-frontier's DeleteQueue):
/// they are done, unfetched, and stay known (offered again, they are duplicates). Fetches under way finish as usual;
/// the host keeps its limits and figures.
/// Like pause, it is a state change: an empty JSON object (or nothing) as JSON.
#[utoipa::path(delete, path = "/api/v1/hosts/{host}/queue", request_body = Empty,
    params(("host" = String, Path, description = "`host` or `host:port`")),
    responses((status = 200, body = DeletedResponse), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 415, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub(crate) async fn delete_host_queue(
    CrawlState(state): CrawlState,
    _: StateChange,
    Path(host): Path<String>,
    body: axum::body::Bytes,
) -> ApiResult<DeletedResponse> {
    no_fields(&body)?;
    match state.control.delete_queue(&host, 0).await {
        Some(deleted) => Ok(Json(DeletedResponse { deleted })),
        None => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the frontier is not answering",
        )),
    }
}

/// `GET /api/v1/events` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct EventsParams {
    /// Which records to send: `all` (default), `errors` (no response, or a status ≥ 400) or
    /// `none` (status events only).
    #[param(pattern = "^(all|errors|none)$")]
    records: Option<String>,
}

/// One open event stream, counted against `service.max_event_streams` until dropped.
#[derive(Debug)]
struct StreamSlot(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl StreamSlot {
    fn take(state: &AppState) -> Option<Self> {
        use std::sync::atomic::Ordering;
        let open = &state.event_streams;
        let max = state.limits.max_event_streams;
        open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < max).then_some(n + 1)
        })
        .ok()
        .map(|_| StreamSlot(std::sync::Arc::clone(open)))
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// Server-sent events: `page` (a `pages.jsonl` record, as written), `status` (every
/// second), and `lagged` (this reader missed that many records). A reader that stops
/// reading is dropped after `service.write_timeout_secs`.
#[utoipa::path(get, path = "/api/v1/events", params(EventsParams),
    responses((status = 200, description = "text/event-stream of `page` and `status` events"),
              (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 503, body = ErrorBody)))]
pub(crate) async fn events(
    CrawlState(state): CrawlState,
    params: Result<Query<EventsParams>, QueryRejection>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let Query(p) = params?;
    let Some(slot) = StreamSlot::take(&state) else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "{} event streams are open already (service.max_event_streams)",
                state.limits.max_event_streams
            ),
        ));
    };
    let filter: fn(&engine::output::PageRecord) -> bool = match p.records.as_deref() {
        None | Some("all") => |_| true,
        Some("errors") => |r| r.error.is_some() || r.status.is_none_or(|s| s >= 400),
        Some("none") => |_| false,
        Some(other) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("records `{other}`: expected all, errors or none"),
            )
            .field("records"))
        }
    };
    let rx = state.control.subscribe();
    let tick = tokio::time::interval(Duration::from_secs(1));
    let stream = futures_util::stream::unfold(
        (rx, tick, state, slot),
        move |(mut rx, mut tick, state, slot)| async move {
            let event = loop {
                tokio::select! {
                    _ = state.shutdown.cancelled() => return None,
                    _ = tick.tick() => {
                        // A crawl stopping (a named crawl deleted) has nothing more to say.
                        if state.control.stopping() {
                            return None;
                        }
                        let s = status_body(&state).await;
                        break Event::default().event("status").json_data(s).ok()?;
                    }
                    got = rx.recv() => match got {
                        Ok(record) if filter(&record) => {
                            break Event::default().event("page").json_data(&*record).ok()?;
                        }
                        Ok(_) => continue,
                        // A slow reader missed records: say how many, and go on.
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                            break Event::default().event("lagged").data(n.to_string());
                        }
                        Err(_) => return None,
                    },
                }
            };
            Some((Ok(event), (rx, tick, state, slot)))
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// `GET /api/v1/errors` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ErrorsParams {
    /// Most records (default and at most 100), newest first.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u64>,
}

/// The last error records (no response, or a status of 400 or more), newest first: what
/// the dashboard shows when it opens.
#[utoipa::path(get, path = "/api/v1/errors", params(ErrorsParams),
    responses((status = 200, body = ErrorsResponse), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody)))]
pub(crate) async fn errors(
    CrawlState(state): CrawlState,
    params: Result<Query<ErrorsParams>, QueryRejection>,
) -> ApiResult<ErrorsResponse> {
    let Query(p) = params?;
    let limit = p.limit.unwrap_or(100);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "limit must be 1..=100").field("limit"));
    }
    let records = state
        .control
        .recent_errors(limit as usize)
        .into_iter()
        .map(|r| serde_json::to_value(&*r).unwrap_or_default())
        .collect();
    Ok(Json(ErrorsResponse { records }))
}

/// A route that does not exist.
pub(crate) async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "no such route")
}
