//! The contract's checks of the latency term: a fetch's duration paces its host
//! (`politeness.delay_factor`), within `max_delay`, and the host listing says why.

use super::backoff::host_of;
use super::*;
use frontier::DelayReason;

/// With a delay factor, a fetch that went through paces its host: the next fetch waits the
/// factor times its duration (at most `max_delay`) from the last start, the listing gives
/// that delay with the reason `latency`; a fetch that says no duration leaves the term, and
/// a factor of 0 ignores durations.
pub async fn a_fetch_duration_paces_its_host(h: &dyn Harness) {
    if h.lacks(Lacks::LatencyPace) {
        return;
    }
    let hour = Duration::from_secs(3600);
    let mut cfg = base_config();
    cfg.politeness.delay_factor = 2.0;
    cfg.politeness.max_delay = hour;
    cfg.politeness.max_per_host = 1;
    let f = h.open(cfg, &[]);
    let urls: Vec<String> = (1..=3).map(|i| format!("http://lat.test/{i}")).collect();
    offer(&*f, None, &urls).await;
    let fast: Vec<String> = (1..=3).map(|i| format!("http://quick.test/{i}")).collect();
    offer(&*f, None, &fast).await;

    let (first, second) = (lease(&*f).await, lease(&*f).await);
    let (mut a, mut b) = if first.host() == "quick.test" {
        (first, second)
    } else {
        (second, first)
    };
    assert_eq!((a.host(), b.host()), ("quick.test", "lat.test"));
    // quick.test answers in 2 ms: its next fetch waits 4 ms, no more.
    a.set_elapsed(Duration::from_millis(2));
    let t = Instant::now();
    complete(&*f, a, Outcome::Done).await;
    let info = host_of(&*f, "quick.test").await;
    assert_eq!(info.latency_delay, Duration::from_millis(4));
    assert_eq!(info.delay_reason, DelayReason::Latency, "{info:?}");
    // lat.test takes 40 minutes: twice that is past the bound, which holds.
    b.set_elapsed(Duration::from_secs(40 * 60));
    complete(&*f, b, Outcome::Done).await;
    let info = host_of(&*f, "lat.test").await;
    assert_eq!(
        (info.latency_delay, info.delay, info.delay_reason),
        (hour, hour, DelayReason::Latency),
        "{info:?}"
    );
    assert!(info.ready_in > hour - Duration::from_secs(60), "{info:?}");
    // The quick host's next fetch comes; the slow one's not for an hour.
    let c = lease_of(&*f, "quick.test").await;
    // A shared frontier reckons in its server's milliseconds: allow for the rounding.
    assert!(t.elapsed() + Duration::from_millis(2) >= Duration::from_millis(4));
    // No duration said (a fetcher that does not measure): the term stays.
    complete(&*f, c, Outcome::Done).await;
    assert_eq!(
        host_of(&*f, "quick.test").await.latency_delay,
        Duration::from_millis(4)
    );
    let d = lease_of(&*f, "quick.test").await;
    complete(&*f, d, Outcome::Done).await;
    assert!(
        f.try_next().await.expect("try_next").is_none(),
        "lat.test waits its hour"
    );

    // A factor of 0 (the default) ignores durations.
    let f = h.open(base_config(), &[]);
    offer(&*f, None, &urls).await;
    let mut e = lease(&*f).await;
    e.set_elapsed(hour);
    complete(&*f, e, Outcome::Done).await;
    let info = host_of(&*f, "lat.test").await;
    assert_eq!(
        (info.latency_delay, info.delay_reason),
        (Duration::ZERO, DelayReason::Configured)
    );
    assert!(f.try_next().await.expect("try_next").is_some());
}

/// The next lease, which must be of `host` (waiting for it as the others are paced).
async fn lease_of(f: &dyn Frontier, host: &str) -> Lease {
    let l = lease(f).await;
    assert_eq!(l.host(), host, "{}", l.entry().url);
    l
}
