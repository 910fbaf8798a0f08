//! The API's request and response bodies. Their `ToSchema` derives are the OpenAPI
//! document's schemas, so the document and the handlers cannot drift apart.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Integers as JSON Schema means them: `3` and `3.0` alike (a generator or a language without
/// integers may send either); anything else is refused with a clear message.
pub(crate) mod int {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer};

    fn whole<E: Error>(n: serde_json::Number) -> Result<u64, E> {
        // The document says int64: larger values are refused, not wrapped.
        const MAX: u64 = i64::MAX as u64;
        if let Some(u) = n.as_u64() {
            return match u {
                0..=MAX => Ok(u),
                _ => Err(E::custom(format!("{n} is larger than {MAX}"))),
            };
        }
        match n.as_f64() {
            Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= MAX as f64 => Ok(f as u64),
            _ => Err(E::custom(format!("{n} is not an integer in 0..={MAX}"))),
        }
    }

    pub(crate) fn u64<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        whole(serde_json::Number::deserialize(d)?)
    }

    pub(crate) fn opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        Option::<serde_json::Number>::deserialize(d)?
            .map(whole)
            .transpose()
    }
}

/// Most URLs (or leases) one call may name, whatever `service.max_urls_per_call` says.
pub const MAX_PER_CALL: u64 = 1_000_000;
/// Latest `blocked_until` taken: 2100-01-01T00:00:00Z, in Unix milliseconds.
pub const MAX_BLOCKED_UNTIL: u64 = 4_102_444_800_000;
/// Longest lease, delay or block, in seconds.
pub const MAX_SECS: u64 = 86_400 * 365;

/// An error: always JSON, with the reason and, where one is to blame, the field.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: String,
    /// The request field at fault, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// `GET /api/v1/status`: what `status.json` holds.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatusBody {
    /// `running`, `paused`, `idle` (nothing queued, nothing in flight), `waiting` (the same,
    /// but URLs are due again later: `[recrawl]`) or `draining`.
    pub state: String,
    /// `[recrawl]`: URLs fetched and waiting to be due again.
    pub scheduled: u64,
    /// `[recrawl]`: when the next of them is due (RFC 3339); absent with none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_due: Option<String>,
    /// `[recrawl]`: of them, due within the next hour (to the minute).
    pub due_next_hour: u64,
    /// `[recrawl]`: refetches recorded that found the page changed.
    pub refetches_changed: u64,
    /// `[recrawl]`: refetches recorded that found it unchanged (a 304 or the same digest).
    pub refetches_unchanged: u64,
    /// When the crawl started (RFC 3339).
    pub started_at: String,
    /// Records written by this run.
    pub pages: u64,
    /// Records of this crawl in all, earlier runs of a resumed crawl included.
    pub pages_total: u64,
    /// Records per second over the last 10 seconds or so.
    pub pages_per_sec: f64,
    /// Records per second since this run started.
    pub pages_per_sec_avg: f64,
    /// URLs queued in all (a frontier shared in Redis queues there, in neither of the next two).
    pub queued: u64,
    /// URLs queued in memory.
    pub queued_memory: u64,
    /// URLs queued on disk.
    pub queued_disk: u64,
    /// Fetches in flight (external leases included).
    pub in_flight: u64,
    /// External fetchers' leases out.
    pub leases_out: u64,
    /// Hosts known.
    pub hosts: u64,
    /// Records by HTTP status (`error`: no response).
    pub by_status: BTreeMap<String, u64>,
    /// Body bytes read.
    pub bytes: u64,
    /// Fraction of the visited-set filter's bits set.
    pub filter_fill: f64,
    /// The filter's estimated false-positive probability.
    pub filter_fpp: f64,
    /// State events not yet committed.
    pub state_backlog: u64,
    /// Fetching waits for the crawl state's checkpoints.
    pub state_paused: bool,
    /// Seconds the frontier has been unreachable (a shared frontier's Redis is down; the
    /// workers wait and retry); absent while it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontier_unavailable_secs: Option<f64>,
    /// Why the frontier is failing, while it is: `unavailable: …`, `full: …` (Redis out of
    /// memory: fetching waits for room) or `failed: …` (the crawl stops).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontier_error: Option<String>,
    /// The memory governor (`crawl.max_memory_mb`); absent when it is off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryBody>,
}

/// What the memory governor sees and does.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryBody {
    /// Resident memory at the last sample (every 100 ms).
    pub rss_bytes: u64,
    /// `crawl.max_memory_mb` in bytes.
    pub budget_bytes: u64,
    /// `none`, `spill` (from 75% of the budget: queues spill to disk sooner), `fetches` (from
    /// 90%: fewer fetches start) or `floor` (at the budget: one fetch at a time).
    pub throttle: String,
    /// Why, e.g. `resident 93% of 512 MB`.
    pub reason: String,
    /// Fetches that may start at once now (`crawl.concurrency` when not held back).
    pub fetch_slots: u64,
    /// Queued URLs kept in memory now (`frontier.memory_capacity` when not held back).
    pub queue_capacity: u64,
    /// Seconds spent throttling so far.
    pub throttled_secs: f64,
}

/// An object with no fields (`POST /api/v1/pause` and `/resume`; an empty body is taken too).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// `GET /api/v1/errors`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorsResponse {
    /// `pages.jsonl` records, newest first.
    #[schema(value_type = Vec<Object>)]
    pub records: Vec<serde_json::Value>,
}

/// A list of URLs (`POST /api/v1/seeds`, `POST /api/v1/forget`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UrlsRequest {
    /// Absolute http(s) URLs.
    pub urls: Vec<String>,
}

/// What became of one URL given to the crawl.
#[derive(Debug, Serialize, ToSchema)]
pub struct UrlOutcome {
    /// The URL as given.
    pub url: String,
    /// Seeds: `admitted`, `duplicate`, `out_of_scope` or `invalid`. Forget: `requeued` (it
    /// was done; it will be fetched again), `queued` (not fetched yet), `unknown` (never
    /// admitted) or `invalid`. Recrawl: `scheduled` (due at the time asked), `queued`
    /// (queued or in flight already), `never_seen` or `invalid`.
    pub result: String,
    /// The scope rule (`out_of_scope`) or the reason (`invalid`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `POST /api/v1/seeds`'s and `POST /api/v1/forget`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct UrlsResponse {
    /// One per URL, in order.
    pub results: Vec<UrlOutcome>,
}

/// `POST /api/v1/pause` and `/resume`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct StateResponse {
    /// The crawl's state after the call.
    pub state: String,
}

/// `DELETE /api/v1/hosts/{host}/queue`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeletedResponse {
    /// URLs that were queued for the host or asleep in its queue, dropped (0: none, or no
    /// such host).
    pub deleted: u64,
}

/// One host in `GET /api/v1/hosts`.
#[derive(Debug, Serialize, ToSchema)]
pub struct HostBody {
    /// `host` or `host:port`.
    pub host: String,
    /// URLs queued.
    pub queued: u64,
    /// Fetches in flight.
    pub in_flight: u32,
    /// URLs finished.
    pub done: u64,
    /// Failed fetches (host errors and retries).
    pub errors: u64,
    /// URLs admitted.
    pub admitted: u64,
    /// The gap between fetch starts now in force, in milliseconds.
    pub delay_ms: u64,
    /// What sets `delay_ms`: `configured` (`politeness.delay_ms`), `operator` (this host's
    /// `PUT`), `crawl_delay` (its robots.txt), `latency` (`politeness.delay_factor ×` its
    /// last fetch's duration), `backoff` (errors) or `ip_group` (its address group's gap or
    /// in-flight limit holds it).
    pub delay_reason: String,
    /// The latency term, in milliseconds: `politeness.delay_factor ×` the last fetch's
    /// duration, at most `politeness.max_delay_ms` (0: off, or nothing measured yet).
    pub latency_delay_ms: u64,
    /// robots.txt `Crawl-delay`, in milliseconds (0: none).
    pub crawl_delay_ms: u64,
    /// Back-off after errors, in milliseconds (0: healthy).
    pub backoff_ms: u64,
    /// Unix time (ms) before which the host is not fetched (politeness, back-off or a block).
    pub ready_at_unix_ms: u64,
    /// Unix time (ms) until which an operator blocked the host, if blocked.
    pub blocked_until: Option<u64>,
    /// Most fetches in flight at once.
    pub max_in_flight: u32,
    /// The host's admission budget, if any.
    pub max_pages: Option<u64>,
    /// Most URLs of the host finished, if limited (`PUT`'s `max_done`).
    pub max_done: Option<u64>,
    /// robots.txt: `unknown`, `fetching`, `allow_all`, `rules` or `unreachable`.
    pub robots: String,
    /// The address group its requests count in (an IPv4 address or an IPv6 `/64`), with
    /// politeness per address on (`politeness.ip_delay_ms`, `max_per_ip`) and once resolved.
    pub address: Option<String>,
    /// Hosts in that group.
    pub address_hosts: u32,
    /// Fetches in flight to that group.
    pub address_in_flight: u32,
}

/// `GET /api/v1/hosts`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct HostsResponse {
    /// The page of hosts.
    pub hosts: Vec<HostBody>,
    /// Cursor of the next page (`after=`), absent on the last.
    pub next: Option<String>,
    /// Hosts known in all.
    pub total: u64,
}

/// `PUT /api/v1/hosts/{host}`: settings to change; absent ones stay.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HostUpdate {
    /// Gap between fetch starts, in milliseconds (a `Crawl-delay` or back-off still wins;
    /// at most a year).
    #[serde(default, deserialize_with = "int::opt_u64")]
    #[schema(minimum = 0, maximum = 31_536_000_000_u64)]
    pub delay_ms: Option<u64>,
    /// Most fetches in flight at once.
    #[serde(default, deserialize_with = "int::opt_u64")]
    #[schema(minimum = 1, maximum = 100_000)]
    pub max_in_flight: Option<u64>,
    /// Unix time in milliseconds until which nothing of the host is fetched (0 or a past
    /// time: unblock; at most 2100-01-01).
    #[serde(default, deserialize_with = "int::opt_u64")]
    #[schema(minimum = 0, maximum = 4_102_444_800_000_u64)]
    pub blocked_until: Option<u64>,
    /// Most URLs admitted for the host.
    #[serde(default, deserialize_with = "int::opt_u64")]
    #[schema(minimum = 0)]
    pub max_pages: Option<u64>,
    /// Most URLs of the host finished, leases out counted (0 clears it): reached, nothing
    /// more of it is fetched or handed out, and its URLs stay queued (url-frontier's
    /// SetCrawlLimit).
    #[serde(default, deserialize_with = "int::opt_u64")]
    #[schema(minimum = 0)]
    pub max_done: Option<u64>,
    /// `[recrawl]`: seconds between fetches of each of the host's URLs, from each one's next
    /// completion (clamped to the crawl's bounds; 0 clears it; 409 without a schedule).
    #[serde(default, deserialize_with = "int::opt_u64")]
    #[schema(minimum = 0, maximum = 31_536_000)]
    pub recrawl_secs: Option<u64>,
}

/// `POST /api/v1/recrawl`: URLs fetched before, due again at `at`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecrawlRequest {
    /// Absolute http(s) URLs.
    pub urls: Vec<String>,
    /// When they are due, Unix seconds (now when absent or past; at most 2100-01-01).
    #[serde(default, deserialize_with = "int::opt_u64")]
    #[schema(minimum = 0, maximum = 4_102_444_800_u64)]
    pub at: Option<u64>,
}

/// `POST /api/v1/leases`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LeaseRequest {
    /// Most URLs wanted (at most `service.max_urls_per_call` are handed out in one call).
    #[serde(deserialize_with = "int::u64")]
    #[schema(minimum = 0, maximum = 1_000_000)]
    pub max: u64,
    /// Seconds to hold them (default: `service.lease_secs`); unreturned, they are served again.
    #[serde(default, deserialize_with = "int::opt_u64")]
    #[schema(minimum = 1, maximum = 86_400)]
    pub lease_secs: Option<u64>,
}

/// One leased URL.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeaseBody {
    /// Give it back with this id.
    pub lease_id: String,
    /// The URL to fetch.
    pub url: String,
    /// Link depth.
    pub depth: u32,
    /// The page that linked here.
    pub parent: Option<String>,
    /// Seconds the lease holds.
    pub lease_secs: u64,
}

/// `POST /api/v1/leases`'s answer (empty when nothing is due, or the crawl is paused).
#[derive(Debug, Serialize, ToSchema)]
pub struct LeasesResponse {
    /// The leases.
    pub leases: Vec<LeaseBody>,
}

/// One fetch result.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompletionBody {
    /// The lease id.
    pub lease_id: String,
    /// HTTP status (absent: no response; say why in `error`).
    #[serde(default, deserialize_with = "int::opt_u64")]
    #[schema(minimum = 100, maximum = 599)]
    pub status: Option<u64>,
    /// A redirect's `Location`, or where the fetch ended.
    #[serde(default)]
    pub final_url: Option<String>,
    /// `Content-Type` received.
    #[serde(default)]
    pub content_type: Option<String>,
    /// Body bytes read.
    #[serde(default, deserialize_with = "int::u64")]
    #[schema(minimum = 0)]
    pub bytes: u64,
    /// Fetch time, in milliseconds.
    #[serde(default, deserialize_with = "int::u64")]
    #[schema(minimum = 0)]
    pub fetch_ms: u64,
    /// Links found on the page (absolute, or relative to the URL).
    #[serde(default)]
    pub links: Vec<String>,
    /// What went wrong.
    #[serde(default)]
    pub error: Option<String>,
    /// The server's `Retry-After`, in seconds.
    #[serde(default, deserialize_with = "int::opt_u64")]
    #[schema(minimum = 0)]
    pub retry_after_secs: Option<u64>,
}

/// `POST /api/v1/leases/complete`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteRequest {
    /// Results, one per lease.
    pub results: Vec<CompletionBody>,
}

/// What became of one result.
#[derive(Debug, Serialize, ToSchema)]
pub struct CompletedBody {
    /// The lease id.
    pub lease_id: String,
    /// `recorded` (a `pages.jsonl` line), `retried` (served again later) or `unknown_lease`
    /// (expired or completed already: nothing changed).
    pub result: String,
}

/// `POST /api/v1/leases/complete`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct CompleteResponse {
    /// One per result, in order.
    pub results: Vec<CompletedBody>,
}
