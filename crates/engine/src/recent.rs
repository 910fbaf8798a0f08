//! What a crawl remembers of its recent past for the people watching it: the last error
//! records (the dashboard shows them when it opens, not only those arriving while it is
//! open) and the recent rate (pages per second over the last seconds, not since the start —
//! an average keeps falling while a crawl idles).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::output::PageRecord;

/// Error records kept.
pub const RECENT_ERRORS: usize = 100;

/// The last [`RECENT_ERRORS`] error records.
#[derive(Debug, Default)]
pub(crate) struct RecentErrors(Mutex<VecDeque<Arc<PageRecord>>>);

impl RecentErrors {
    /// Whether `record` is an error: no response, or a status of 400 or more.
    pub(crate) fn is_error(record: &PageRecord) -> bool {
        record.error.is_some() || record.status.is_none_or(|s| s >= 400)
    }

    pub(crate) fn push(&self, record: Arc<PageRecord>) {
        let mut ring = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if ring.len() == RECENT_ERRORS {
            ring.pop_front();
        }
        ring.push_back(record);
    }

    /// The newest `n`, newest first.
    pub(crate) fn newest(&self, n: usize) -> Vec<Arc<PageRecord>> {
        let ring = self.0.lock().unwrap_or_else(|e| e.into_inner());
        ring.iter().rev().take(n).cloned().collect()
    }
}

/// The window the recent rate is measured over.
const WINDOW: Duration = Duration::from_secs(10);

/// Pages per second over about the last [`WINDOW`], from samples taken when asked (at most
/// one a second), so it costs nothing between readings.
#[derive(Debug, Default)]
pub(crate) struct RateMeter(Mutex<VecDeque<(Instant, u64)>>);

impl RateMeter {
    /// The rate at `now` with `pages` written, or `average` when there is no earlier sample
    /// to measure from (the first reading).
    pub(crate) fn rate(&self, now: Instant, pages: u64, average: f64) -> f64 {
        let mut samples = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // Keep one sample at least a window old (the start of the window), none older.
        while samples.len() >= 2 && now.duration_since(samples[1].0) >= WINDOW {
            samples.pop_front();
        }
        if samples
            .back()
            .is_none_or(|&(t, _)| now.duration_since(t) >= Duration::from_secs(1))
        {
            samples.push_back((now, pages));
        }
        let &(t0, p0) = samples.front().unwrap_or(&(now, pages));
        let secs = now.duration_since(t0).as_secs_f64();
        if secs < 0.5 {
            return average;
        }
        pages.saturating_sub(p0) as f64 / secs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(status: Option<u16>, error: Option<&str>) -> PageRecord {
        PageRecord {
            url: format!("http://a.test/{status:?}"),
            status,
            error: error.map(str::to_owned),
            ..PageRecord::default()
        }
    }

    #[test]
    fn the_ring_keeps_the_newest_errors() {
        assert!(RecentErrors::is_error(&record(None, Some("refused"))));
        assert!(RecentErrors::is_error(&record(Some(500), None)));
        assert!(RecentErrors::is_error(&record(Some(200), Some("cut"))));
        assert!(!RecentErrors::is_error(&record(Some(200), None)));
        assert!(!RecentErrors::is_error(&record(Some(301), None)));
        let ring = RecentErrors::default();
        for i in 0..(RECENT_ERRORS as u16 + 20) {
            ring.push(Arc::new(record(Some(400 + i), None)));
        }
        let newest = ring.newest(1000);
        assert_eq!(newest.len(), RECENT_ERRORS);
        assert_eq!(newest[0].status, Some(400 + RECENT_ERRORS as u16 + 19));
        assert_eq!(newest[RECENT_ERRORS - 1].status, Some(420));
        assert_eq!(ring.newest(3).len(), 3);
    }

    #[test]
    fn the_rate_follows_the_last_seconds_not_the_start() {
        let meter = RateMeter::default();
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        // First reading: nothing to measure from.
        assert_eq!(meter.rate(at(0), 0, 7.0), 7.0);
        // 100 pages a second for 20 s.
        for s in 1..=20 {
            let r = meter.rate(at(s), s * 100, 0.0);
            assert!((r - 100.0).abs() < 1e-9, "{s}: {r}");
        }
        // Then idle: the recent rate falls to 0 within the window, whatever the average.
        let mut last = f64::MAX;
        for s in 21..=40 {
            last = meter.rate(at(s), 2000, 50.0);
        }
        assert_eq!(last, 0.0);
        // Readings far apart measure from the last one.
        let r = meter.rate(at(100), 2600, 0.0);
        assert!((r - 10.0).abs() < 1e-9, "{r}");
    }
}
