//! The contract's checks of pacing beyond a host's own delay: a fetch's duration paces its
//! host (`politeness.delay_factor`), within `max_delay`, and the host listing says why; hosts
//! placed on one address share its in-flight limit and gap (`max_per_ip`, `ip_delay`).

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

/// Hosts placed in one address group share its in-flight limit: a host placed where the
/// group is full is told to give its lease back, and waits while the group is full; a
/// completion lets the group's next fetch go. The group's gap holds every host of it, and
/// the listing shows each host's address and its group's size.
pub async fn hosts_on_one_address_share_its_limits(h: &dyn Harness) {
    if h.lacks(Lacks::AddressGroups) {
        return;
    }
    let key = super::test_address();
    let mut cfg = base_config();
    cfg.politeness.max_per_ip = 1;
    let f = h.open(cfg, &[]);
    super::two_urls_each(&*f, ["ga.test", "gb.test"]).await;
    // Not placed yet, hosts take fetches as their own limits allow; placed, the second
    // finds the group full.
    let (a, b) = (lease(&*f).await, lease(&*f).await);
    assert_ne!(a.host(), b.host());
    assert!(f.place_host(&a, key).await.expect("place"));
    assert!(
        !f.place_host(&b, key).await.expect("place"),
        "the group is full: give the lease back"
    );
    complete(&*f, b, Outcome::Released).await;
    assert!(
        f.try_next().await.expect("try_next").is_none(),
        "the group's one fetch is out"
    );
    let info = super::backoff::host_of(&*f, "gb.test").await;
    assert_eq!(
        (
            info.address.as_deref(),
            info.address_hosts,
            info.address_in_flight
        ),
        (Some("192.0.2.1"), 2, 1),
        "{info:?}"
    );
    complete(&*f, a, Outcome::Done).await;
    let c = lease(&*f).await;
    assert!(
        f.try_next().await.expect("try_next").is_none(),
        "one at a time"
    );
    complete(&*f, c, Outcome::Done).await;
    let d = lease(&*f).await;
    complete(&*f, d, Outcome::Done).await;
    let e = lease(&*f).await;
    complete(&*f, e, Outcome::Done).await;
    assert!(matches!(next(&*f).await, Next::End(End::Finished)));

    // A gap of an hour: once one host of the group fetched, neither is served.
    let mut cfg = base_config();
    cfg.politeness.ip_delay = Duration::from_secs(3600);
    let f = h.open(cfg, &[]);
    super::two_urls_each(&*f, ["gc.test", "gd.test"]).await;
    let (a, b) = (lease(&*f).await, lease(&*f).await);
    assert!(f.place_host(&a, key).await.expect("place"));
    assert!(!f.place_host(&b, key).await.expect("place"), "the gap");
    complete(&*f, b, Outcome::Released).await;
    complete(&*f, a, Outcome::Done).await;
    assert!(
        f.try_next().await.expect("try_next").is_none(),
        "an hour before the address's next fetch"
    );
    let info = super::backoff::host_of(&*f, "gd.test").await;
    assert!(info.ready_in.is_zero() || info.delay_reason == DelayReason::IpGroup);
}
