//! A host's pace and why: the gap between two fetch starts is the largest of its terms —
//! the configured delay (or an operator's), the robots.txt `Crawl-delay`, the latency term
//! (`politeness.delay_factor ×` the last fetch's duration, at most `max_delay_ms`) — and,
//! while the host backs off after errors, the back-off. Every frontier computes it here, so
//! the local scheduler, the Redis scripts' listing and the service name the same reason.
//!
//! The latency term is start to start, like every delay here: with a factor of 2 a host
//! that takes 100 ms a page gets a fetch every 200 ms, so it is busy at most half the time
//! per connection (Heritrix's factor counts from a fetch's end). It follows the last fetch
//! only: an outlier moves one gap, bounded by `max_delay_ms`.

use std::time::Duration;

/// Which term sets a host's delay (the largest; ties go to the earlier in this order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum DelayReason {
    /// `politeness.delay_ms` (or the crawl's default set at run time).
    #[default]
    Configured,
    /// An operator's delay for this host.
    Operator,
    /// The host's robots.txt `Crawl-delay`.
    CrawlDelay,
    /// `politeness.delay_factor ×` its last fetch's duration.
    Latency,
    /// The back-off after errors (or a `Retry-After`).
    Backoff,
    /// Its address group's gap or in-flight limit holds it (politeness per address).
    IpGroup,
}

impl DelayReason {
    /// The name used in the API and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            DelayReason::Configured => "configured",
            DelayReason::Operator => "operator",
            DelayReason::CrawlDelay => "crawl_delay",
            DelayReason::Latency => "latency",
            DelayReason::Backoff => "backoff",
            DelayReason::IpGroup => "ip_group",
        }
    }
}

/// The terms of one host's delay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PaceTerms {
    /// The configured delay, or the operator's when `operator`.
    pub base: Duration,
    /// Whether `base` is an operator's for this host.
    pub operator: bool,
    /// The robots.txt `Crawl-delay` (zero: none).
    pub crawl_delay: Duration,
    /// The latency term (zero: off, or no fetch measured yet).
    pub latency: Duration,
    /// The back-off (zero: healthy).
    pub backoff: Duration,
}

impl PaceTerms {
    /// The gap between two fetch starts of the host when healthy.
    pub fn pace(&self) -> Duration {
        self.base.max(self.crawl_delay).max(self.latency)
    }

    /// The gap in force now and the term that sets it.
    pub fn delay(&self) -> (Duration, DelayReason) {
        let base = if self.operator {
            DelayReason::Operator
        } else {
            DelayReason::Configured
        };
        let mut best = (self.base, base);
        for (d, why) in [
            (self.crawl_delay, DelayReason::CrawlDelay),
            (self.latency, DelayReason::Latency),
            (self.backoff, DelayReason::Backoff),
        ] {
            if d > best.0 {
                best = (d, why);
            }
        }
        best
    }
}

/// The latency term of a fetch that took `elapsed`: `factor × elapsed`, at most `max`;
/// `None` when the factor is off (zero, or not a finite positive number).
pub fn latency_term(factor: f64, max: Duration, elapsed: Duration) -> Option<Duration> {
    if !(factor.is_finite() && factor > 0.0) {
        return None;
    }
    let secs = elapsed.as_secs_f64() * factor;
    Some(Duration::try_from_secs_f64(secs).map_or(max, |d| d.min(max)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_largest_term_sets_the_delay_and_ties_go_to_the_earlier() {
        let t = |base, operator, crawl_delay, latency, backoff| PaceTerms {
            base: ms(base),
            operator,
            crawl_delay: ms(crawl_delay),
            latency: ms(latency),
            backoff: ms(backoff),
        };
        let cases = [
            (t(250, false, 0, 0, 0), 250, DelayReason::Configured),
            (t(0, false, 0, 0, 0), 0, DelayReason::Configured),
            (t(250, true, 0, 0, 0), 250, DelayReason::Operator),
            (t(250, false, 1000, 0, 0), 1000, DelayReason::CrawlDelay),
            (t(250, false, 1000, 1200, 0), 1200, DelayReason::Latency),
            (t(250, false, 0, 250, 0), 250, DelayReason::Configured),
            (t(250, false, 1000, 1000, 0), 1000, DelayReason::CrawlDelay),
            (t(250, false, 1000, 1200, 4000), 4000, DelayReason::Backoff),
            (t(250, false, 1000, 1200, 1200), 1200, DelayReason::Latency),
        ];
        for (terms, delay, why) in cases {
            assert_eq!(terms.delay(), (ms(delay), why), "{terms:?}");
        }
        assert_eq!(t(250, false, 1000, 1200, 4000).pace(), ms(1200));
    }

    #[test]
    fn the_latency_term_is_the_factor_times_the_fetch_within_the_bound() {
        assert_eq!(latency_term(0.0, ms(500), ms(100)), None);
        assert_eq!(latency_term(-1.0, ms(500), ms(100)), None);
        assert_eq!(latency_term(f64::NAN, ms(500), ms(100)), None);
        assert_eq!(latency_term(2.0, ms(500), ms(100)), Some(ms(200)));
        assert_eq!(latency_term(2.0, ms(500), ms(400)), Some(ms(500)));
        assert_eq!(latency_term(0.5, ms(500), ms(10)), Some(ms(5)));
        // No overflow, however long the fetch or large the factor.
        assert_eq!(
            latency_term(f64::MAX, ms(500), Duration::MAX),
            Some(ms(500))
        );
    }
}
