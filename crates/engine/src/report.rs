//! What a crawl reports: `stats.json` at the end ([`Summary`]), `status.json` every
//! `crawl.status_secs` (the heartbeat `crawler health` reads, which also stops a crawl whose
//! state cannot be written), and progress as a live terminal line or periodic log lines.
//! Every figure comes from the frontier's [`Stats`](frontier::Stats) and the workers'
//! counters; nothing here touches the queue.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::counters::Counters;
use crate::frontier_call::FrontierClient;
use crate::lease_table::Leases;
use crate::output;
use crate::pause::Pause;
use crate::resume as state;
use crate::run::Run;
use crate::stop::StopReason;

/// What the reports read: the counters, the frontier, the run, the external leases, the
/// state and its pause, and when the crawl started.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) counters: Arc<Counters>,
    pub(crate) frontier: FrontierClient,
    pub(crate) run: Run,
    pub(crate) leases: Arc<Leases>,
    pub(crate) store: Option<Arc<store::Store>>,
    pub(crate) pause: Arc<Pause>,
    /// When the crawl started (RFC 3339) and its clock.
    pub(crate) started_at: String,
    pub(crate) started: Instant,
    pub(crate) status_secs: u64,
    pub(crate) progress_secs: u64,
    pub(crate) out_dir: std::path::PathBuf,
    /// The memory governor (`crawl.max_memory_mb`), when on.
    pub(crate) governor: Option<Arc<crate::governor::Governor>>,
}

/// What `stats.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// How the crawl ended.
    pub stopped_by: StopReason,
    /// Lines written to `pages.jsonl` by this run.
    pub pages: u64,
    /// Lines of this crawl in all: earlier runs of a resumed crawl, and this one.
    pub pages_total: u64,
    /// Pages by final status (`"200"`, `"301"`, …, `"error"` when no response).
    pub by_status: BTreeMap<String, u64>,
    /// URLs not fetched because robots.txt disallows them.
    pub robots_disallowed: u64,
    /// Origins whose robots.txt could not be had (unreachable, 5xx), and why: each of their
    /// URLs has a record with that reason (at most 100 origins listed).
    pub robots_unreachable: BTreeMap<String, String>,
    /// Origins not crawled because their robots.txt `Crawl-delay` (seconds) is above
    /// `politeness.max_backoff_secs`: each of their URLs has a record saying so (at most 100).
    pub crawl_delay_skipped: BTreeMap<String, f64>,
    /// Seeds that got a response (0 with no earlier pages: the crawl exits 69).
    pub seeds_fetched: u64,
    /// Seeds that got none, and why (at most 100).
    pub seed_errors: Vec<String>,
    /// Retries made (transient failures re-queued).
    pub retries: u64,
    /// Body bytes read.
    pub bytes: u64,
    /// Wall time of the crawl.
    pub duration_secs: f64,
    /// Pages per second over the last 10 seconds or so before the end.
    pub pages_per_sec: f64,
    /// `pages / duration_secs`: the average of this run.
    pub pages_per_sec_avg: f64,
    /// The process's peak resident memory (Linux `VmHWM`; absent elsewhere).
    pub peak_rss_bytes: Option<u64>,
    /// Seconds the memory governor held the crawl back (absent when it is off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_throttled_secs: Option<f64>,
    /// The frontier's counters.
    pub frontier: FrontierSummary,
    /// The durable state (absent with `crawl.persist = false`).
    pub state: Option<state::StateSummary>,
}

/// The frontier part of [`Summary`].
#[derive(Debug, Clone, Serialize)]
pub struct FrontierSummary {
    /// Links offered.
    pub offered: u64,
    /// Links admitted as new.
    pub admitted: u64,
    /// Links the visited set had seen.
    pub duplicates: u64,
    /// Links refused, by reason.
    pub out_of_scope: BTreeMap<String, u64>,
    /// URLs still queued (memory + disk) when the crawl stopped.
    pub queued: u64,
    /// Hosts the frontier has seen.
    pub hosts: u64,
    /// Most URLs held in memory at once.
    pub max_queued_memory: u64,
    /// Bits of the visited-set filter.
    pub filter_bits: u64,
    /// Fraction of them set.
    pub filter_fill: f64,
    /// The filter's estimated false-positive probability now.
    pub filter_fpp: f64,
    /// Slices of the scalable filter.
    pub filter_slices: u64,
    /// A shared frontier (`backend = "redis"`): leases that expired (their holders died or
    /// stalled) and went back to the queue, over the whole crawl.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leases_expired: Option<u64>,
    /// A shared frontier: leases of this process that expired before it completed them
    /// (another process fetched those URLs too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leases_lost: Option<u64>,
}

pub(crate) fn state_name(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Finished => "finished",
        StopReason::MaxPages => "max_pages",
        StopReason::MaxDuration => "max_duration",
        StopReason::Shutdown => "shutdown",
        StopReason::StateError => "state_error",
        StopReason::OutputError => "output_error",
        StopReason::FrontierError => "frontier_error",
    }
}

/// The state of a crawl still running: `draining` once it stops, `paused` by an operator,
/// `waiting` with nothing queued and nothing in flight but URLs due again later (`[recrawl]`),
/// `idle` with none of those (a service waiting for seeds), else `running`.
pub(crate) fn live_state(report: &Report, s: &frontier::Stats) -> &'static str {
    if report.run.stopped() {
        "draining"
    } else if report.run.held() {
        "paused"
    } else if s.queued == 0 && s.in_flight == 0 && s.extra("scheduled") > 0 {
        "waiting"
    } else if s.queued == 0 && s.in_flight == 0 {
        "idle"
    } else {
        "running"
    }
}

/// `status.json` of a running crawl.
pub(crate) fn live_status(report: &Report, s: &frontier::Stats) -> output::Status {
    status(report, s, report.started, live_state(report, s))
}

pub(crate) fn status(
    report: &Report,
    s: &frontier::Stats,
    started: Instant,
    state: &str,
) -> output::Status {
    let pages = report.counters.pages.load(Ordering::Relaxed);
    let average = pages as f64 / started.elapsed().as_secs_f64().max(1e-9);
    output::Status {
        state: state.to_owned(),
        started_at: report.started_at.clone(),
        queued_memory: s.extra("queued_memory"),
        queued_disk: s.extra("queued_disk"),
        by_status: crate::sync::lock(&report.counters.by_status).clone(),
        bytes: report.counters.bytes.load(Ordering::Relaxed),
        leases_out: report.leases.out(),
        pid: std::process::id(),
        updated_at: crate::clock::now_rfc3339(),
        updated_unix_ms: crate::clock::now_unix_ms(),
        every_secs: report.status_secs,
        pages,
        pages_total: pages + report.counters.pages_before.load(Ordering::Relaxed),
        pages_per_sec: report.counters.rate.rate(Instant::now(), pages, average),
        pages_per_sec_avg: average,
        queued: s.queued,
        in_flight: s.in_flight,
        hosts: s.hosts,
        filter_fill: s.filter_fill(),
        filter_fpp: s.filter_fpp,
        state_backlog: report.store.as_ref().map_or(0, |st| st.backlog()),
        frontier_unavailable_secs: report.frontier.health().unavailable_secs(),
        frontier_error: report.frontier.health().problem(),
        paused: report.pause.active(),
        paused_secs: report.pause.secs(),
        scheduled: s.extra("scheduled"),
        next_due: next_due(s),
        due_next_hour: s.extra("due_next_hour"),
        refetches_changed: report.counters.refetches_changed.load(Ordering::Relaxed),
        refetches_unchanged: report.counters.refetches_unchanged.load(Ordering::Relaxed),
        memory: report.governor.as_ref().map(|g| g.reading().status()),
    }
}

/// When the next URL is due again (`[recrawl]`), RFC 3339.
pub(crate) fn next_due(s: &frontier::Stats) -> Option<String> {
    let due = s.extra("next_due");
    (due > 0).then(|| warc::Utc::of(std::time::UNIX_EPOCH + Duration::from_secs(due)).rfc3339())
}

/// Checkpoints failed in a row after which the crawl stops.
const STATE_FAILURES_TO_STOP: u64 = 3;

/// Rewrites `status.json` every `crawl.status_secs`: a heartbeat that stops when the runtime
/// stops making progress, which is what `crawler health` checks.
pub(crate) fn spawn_status(report: Arc<Report>, started: Instant) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(report.status_secs.max(1)));
        loop {
            tick.tick().await;
            if let Some(store) = &report.store {
                let s = store.stats();
                if s.consecutive_failures >= STATE_FAILURES_TO_STOP {
                    tracing::error!(
                        failures = s.consecutive_failures,
                        error = s.last_error.as_deref().unwrap_or(""),
                        "the crawl state cannot be written; stopping (nothing new would be durable)"
                    );
                    report.run.stop(StopReason::StateError);
                }
            }
            let stats = report.frontier.stats().await;
            let _ = started;
            let st = live_status(&report, &stats);
            let dir = report.out_dir.clone();
            match tokio::task::spawn_blocking(move || output::write_status(&dir, &st)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "cannot write status.json"),
                Err(_) => return,
            }
        }
    })
}

/// A one-line live status on a terminal: pages, rate, queue (memory + disk), in flight,
/// hosts, filter fill and estimated FPP.
pub(crate) fn spawn_bar(report: Arc<Report>, started: Instant) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        // Cleared when the task is aborted at the end of the crawl.
        struct Clear(indicatif::ProgressBar);
        impl Drop for Clear {
            fn drop(&mut self) {
                self.0.finish_and_clear();
            }
        }
        let bar = Clear(bar);
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tick.tick().await;
            let s = report.frontier.stats().await;
            let pages = report.counters.pages.load(Ordering::Relaxed);
            let average = pages as f64 / started.elapsed().as_secs_f64().max(1e-9);
            let rate = report.counters.rate.rate(Instant::now(), pages, average);
            let waiting = match next_due(&s) {
                Some(at) => format!(" | {} scheduled, next due {at}", s.extra("scheduled")),
                None => String::new(),
            };
            bar.0.set_message(format!(
                "{pages} pages, {rate:.0}/s | queue {} mem + {} disk | {} in flight | {} hosts | filter {:.2}% full, fpp {:.1e}{waiting}",
                s.extra("queued_memory"),
                s.extra("queued_disk"),
                s.in_flight,
                s.hosts,
                100.0 * s.filter_fill(),
                s.filter_fpp
            ));
            bar.0.tick();
        }
    })
}

pub(crate) fn spawn_progress(report: Arc<Report>, started: Instant) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let every = Duration::from_secs(report.progress_secs.max(1));
        let mut tick = tokio::time::interval(every);
        tick.tick().await;
        loop {
            tick.tick().await;
            let s = report.frontier.stats().await;
            let pages = report.counters.pages.load(Ordering::Relaxed);
            let average = pages as f64 / started.elapsed().as_secs_f64().max(1e-9);
            tracing::info!(
                pages,
                pages_per_sec = format_args!(
                    "{:.0}",
                    report.counters.rate.rate(Instant::now(), pages, average)
                ),
                pages_per_sec_avg = format_args!("{average:.0}"),
                queued_memory = s.extra("queued_memory"),
                queued_disk = s.extra("queued_disk"),
                in_flight = s.in_flight,
                hosts = s.hosts,
                filter_fill = format_args!("{:.4}", s.filter_fill()),
                filter_fpp = format_args!("{:.2e}", s.filter_fpp),
                scheduled = s.extra("scheduled"),
                next_due = next_due(&s).unwrap_or_default(),
                state = live_state(&report, &s),
                memory = report
                    .governor
                    .as_ref()
                    .map(|g| memory_line(&g.reading()))
                    .unwrap_or_default(),
                "progress"
            );
        }
    })
}

/// The progress line's memory field: `476/512 MB` and what the governor holds back.
fn memory_line(r: &crate::governor::Reading) -> String {
    let mb = |n: u64| n / (1024 * 1024);
    let used = format!("{}/{} MB", mb(r.rss_bytes), mb(r.budget_bytes));
    match r.throttle {
        crate::governor::Throttle::None => used,
        t => format!("{used}, throttled ({}): fetches {}", t.name(), r.fetches),
    }
}

pub(crate) fn summarize(report: &Report, s: &frontier::Stats, started: Instant) -> Summary {
    let c = &report.counters;
    let pages = c.pages.load(Ordering::Relaxed);
    let secs = started.elapsed().as_secs_f64();
    Summary {
        stopped_by: report.run.reason().unwrap_or(StopReason::Finished),
        pages,
        pages_total: pages + c.pages_before.load(Ordering::Relaxed),
        by_status: c
            .by_status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone(),
        robots_disallowed: c.robots_disallowed.load(Ordering::Relaxed),
        robots_unreachable: c
            .robots_unreachable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone(),
        crawl_delay_skipped: c
            .crawl_delay_skipped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone(),
        seeds_fetched: c.seeds_fetched.load(Ordering::Relaxed),
        seed_errors: c
            .seed_errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone(),
        retries: c.retries.load(Ordering::Relaxed),
        bytes: c.bytes.load(Ordering::Relaxed),
        duration_secs: secs,
        pages_per_sec: c
            .rate
            .rate(Instant::now(), pages, pages as f64 / secs.max(1e-9)),
        pages_per_sec_avg: pages as f64 / secs.max(1e-9),
        peak_rss_bytes: peak_rss_bytes(),
        memory_throttled_secs: report
            .governor
            .as_ref()
            .map(|g| g.reading().throttled.as_secs_f64()),
        frontier: FrontierSummary {
            offered: s.offered,
            admitted: s.admitted,
            duplicates: s.duplicates,
            out_of_scope: s
                .out_of_scope
                .iter()
                .map(|(r, n)| (r.name().to_owned(), *n))
                .collect(),
            queued: s.queued,
            hosts: s.hosts,
            max_queued_memory: s.extra("max_queued_memory"),
            filter_bits: s.filter_bits,
            filter_fill: s.filter_fill(),
            filter_fpp: s.filter_fpp,
            filter_slices: s.extra("filter_slices"),
            leases_expired: s.extra.get("leases_expired").copied(),
            leases_lost: s.extra.get("leases_lost_here").copied(),
        },
        state: None,
    }
}

/// The process's peak resident set (`VmHWM` of `/proc/self/status`), where Linux tells it.
fn peak_rss_bytes() -> Option<u64> {
    proc_status_kib("VmHWM:").map(|kib| kib * 1024)
}

/// A `kB` field of `/proc/self/status` (`field` with its colon), where Linux tells it.
pub(crate) fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()
}
