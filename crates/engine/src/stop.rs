//! Why a crawl stops: the reason the first stop gives, kept for the summary.

use serde::Serialize;

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
    /// The shared frontier refused a call that retrying cannot fix (credentials, keys of
    /// another type).
    FrontierError,
}

impl StopReason {
    /// How the crawl ended, in words (the summary line).
    pub fn describe(self) -> &'static str {
        match self {
            StopReason::Finished => "finished",
            StopReason::MaxPages => "page budget reached (crawl.max_pages)",
            StopReason::MaxDuration => "time limit reached (crawl.max_duration_secs)",
            StopReason::Shutdown => "stopped by a signal",
            StopReason::StateError => "stopped: the crawl state cannot be written",
            StopReason::OutputError => "stopped: the output cannot be written",
            StopReason::FrontierError => "stopped: the shared frontier refused the crawl",
        }
    }
}
