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

use crate::output;
use crate::state;
use crate::worker::Ctx;

/// How the crawl ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Nothing queued, nothing in flight.
    Finished,
    /// `max_pages` fetches made.
    MaxPages,
    /// `max_duration_secs` passed.
    MaxDuration,
    /// SIGINT/SIGTERM (or the caller's cancellation).
    Shutdown,
    /// The crawl state could not be written (several checkpoints failed in a row).
    StateError,
    /// `pages.jsonl` could not be written.
    OutputError,
}

/// What `stats.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// How the crawl ended.
    pub stopped_by: StopReason,
    /// Lines written to `pages.jsonl`.
    pub pages: u64,
    /// Pages by final status (`"200"`, `"301"`, …, `"error"` when no response).
    pub by_status: BTreeMap<String, u64>,
    /// URLs not fetched because robots.txt disallows them.
    pub robots_disallowed: u64,
    /// Origins whose robots.txt could not be had (unreachable, 5xx), and why: each of their
    /// URLs has a record with that reason (at most 100 origins listed).
    pub robots_unreachable: BTreeMap<String, String>,
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
    /// `pages / duration_secs`.
    pub pages_per_sec: f64,
    /// The process's peak resident memory (Linux `VmHWM`; absent elsewhere).
    pub peak_rss_bytes: Option<u64>,
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
    }
}

/// The frontier's counters; empty ones (and a warning) when the frontier cannot answer.
pub(crate) async fn frontier_stats(ctx: &Ctx) -> frontier::Stats {
    ctx.frontier.stats().await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "frontier statistics unavailable");
        frontier::Stats::default()
    })
}

/// The state of a crawl still running: `draining` once it stops, `paused` by an operator,
/// `idle` with nothing queued and nothing in flight (a service waiting for seeds), else
/// `running`.
pub(crate) fn live_state(ctx: &Ctx, s: &frontier::Stats) -> &'static str {
    if ctx.stopped() {
        "draining"
    } else if ctx.held() {
        "paused"
    } else if s.queued == 0 && s.in_flight == 0 {
        "idle"
    } else {
        "running"
    }
}

/// `status.json` of a running crawl.
pub(crate) fn live_status(ctx: &Ctx, s: &frontier::Stats) -> output::Status {
    status(ctx, s, ctx.started, live_state(ctx, s))
}

pub(crate) fn status(
    ctx: &Ctx,
    s: &frontier::Stats,
    started: Instant,
    state: &str,
) -> output::Status {
    let pages = ctx.counters.pages.load(Ordering::Relaxed);
    output::Status {
        state: state.to_owned(),
        started_at: ctx.started_at.clone(),
        queued_memory: s.extra("queued_memory"),
        queued_disk: s.extra("queued_disk"),
        by_status: crate::worker::lock(&ctx.counters.by_status).clone(),
        bytes: ctx.counters.bytes.load(Ordering::Relaxed),
        leases_out: ctx.leases.out(),
        pid: std::process::id(),
        updated_at: output::now_rfc3339(),
        updated_unix_ms: output::now_unix_ms(),
        every_secs: ctx.cfg.crawl.status_secs,
        pages,
        pages_per_sec: pages as f64 / started.elapsed().as_secs_f64().max(1e-9),
        queued: s.queued,
        in_flight: s.in_flight,
        hosts: s.hosts,
        filter_fill: s.filter_fill(),
        filter_fpp: s.filter_fpp,
        state_backlog: ctx.store.as_ref().map_or(0, |st| st.backlog()),
        frontier_unavailable_secs: ctx.frontier_unavailable_secs(),
        paused: ctx.pause.active(),
        paused_secs: ctx.pause.secs(),
    }
}

/// Checkpoints failed in a row after which the crawl stops.
const STATE_FAILURES_TO_STOP: u64 = 3;

/// Rewrites `status.json` every `crawl.status_secs`: a heartbeat that stops when the runtime
/// stops making progress, which is what `crawler health` checks.
pub(crate) fn spawn_status(ctx: Arc<Ctx>, started: Instant) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(ctx.cfg.crawl.status_secs.max(1)));
        loop {
            tick.tick().await;
            if let Some(store) = &ctx.store {
                let s = store.stats();
                if s.consecutive_failures >= STATE_FAILURES_TO_STOP {
                    tracing::error!(
                        failures = s.consecutive_failures,
                        error = s.last_error.as_deref().unwrap_or(""),
                        "the crawl state cannot be written; stopping (nothing new would be durable)"
                    );
                    ctx.stop(StopReason::StateError);
                }
            }
            let stats = frontier_stats(&ctx).await;
            let _ = started;
            let st = live_status(&ctx, &stats);
            let dir = ctx.cfg.crawl.out_dir.clone();
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
pub(crate) fn spawn_bar(ctx: Arc<Ctx>, started: Instant) -> tokio::task::JoinHandle<()> {
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
            let s = frontier_stats(&ctx).await;
            let pages = ctx.counters.pages.load(Ordering::Relaxed);
            let rate = pages as f64 / started.elapsed().as_secs_f64().max(1e-9);
            bar.0.set_message(format!(
                "{pages} pages, {rate:.0}/s | queue {} mem + {} disk | {} in flight | {} hosts | filter {:.2}% full, fpp {:.1e}",
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

pub(crate) fn spawn_progress(ctx: Arc<Ctx>, started: Instant) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let every = Duration::from_secs(ctx.cfg.crawl.progress_secs.max(1));
        let mut tick = tokio::time::interval(every);
        tick.tick().await;
        loop {
            tick.tick().await;
            let s = frontier_stats(&ctx).await;
            let pages = ctx.counters.pages.load(Ordering::Relaxed);
            let secs = started.elapsed().as_secs_f64();
            tracing::info!(
                pages,
                pages_per_sec = format_args!("{:.0}", pages as f64 / secs.max(1e-9)),
                queued_memory = s.extra("queued_memory"),
                queued_disk = s.extra("queued_disk"),
                in_flight = s.in_flight,
                hosts = s.hosts,
                filter_fill = format_args!("{:.4}", s.filter_fill()),
                filter_fpp = format_args!("{:.2e}", s.filter_fpp),
                "progress"
            );
        }
    })
}

pub(crate) fn summarize(ctx: &Ctx, s: &frontier::Stats, started: Instant) -> Summary {
    let c = &ctx.counters;
    let pages = c.pages.load(Ordering::Relaxed);
    let secs = started.elapsed().as_secs_f64();
    Summary {
        stopped_by: ctx
            .stop
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or(StopReason::Finished),
        pages,
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
        seeds_fetched: c.seeds_fetched.load(Ordering::Relaxed),
        seed_errors: c
            .seed_errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone(),
        retries: c.retries.load(Ordering::Relaxed),
        bytes: c.bytes.load(Ordering::Relaxed),
        duration_secs: secs,
        pages_per_sec: pages as f64 / secs.max(1e-9),
        peak_rss_bytes: peak_rss_bytes(),
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
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}
