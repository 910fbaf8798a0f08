//! The wall clock as the crawl writes it: milliseconds since the Unix epoch (heartbeats,
//! expiries, back-offs kept in the state) and RFC 3339 text (records, WARC dates). A leaf.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn now_unix_ms() -> u64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Now as RFC 3339 UTC with milliseconds, e.g. `2026-11-22T20:50:44.123Z` (the same clock
/// text as a WARC record's `WARC-Date`).
pub fn now_rfc3339() -> String {
    warc::Utc::now().rfc3339()
}
