//! Figures kept only for `/metrics`: the fetch latency histogram. Everything else the
//! metrics show is read at scrape time from counters the crawl keeps anyway, so a scrape does
//! no per-host work and the fetch path pays one relaxed atomic add per bucket crossed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the buckets, in seconds (Prometheus' convention for durations).
pub const LATENCY_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// A histogram of fetch durations with fixed buckets, updated lock-free.
#[derive(Debug, Default)]
pub struct LatencyHistogram {
    /// Observations per bucket (not cumulative); the last slot is `+Inf`.
    counts: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    sum_micros: AtomicU64,
}

/// A histogram read at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// Sum of the observations, in seconds.
    pub sum: f64,
    /// Observations.
    pub count: u64,
    /// `(upper bound, cumulative count)` per bucket, ending with `+Inf`.
    pub buckets: Vec<(f64, u64)>,
}

impl LatencyHistogram {
    /// Records one fetch's duration.
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = LATENCY_BUCKETS
            .iter()
            .position(|&b| secs <= b)
            .unwrap_or(LATENCY_BUCKETS.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(
            u64::try_from(d.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// The histogram now, cumulative as Prometheus wants it.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut total = 0;
        let mut buckets = Vec::with_capacity(self.counts.len());
        for (i, c) in self.counts.iter().enumerate() {
            total += c.load(Ordering::Relaxed);
            let upper = LATENCY_BUCKETS.get(i).copied().unwrap_or(f64::INFINITY);
            buckets.push((upper, total));
        }
        HistogramSnapshot {
            sum: self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6,
            count: total,
            buckets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_end_with_infinity() {
        let h = LatencyHistogram::default();
        for ms in [3, 7, 7, 400, 60_000] {
            h.observe(Duration::from_millis(ms));
        }
        let s = h.snapshot();
        assert_eq!(s.count, 5);
        assert!((s.sum - 60.417).abs() < 1e-9, "{}", s.sum);
        assert_eq!(s.buckets[0], (0.005, 1));
        assert_eq!(s.buckets[1], (0.01, 3));
        assert_eq!(s.buckets[6], (0.5, 4));
        assert_eq!(*s.buckets.last().unwrap(), (f64::INFINITY, 5));
    }
}
