//! `status.json` (a heartbeat while the crawl runs) and `stats.json` (the summary at its end),
//! each replaced whole (a temporary file and a rename), and the clock their fields use.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;

/// Writes `value` as `dir/stats.json` (via a temporary file and a rename).
pub fn write_stats(dir: &Path, value: &impl Serialize) -> io::Result<()> {
    let tmp = dir.join("stats.json.tmp");
    let mut f = File::create(&tmp)?;
    serde_json::to_writer_pretty(&mut f, value)?;
    f.write_all(b"\n")?;
    f.sync_all()?;
    std::fs::rename(tmp, dir.join("stats.json"))
}

/// What `status.json` holds: a heartbeat rewritten every `crawl.status_secs` while the crawl
/// runs, and once more when it ends. `crawler health` reads it.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Default)]
pub struct Status {
    /// `running`, `paused`, `idle`, `waiting` (for the next URL due again, `next_due`) or
    /// `draining` while the crawl runs, or how it ended
    /// (`finished`, `max_pages`, `max_duration`, `shutdown`).
    pub state: String,
    /// Process id of the crawler that wrote it.
    pub pid: u32,
    /// When it was written (RFC 3339, UTC).
    pub updated_at: String,
    /// The same instant in milliseconds since the Unix epoch (easy to compare).
    pub updated_unix_ms: u64,
    /// Seconds between heartbeats (`crawl.status_secs`).
    pub every_secs: u64,
    /// Pages written so far by this run.
    pub pages: u64,
    /// Pages of this crawl in all: earlier runs of a resumed crawl, and this one.
    #[serde(default)]
    pub pages_total: u64,
    /// Pages per second over the last 10 seconds or so.
    pub pages_per_sec: f64,
    /// Pages per second since this run started.
    #[serde(default)]
    pub pages_per_sec_avg: f64,
    /// URLs queued (memory and disk).
    pub queued: u64,
    /// Fetches in flight.
    pub in_flight: u64,
    /// Hosts known to the frontier.
    pub hosts: u64,
    /// Fraction of the visited-set filter's bits set.
    pub filter_fill: f64,
    /// The filter's estimated false-positive probability now.
    pub filter_fpp: f64,
    /// Admissions and completions not yet committed to the crawl state.
    #[serde(default)]
    pub state_backlog: u64,
    /// Seconds the frontier has been unreachable (a shared frontier's Redis is down: the
    /// workers wait and retry); absent while it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontier_unavailable_secs: Option<f64>,
    /// Why the frontier is failing, while it is: `unavailable: …` (unreachable, loading, a
    /// failover), `full: …` (Redis out of memory: fetching waits for room) or `failed: …`
    /// (refused for good: the crawl stops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontier_error: Option<String>,
    /// Fetching waits for the crawl state's checkpoints to catch up (a slow or stalled disk).
    #[serde(default)]
    pub paused: bool,
    /// Seconds fetching has been paused so far (0 when not paused).
    #[serde(default)]
    pub paused_secs: u64,
    /// When the crawl started (RFC 3339, UTC).
    #[serde(default)]
    pub started_at: String,
    /// Of `queued`, held in memory.
    #[serde(default)]
    pub queued_memory: u64,
    /// Of `queued`, waiting on disk.
    #[serde(default)]
    pub queued_disk: u64,
    /// Records by HTTP status (`"error"`: no response).
    #[serde(default)]
    pub by_status: std::collections::BTreeMap<String, u64>,
    /// Body bytes read.
    #[serde(default)]
    pub bytes: u64,
    /// External fetchers' leases out.
    #[serde(default)]
    pub leases_out: u64,
    /// `[recrawl]`: URLs fetched and waiting to be due again.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub scheduled: u64,
    /// `[recrawl]`: when the next of them is due (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_due: Option<String>,
    /// `[recrawl]`: of them, due within the next hour (to the minute).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub due_next_hour: u64,
    /// `[recrawl]`: refetches recorded that found the page changed, and unchanged.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refetches_changed: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refetches_unchanged: u64,
    /// The memory governor (`crawl.max_memory_mb`); absent when it is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryStatus>,
}

/// What the memory governor sees and does.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Default)]
pub struct MemoryStatus {
    /// Resident memory at the last sample.
    pub rss_bytes: u64,
    /// `crawl.max_memory_mb` in bytes.
    pub budget_bytes: u64,
    /// `none`, `spill` (queues spill sooner), `fetches` (fewer fetches start) or `floor`
    /// (one fetch at a time).
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

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Writes `status` as `dir/status.json` (via a temporary file and a rename, so a reader never
/// sees half of it).
pub fn write_status(dir: &Path, status: &Status) -> io::Result<()> {
    let tmp = dir.join("status.json.tmp");
    let mut f = File::create(&tmp)?;
    serde_json::to_writer_pretty(&mut f, status)?;
    f.write_all(b"\n")?;
    drop(f);
    std::fs::rename(tmp, dir.join("status.json"))
}
