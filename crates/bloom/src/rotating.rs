//! `RotatingBloomFilter`: the source documents' "periodic rebuild" — keep the last `G`
//! generations, drop the oldest on a schedule.
//!
//! A crawler that re-visits pages wants "seen within the last window" rather than "ever
//! seen". The filter keeps `G` Guava-shaped generations in a ring; `put` writes to the newest,
//! queries check all of them, and [`rotate`](RotatingBloomFilter::rotate) (or
//! [`rotate_if_due`](RotatingBloomFilter::rotate_if_due), driven by the caller's clock)
//! clears the oldest and makes it the newest. An item put at time `t` is therefore remembered
//! for between `(G - 1)` and `G` periods. Rotation also resets the fill ratio, so the FPP of a
//! long-running crawl stays near its design value instead of creeping up.
//!
//! Rotation reuses the oldest generation's memory (no allocation) and never blocks `put` or
//! `might_contain`: a query that races with the clearing of the oldest generation can only
//! lose items that are being forgotten anyway.

#![forbid(unsafe_code)]

use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::funnel::Funnel;
use crate::raw::RawFilter;

/// A Bloom filter that forgets items older than `G` rotation periods.
pub struct RotatingBloomFilter<T: ?Sized, F> {
    generations: Box<[RawFilter]>,
    /// Number of rotations so far; the newest generation is `epoch % G`.
    epoch: AtomicU64,
    period: Duration,
    /// When the newest generation started; also serialises rotations.
    started: Mutex<Instant>,
    funnel: F,
    _item: PhantomData<fn(&T)>,
}

impl<T: ?Sized, F> fmt::Debug for RotatingBloomFilter<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RotatingBloomFilter")
            .field("generations", &self.generations.len())
            .field("epoch", &self.epoch.load(Ordering::Relaxed))
            .field("period", &self.period)
            .finish()
    }
}

impl<T: ?Sized, F: Funnel<T>> RotatingBloomFilter<T, F> {
    /// `generations` filters, each sized for `expected_per_generation` items at `fpp`, rotated
    /// every `period` by [`rotate_if_due`](Self::rotate_if_due). The clock starts at `now`.
    pub fn new(
        funnel: F,
        generations: usize,
        expected_per_generation: u64,
        fpp: f64,
        period: Duration,
        now: Instant,
    ) -> Result<Self, Error> {
        if generations < 2 {
            return Err(Error::InvalidParameter {
                name: "generations",
                reason: format!(
                    "must be at least 2 to keep anything across a rotation, got {generations}"
                ),
            });
        }
        if period.is_zero() {
            return Err(Error::InvalidParameter {
                name: "period",
                reason: "must be longer than zero".into(),
            });
        }
        let generations = (0..generations)
            .map(|_| RawFilter::new(expected_per_generation, fpp))
            .collect::<Result<Box<[_]>, _>>()?;
        Ok(Self {
            generations,
            epoch: AtomicU64::new(0),
            period,
            started: Mutex::new(now),
            funnel,
            _item: PhantomData,
        })
    }

    fn newest(&self) -> &RawFilter {
        let epoch = self.epoch.load(Ordering::Acquire);
        &self.generations[(epoch % self.generations.len() as u64) as usize]
    }

    /// Records `item` in the newest generation unless a retained generation might already hold
    /// it; `true` if it was certainly not seen within the window.
    pub fn put(&self, item: &T) -> bool {
        let hash = self.funnel.hash(item);
        if self.generations.iter().any(|g| g.might_contain_hash(hash)) {
            return false;
        }
        self.newest().put_hash(hash)
    }

    /// `false` if `item` was certainly not put within the retained generations.
    pub fn might_contain(&self, item: &T) -> bool {
        let hash = self.funnel.hash(item);
        self.generations.iter().any(|g| g.might_contain_hash(hash))
    }

    /// Drops the oldest generation now and starts a new, empty one.
    pub fn rotate(&self) {
        let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        self.rotate_locked();
        *started = Instant::now().max(*started);
    }

    fn rotate_locked(&self) {
        let next = self.epoch.load(Ordering::Acquire) + 1;
        // Clear first, publish second: writers keep using the current newest generation
        // until the cleared one is published as newest.
        self.generations[(next % self.generations.len() as u64) as usize]
            .bits()
            .clear();
        self.epoch.store(next, Ordering::Release);
    }

    /// Rotates as many times as whole periods have passed since the newest generation
    /// started (at most `G` times: after that everything is forgotten anyway). Returns how
    /// many rotations happened.
    pub fn rotate_if_due(&self, now: Instant) -> u32 {
        let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        let mut rotations = 0;
        while now.saturating_duration_since(*started) >= self.period {
            *started += self.period;
            if rotations < self.generations.len() as u32 {
                self.rotate_locked();
                rotations += 1;
            }
        }
        rotations
    }

    /// Number of rotations so far.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// The chance that a never-seen item is reported as seen: `1 - Π(1 - fpp_g)`.
    pub fn expected_fpp(&self) -> f64 {
        1.0 - self
            .generations
            .iter()
            .map(|g| 1.0 - g.expected_fpp())
            .product::<f64>()
    }

    /// Heap bytes held by all generations.
    pub fn heap_bytes(&self) -> usize {
        self.generations.iter().map(|g| g.bits().heap_bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::funnel::StringFunnel;

    #[test]
    fn forgets_after_g_periods() {
        let t0 = Instant::now();
        let period = Duration::from_secs(60);
        let f = RotatingBloomFilter::new(StringFunnel, 3, 1000, 0.01, period, t0).unwrap();
        assert!(f.put("a"));
        assert!(!f.put("a"));
        assert_eq!(f.rotate_if_due(t0 + Duration::from_secs(59)), 0);
        assert_eq!(f.rotate_if_due(t0 + period), 1);
        assert!(f.put("b"));
        assert!(f.might_contain("a"), "one rotation later, still remembered");
        assert!(!f.put("a"), "seen within the window: not new");
        assert_eq!(f.rotate_if_due(t0 + period * 2), 1);
        assert!(f.might_contain("a"));
        assert_eq!(f.rotate_if_due(t0 + period * 3), 1);
        assert!(!f.might_contain("a"), "3 generations later, forgotten");
        assert!(f.might_contain("b"));
        assert!(f.put("a"), "new again: re-crawl it");
        assert_eq!(f.epoch(), 3);
    }

    #[test]
    fn a_long_pause_forgets_everything_once() {
        let t0 = Instant::now();
        let f = RotatingBloomFilter::new(StringFunnel, 2, 100, 0.01, Duration::from_secs(1), t0)
            .unwrap();
        f.put("x");
        assert_eq!(f.rotate_if_due(t0 + Duration::from_secs(3600)), 2);
        assert!(!f.might_contain("x"));
        assert_eq!(f.rotate_if_due(t0 + Duration::from_secs(3600)), 0);
    }

    #[test]
    fn validates_parameters() {
        let t0 = Instant::now();
        assert!(
            RotatingBloomFilter::new(StringFunnel, 1, 10, 0.01, Duration::from_secs(1), t0)
                .is_err()
        );
        assert!(RotatingBloomFilter::new(StringFunnel, 2, 10, 0.01, Duration::ZERO, t0).is_err());
    }
}
