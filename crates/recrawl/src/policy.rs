//! When a fetched URL is due again: the schedule, as pure functions of what was observed.
//!
//! - **fixed**: every URL comes back after the host's interval, or the crawl's.
//! - **adaptive**: each URL's interval moves with what its fetches observe — shorter by a
//!   fifth when the page changed, longer by a fifth when it did not (the rule of Nutch's
//!   AdaptiveFetchSchedule, whose factors above 0.4 it warns make it unstable) — within
//!   `[min, max]`.
//!
//! Both back off a URL that is gone (404/410) or ruled out (robots.txt) by doubling its
//! interval, and keep it when the fetch failed. A due time carries a jitter drawn from the
//! URL's fingerprint, so that a first crawl's wave does not come back in lock-step for ever
//! and every process of a shared crawl computes the same time.

/// Which schedule the crawl keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Schedule {
    /// A URL once fetched is done (the one-shot crawl).
    #[default]
    None,
    /// Each URL after the same interval.
    Fixed,
    /// Each URL after an interval moved by what its fetches observe.
    Adaptive,
}

/// What one fetch of a known URL observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observation {
    /// A full response whose payload differs from the last.
    Changed,
    /// A 304, or a full response with the same payload (a redirect counts as this).
    Unchanged,
    /// 404 or 410.
    Gone,
    /// robots.txt rules it out now.
    Skipped,
    /// No answer after the retries (the host's trouble, not the page's).
    Failed,
}

/// A schedule and its bounds, seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    /// Which schedule.
    pub schedule: Schedule,
    /// The interval a URL starts with (and keeps, under `Fixed`).
    pub interval_secs: u32,
    /// Shortest interval.
    pub min_interval_secs: u32,
    /// Longest interval.
    pub max_interval_secs: u32,
    /// Share of the interval a due time may move either way (0 to 0.5).
    pub jitter: f64,
}

/// Shortest interval any schedule takes: a second (due times are whole seconds, and two
/// fetches of one URL are then never within the same second, which is how a resume tells
/// its visits apart).
pub const MIN_INTERVAL_SECS: u32 = 1;

/// How much an adaptive interval moves on each observation.
const ADAPT_RATE: f64 = 0.2;

/// A policy that cannot be kept.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    /// The bounds are out of order, or below a second.
    #[error(
        "recrawl intervals must satisfy {MIN_INTERVAL_SECS} <= min_interval_secs ({min}) <= \
         interval_secs ({interval}) <= max_interval_secs ({max})"
    )]
    Bounds {
        /// `min_interval_secs`.
        min: u32,
        /// `interval_secs`.
        interval: u32,
        /// `max_interval_secs`.
        max: u32,
    },
    /// The jitter is not a share between 0 and 0.5.
    #[error("recrawl jitter must be between 0 and 0.5, not {0}")]
    Jitter(f64),
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            schedule: Schedule::None,
            interval_secs: 86_400,
            min_interval_secs: 3_600,
            max_interval_secs: 30 * 86_400,
            jitter: 0.1,
        }
    }
}

impl Policy {
    /// Whether the bounds and jitter can be kept.
    pub fn check(&self) -> Result<(), PolicyError> {
        let (min, interval, max) = (
            self.min_interval_secs,
            self.interval_secs,
            self.max_interval_secs,
        );
        if !(MIN_INTERVAL_SECS <= min && min <= interval && interval <= max) {
            return Err(PolicyError::Bounds { min, interval, max });
        }
        if !(0.0..=0.5).contains(&self.jitter) {
            return Err(PolicyError::Jitter(self.jitter));
        }
        Ok(())
    }

    /// The interval of a URL fetched for the first time: the host's when it has one
    /// (`recrawl_secs`), else the crawl's; within the bounds. `None` under `Schedule::None`.
    pub fn first_interval(&self, host_secs: Option<u32>) -> Option<u32> {
        (self.schedule != Schedule::None)
            .then(|| self.clamp(host_secs.unwrap_or(self.interval_secs)))
    }

    /// The interval after a fetch that observed `seen`, from the one in force (`current`);
    /// `host_secs` is the host's own interval, if set. `None` under `Schedule::None`.
    pub fn next_interval(
        &self,
        current: u32,
        seen: Observation,
        host_secs: Option<u32>,
    ) -> Option<u32> {
        let base = host_secs.unwrap_or(self.interval_secs);
        let current = f64::from(if current == 0 { base } else { current });
        let next = match (self.schedule, seen) {
            (Schedule::None, _) => return None,
            (_, Observation::Gone | Observation::Skipped) => current * 2.0,
            (_, Observation::Failed) => current,
            // A page that answers again comes back to the fixed interval.
            (Schedule::Fixed, _) => f64::from(base),
            (Schedule::Adaptive, Observation::Changed) => current * (1.0 - ADAPT_RATE),
            (Schedule::Adaptive, Observation::Unchanged) => current * (1.0 + ADAPT_RATE),
        };
        Some(self.clamp(next.round().min(f64::from(u32::MAX)) as u32))
    }

    /// When a URL fetched at `fetched_at` (seconds) is due again after `interval`: moved by
    /// up to `jitter` of the interval either way, by an amount drawn from `fingerprint`
    /// (the same in every process), and never sooner than the shortest interval.
    pub fn due_at(&self, fetched_at: u64, interval: u32, fingerprint: u64) -> u64 {
        // A uniform share in [-1, 1] from the fingerprint's top 53 bits.
        let unit = (fingerprint >> 11) as f64 / (1u64 << 53) as f64;
        let shift = (unit * 2.0 - 1.0) * self.jitter * f64::from(interval);
        let after = (f64::from(interval) + shift)
            .round()
            .max(f64::from(self.min_interval_secs.max(MIN_INTERVAL_SECS)));
        fetched_at.saturating_add(after as u64)
    }

    fn clamp(&self, secs: u32) -> u32 {
        // Unchecked bounds must not panic: the lower one wins.
        let lo = self.min_interval_secs.max(MIN_INTERVAL_SECS);
        secs.clamp(lo, self.max_interval_secs.max(lo))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn policy(schedule: Schedule) -> Policy {
        Policy {
            schedule,
            interval_secs: 3_600,
            min_interval_secs: 600,
            max_interval_secs: 36_000,
            jitter: 0.1,
        }
    }

    #[test]
    fn none_schedules_nothing() {
        let p = Policy::default();
        assert_eq!(p.schedule, Schedule::None);
        p.check().unwrap();
        assert_eq!(p.first_interval(None), None);
        assert_eq!(p.next_interval(3_600, Observation::Changed, None), None);
    }

    #[test]
    fn fixed_keeps_the_interval_and_backs_off_what_is_gone() {
        let p = policy(Schedule::Fixed);
        assert_eq!(p.first_interval(None), Some(3_600));
        assert_eq!(p.first_interval(Some(60)), Some(600), "clamped to min");
        for seen in [Observation::Changed, Observation::Unchanged] {
            assert_eq!(p.next_interval(3_600, seen, None), Some(3_600));
        }
        assert_eq!(p.next_interval(3_600, Observation::Gone, None), Some(7_200));
        assert_eq!(
            p.next_interval(30_000, Observation::Gone, None),
            Some(36_000)
        );
        assert_eq!(
            p.next_interval(7_200, Observation::Failed, None),
            Some(7_200)
        );
        // Back from gone: the fixed interval again.
        assert_eq!(
            p.next_interval(36_000, Observation::Changed, None),
            Some(3_600)
        );
        // A host's own interval wins.
        assert_eq!(
            p.next_interval(3_600, Observation::Unchanged, Some(1_200)),
            Some(1_200)
        );
    }

    #[test]
    fn adaptive_moves_by_a_fifth_within_the_bounds() {
        let p = policy(Schedule::Adaptive);
        assert_eq!(
            p.next_interval(3_600, Observation::Changed, None),
            Some(2_880)
        );
        assert_eq!(
            p.next_interval(3_600, Observation::Unchanged, None),
            Some(4_320)
        );
        let mut i = 3_600;
        for _ in 0..50 {
            i = p.next_interval(i, Observation::Changed, None).unwrap();
        }
        assert_eq!(i, 600);
        for _ in 0..50 {
            i = p.next_interval(i, Observation::Unchanged, None).unwrap();
        }
        assert_eq!(i, 36_000);
        // Alternating observations hover: a change and a non-change bring it back near.
        let after = p
            .next_interval(
                p.next_interval(3_600, Observation::Changed, None).unwrap(),
                Observation::Unchanged,
                None,
            )
            .unwrap();
        assert_eq!(after, 3_456);
    }

    #[test]
    fn bounds_out_of_order_are_refused() {
        let mut p = policy(Schedule::Fixed);
        p.min_interval_secs = 0;
        assert!(matches!(p.check(), Err(PolicyError::Bounds { .. })));
        p.min_interval_secs = 4_000;
        assert!(matches!(p.check(), Err(PolicyError::Bounds { .. })));
        let mut p = policy(Schedule::Fixed);
        p.interval_secs = 100_000;
        assert!(p
            .check()
            .unwrap_err()
            .to_string()
            .contains("max_interval_secs"));
        let mut p = policy(Schedule::Fixed);
        p.jitter = 0.7;
        assert_eq!(p.check(), Err(PolicyError::Jitter(0.7)));
        p.jitter = f64::NAN;
        assert!(p.check().is_err());
    }

    #[test]
    fn jitter_spreads_due_times_both_ways() {
        let p = policy(Schedule::Fixed);
        let dues: Vec<u64> = (0..1_000u64)
            .map(|i| p.due_at(1_000_000, 3_600, i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
            .collect();
        let (lo, hi) = (*dues.iter().min().unwrap(), *dues.iter().max().unwrap());
        assert!(
            lo >= 1_000_000 + 3_240 && hi <= 1_000_000 + 3_960,
            "{lo} {hi}"
        );
        assert!(
            lo < 1_000_000 + 3_300 && hi > 1_000_000 + 3_900,
            "{lo} {hi}"
        );
    }

    proptest! {
        #[test]
        fn intervals_stay_within_the_bounds(
            current in any::<u32>(),
            seen in prop_oneof![
                Just(Observation::Changed), Just(Observation::Unchanged),
                Just(Observation::Gone), Just(Observation::Skipped), Just(Observation::Failed),
            ],
            host in proptest::option::of(any::<u32>()),
            adaptive in any::<bool>(),
            fp in any::<u64>(),
        ) {
            let p = policy(if adaptive { Schedule::Adaptive } else { Schedule::Fixed });
            let next = p.next_interval(current, seen, host).unwrap();
            prop_assert!((600..=36_000).contains(&next));
            let due = p.due_at(5, next, fp);
            prop_assert!(due >= 5 + 600);
        }
    }
}
