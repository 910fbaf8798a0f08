//! Leases without waiting ([`Frontier::try_next`]), and of one host
//! ([`Frontier::try_next_from`]): what external fetchers and url-frontier's GetURLs take.

use std::time::Duration;

use frontier::{End, Frontier, FrontierConfig, HostControls, Lease, Next, Outcome, Politeness};

use super::{base_config, complete, next, offer, Harness};

async fn from(f: &dyn Frontier, host: &str) -> Option<Lease> {
    f.try_next_from(host).await.expect("try_next_from")
}

fn url(lease: &Option<Lease>) -> Option<&str> {
    lease.as_ref().map(|l| l.entry().url.as_str())
}

/// `try_next_from(host)` hands out only that host's URLs, under its politeness (due now,
/// within its in-flight limit, not blocked) and never waits; it shares the host's turn with
/// `try_next`, so a host at its limit is served by neither, and a host's delay counts from
/// its last lease whichever call made it.
pub async fn a_lease_of_one_host(h: &dyn Harness) {
    let cfg = FrontierConfig {
        politeness: Politeness {
            max_per_host: 1,
            ..base_config().politeness
        },
        ..base_config()
    };
    let f = h.open(cfg, &[]);
    let urls = [
        "http://a.test/1",
        "http://a.test/2",
        "http://b.test/1",
        "http://b.test:8080/1",
    ];
    offer(&*f, None, &urls.map(String::from)).await;
    assert_eq!(url(&from(&*f, "c.test").await), None, "an unknown host");
    let b = from(&*f, "b.test").await;
    assert_eq!(url(&b), Some("http://b.test/1"), "that host's URL");
    assert_eq!(b.as_ref().map(Lease::host), Some("b.test"));
    assert_eq!(url(&from(&*f, "b.test").await), None, "its only URL is out");
    let other_port = from(&*f, "b.test:8080").await;
    assert_eq!(
        url(&other_port),
        Some("http://b.test:8080/1"),
        "a host and port"
    );
    let a1 = from(&*f, "a.test").await;
    assert_eq!(url(&a1), Some("http://a.test/1"), "in the host's order");
    assert_eq!(
        url(&from(&*f, "a.test").await),
        None,
        "at its in-flight limit"
    );
    assert_eq!(
        url(&f.try_next().await.expect("try_next")),
        None,
        "nor by try_next: every host is at its limit or empty"
    );
    complete(&*f, a1.unwrap(), Outcome::Done).await;
    let a2 = f.try_next().await.expect("try_next");
    assert_eq!(
        url(&a2),
        Some("http://a.test/2"),
        "its turn is back for try_next"
    );
    for l in [a2, b, other_port] {
        complete(&*f, l.unwrap(), Outcome::Done).await;
    }
    let stats = f.stats().await.expect("stats");
    assert_eq!((stats.pages, stats.queued, stats.in_flight), (4, 0, 0));

    // The host's delay and an operator's block hold for a keyed lease as for any.
    offer(
        &*f,
        None,
        &["http://a.test/3".into(), "http://a.test/4".into()],
    )
    .await;
    let controls = |delay: Option<Duration>, block_for: Option<Duration>| HostControls {
        delay,
        block_for,
        ..HostControls::default()
    };
    let hour = Duration::from_secs(3600);
    assert!(f
        .set_host("a.test", controls(Some(hour), None))
        .await
        .unwrap());
    assert_eq!(
        url(&from(&*f, "a.test").await),
        None,
        "an hour after its last"
    );
    assert!(f
        .set_host("a.test", controls(Some(Duration::ZERO), None))
        .await
        .unwrap());
    let a3 = from(&*f, "a.test").await;
    assert_eq!(url(&a3), Some("http://a.test/3"), "due again");
    complete(&*f, a3.unwrap(), Outcome::Done).await;
    assert!(f
        .set_host("a.test", controls(None, Some(hour)))
        .await
        .unwrap());
    assert_eq!(url(&from(&*f, "a.test").await), None, "blocked");
    assert!(f
        .set_host("a.test", controls(None, Some(Duration::ZERO)))
        .await
        .unwrap());
    let a4 = from(&*f, "a.test").await;
    assert_eq!(url(&a4), Some("http://a.test/4"), "unblocked");
    complete(&*f, a4.unwrap(), Outcome::Done).await;
    f.close();
}

/// `try_next` hands out only what is due now and never waits; a released lease is served
/// again as it was (no attempt counted, no back-off) and finishes nothing.
pub async fn released_leases_and_leases_without_waiting(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    assert_eq!(
        f.try_next().await.expect("try_next"),
        None,
        "nothing queued"
    );
    offer(&*f, None, &["http://t.test/1".into()]).await;
    let l = f.try_next().await.unwrap().expect("a due URL");
    assert_eq!(f.try_next().await.unwrap(), None, "one URL, leased");
    assert_eq!(f.stats().await.unwrap().in_flight, 1);
    complete(&*f, l, Outcome::Released).await;
    let again = f.try_next().await.unwrap().expect("served again at once");
    assert_eq!(
        (again.entry().url.as_str(), again.entry().attempt),
        ("http://t.test/1", 0)
    );
    complete(&*f, again, Outcome::Done).await;
    let stats = f.stats().await.unwrap();
    assert_eq!((stats.pages, stats.queued, stats.in_flight), (1, 0, 0));
    assert_eq!(next(&*f).await, Next::End(End::Finished));
}
