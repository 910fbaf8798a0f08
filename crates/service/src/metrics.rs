//! `GET /metrics`: Prometheus' text format (OpenMetrics) through `prometheus-client`.
//!
//! A scrape takes one [`MetricsSnapshot`] (counters the crawl keeps anyway, no per-host
//! work) and encodes it into a registry made for that scrape: nothing is registered twice,
//! and the figures all come from the same instant. Counters get their `_total` suffix and
//! the duration histogram its `_seconds` unit from the encoder, per Prometheus' conventions.

use std::sync::atomic::AtomicU64;

use engine::{HistogramSnapshot, MetricsSnapshot};
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

/// The content type of the OpenMetrics text format.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug)]
struct Histogram(HistogramSnapshot);

impl EncodeMetric for Histogram {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        // The encoder sums the buckets itself: hand it per-bucket counts, `+Inf` as f64::MAX.
        let mut prev = 0;
        let buckets: Vec<(f64, u64)> = self
            .0
            .buckets
            .iter()
            .map(|&(upper, cumulative)| {
                let n = cumulative - prev;
                prev = cumulative;
                (if upper.is_finite() { upper } else { f64::MAX }, n)
            })
            .collect();
        encoder.encode_histogram::<NoLabelSet>(self.0.sum, self.0.count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

fn counter(n: u64) -> Counter {
    let c = Counter::default();
    c.inc_by(n);
    c
}

fn counter_f(x: f64) -> Counter<f64, AtomicU64> {
    let c = Counter::<f64, AtomicU64>::default();
    c.inc_by(x);
    c
}

fn gauge(n: u64) -> Gauge {
    let g = Gauge::default();
    g.set(i64::try_from(n).unwrap_or(i64::MAX));
    g
}

fn gauge_f(x: f64) -> Gauge<f64, AtomicU64> {
    let g = Gauge::<f64, AtomicU64>::default();
    g.set(x);
    g
}

type Labels = Vec<(String, String)>;

fn family(rows: impl IntoIterator<Item = (&'static str, String, u64)>) -> Family<Labels, Counter> {
    let f = Family::<Labels, Counter>::default();
    for (label, value, n) in rows {
        f.get_or_create(&vec![(label.to_owned(), value)]).inc_by(n);
    }
    f
}

/// One crawl of the service as `/metrics` shows it beside the `DEFAULT` crawl's figures.
#[derive(Debug, Clone, Default)]
pub struct CrawlFigures {
    /// Its ID.
    pub id: String,
    /// URLs queued.
    pub queued: u64,
    /// URLs out (fetched by the built-in workers or held by clients).
    pub in_flight: u64,
    /// URLs done.
    pub done: u64,
}

/// Encodes `m` (the `DEFAULT` crawl's figures) and `crawls` (every crawl's URLs, by state) as
/// the OpenMetrics text.
pub fn encode(m: MetricsSnapshot, crawls: &[CrawlFigures]) -> String {
    let mut r = Registry::with_prefix("crawler");
    let by_crawl = Family::<Labels, Gauge>::default();
    for c in crawls {
        for (state, n) in [
            ("queued", c.queued),
            ("in_flight", c.in_flight),
            ("done", c.done),
        ] {
            by_crawl
                .get_or_create(&vec![
                    ("crawl".to_owned(), c.id.clone()),
                    ("state".to_owned(), state.to_owned()),
                ])
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }
    r.register(
        "crawl_urls",
        "URLs of each crawl of the service (DEFAULT and the url-frontier crawl IDs), by \
         state: queued, in_flight, done",
        by_crawl,
    );
    let s = &m.frontier;
    r.register(
        "fetches",
        "Fetches recorded, by HTTP status class (error: no response)",
        family(m.fetches_by_class.into_iter().map(|(c, n)| ("class", c, n))),
    );
    r.register_with_unit(
        "fetch_duration",
        "Fetch time, request to last byte",
        Unit::Seconds,
        Histogram(m.latency),
    );
    r.register_with_unit("body", "Body bytes read", Unit::Bytes, counter(m.bytes));
    r.register(
        "retries",
        "Fetches scheduled again after a transient failure",
        counter(m.retries),
    );
    r.register(
        "robots_disallowed",
        "URLs robots.txt disallowed",
        counter(m.robots_disallowed),
    );
    r.register(
        "links_offered",
        "Links offered to the frontier",
        counter(s.offered),
    );
    r.register(
        "links_admitted",
        "Links admitted as new",
        counter(s.admitted),
    );
    r.register(
        "links_duplicate",
        "Links the visited set had seen",
        counter(s.duplicates),
    );
    r.register(
        "links_out_of_scope",
        "Links refused, by scope rule",
        family(
            s.out_of_scope
                .iter()
                .map(|(rule, n)| ("rule", rule.name().to_owned(), *n)),
        ),
    );
    let queued = Family::<Labels, Gauge>::default();
    let (memory, disk) = (s.extra("queued_memory"), s.extra("queued_disk"));
    // A frontier shared in Redis queues there: neither in this process' memory nor on its disk.
    let shared = s.queued.saturating_sub(memory + disk);
    for (place, n) in [("memory", memory), ("disk", disk), ("redis", shared)] {
        queued
            .get_or_create(&vec![("place".to_owned(), place.to_owned())])
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }
    r.register(
        "queue_depth",
        "URLs queued: in memory, on disk, or in the Redis a shared frontier lives in",
        queued,
    );
    r.register(
        "in_flight",
        "Fetches in flight (external leases included)",
        gauge(s.in_flight),
    );
    r.register("hosts", "Hosts known to the frontier", gauge(s.hosts));
    r.register("pages", "Records written", counter(m.pages));
    r.register(
        "refetches",
        "Refetches under a recrawl schedule that got a 304 or a 200, by whether the page had \
         changed since its last full fetch",
        family([
            ("changed", "true".to_owned(), m.refetches_changed),
            ("changed", "false".to_owned(), m.refetches_unchanged),
        ]),
    );
    r.register(
        "not_modified",
        "304 answers to conditional requests",
        counter(m.not_modified),
    );
    r.register_with_unit(
        "not_modified_saved",
        "Body bytes the 304 answers saved (the last full responses' sizes)",
        Unit::Bytes,
        counter(m.not_modified_bytes_saved),
    );
    r.register(
        "ip_groups",
        "Address groups of hosts (politeness per address: politeness.ip_delay_ms, max_per_ip)",
        gauge(s.extra("address_groups")),
    );
    r.register(
        "ip_groups_shared",
        "Address groups holding more than one host name",
        gauge(s.extra("address_groups_shared")),
    );
    r.register(
        "ip_group_hosts_max",
        "Most host names in one address group",
        gauge(s.extra("address_group_hosts_max")),
    );
    r.register(
        "ip_group_waiting_hosts",
        "Hosts whose turn came while their address group was full or its gap not passed",
        gauge(s.extra("address_waiting_hosts")),
    );
    r.register(
        "scheduled",
        "URLs fetched and waiting to be due again (recrawl)",
        gauge(s.extra("scheduled")),
    );
    r.register(
        "due_next_hour",
        "Scheduled URLs due within the next hour (recrawl)",
        gauge(s.extra("due_next_hour")),
    );
    r.register_with_unit(
        "next_due_timestamp",
        "When the next scheduled URL is due, Unix time (0: none)",
        Unit::Seconds,
        gauge(s.extra("next_due")),
    );
    r.register_with_unit(
        "filter_fill",
        "Fraction of the visited-set filter's bits set",
        Unit::Ratios,
        gauge_f(s.filter_fill()),
    );
    r.register(
        "filter_fpp",
        "The visited-set filter's estimated false-positive probability",
        gauge_f(s.filter_fpp),
    );
    r.register(
        "state_backlog",
        "Admissions and completions not yet committed to the crawl state",
        gauge(m.state_backlog),
    );
    r.register(
        "checkpoints",
        "Checkpoints of the crawl state committed",
        counter(m.checkpoints),
    );
    r.register_with_unit(
        "checkpoint_time",
        "Time spent committing checkpoints, the output's sync included",
        Unit::Seconds,
        counter_f(m.checkpoint_seconds),
    );
    r.register_with_unit(
        "last_checkpoint_duration",
        "The last committed checkpoint's time",
        Unit::Seconds,
        gauge_f(m.last_checkpoint_seconds),
    );
    r.register(
        "leases_out",
        "External fetchers' leases out",
        gauge(m.leases_out),
    );
    r.register(
        "leases_expired",
        "External leases that expired and were served again",
        counter(m.leases_expired),
    );
    r.register(
        "frontier_failures",
        "Frontier calls that failed, by kind: unavailable (unreachable, loading, a failover; \
         retried), full (Redis out of memory; retried once it has room), failed (refused for \
         good; the crawl stops)",
        family(
            m.frontier_failures
                .iter()
                .map(|(kind, n)| ("kind", (*kind).to_owned(), *n)),
        ),
    );
    r.register_with_unit(
        "frontier_unavailable",
        "How long the frontier has been failing now (0: it answers)",
        Unit::Seconds,
        gauge_f(m.frontier_unavailable_secs),
    );
    r.register(
        "leases_lost",
        "Leases of this process that expired before their records were written (another \
         process fetched those URLs; nothing was written for them here)",
        counter(m.leases_lost),
    );
    if let Some(mem) = &m.memory {
        register_memory(&mut r, mem);
    }
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, &r);
    text
}

/// The memory governor's figures (`crawl.max_memory_mb`; absent when it is off).
fn register_memory(r: &mut Registry, mem: &engine::output::MemoryStatus) {
    r.register_with_unit(
        "memory_resident",
        "The process's resident memory at the governor's last sample",
        Unit::Bytes,
        gauge(mem.rss_bytes),
    );
    r.register_with_unit(
        "memory_budget",
        "crawl.max_memory_mb",
        Unit::Bytes,
        gauge(mem.budget_bytes),
    );
    let level = match mem.throttle.as_str() {
        "spill" => 1,
        "fetches" => 2,
        "floor" => 3,
        _ => 0,
    };
    r.register(
        "memory_throttle_level",
        "How hard the memory governor holds back: 0 none, 1 queues spill sooner, 2 fewer \
         fetches start, 3 one fetch at a time",
        gauge(level),
    );
    r.register_with_unit(
        "memory_throttled",
        "Time the memory governor spent throttling",
        Unit::Seconds,
        counter_f(mem.throttled_secs),
    );
    r.register(
        "fetch_slots_effective",
        "Fetches that may start at once now (crawl.concurrency when not held back)",
        gauge(mem.fetch_slots),
    );
    r.register(
        "queue_memory_capacity_effective",
        "Queued URLs kept in memory now (frontier.memory_capacity when not held back)",
        gauge(mem.queue_capacity),
    );
}
