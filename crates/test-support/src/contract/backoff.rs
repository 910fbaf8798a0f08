//! The contract's checks of how a host's back-off grows, when fetches of it were in flight
//! together, and how it ends.

use super::*;
use frontier::HostInfo;

/// `host` as the host listing shows it.
pub(super) async fn host_of(f: &dyn Frontier, host: &str) -> HostInfo {
    let query = HostQuery {
        limit: 1000,
        ..HostQuery::default()
    };
    let page = f.hosts(query).await.expect("hosts");
    page.hosts
        .into_iter()
        .find(|h| h.host == host)
        .unwrap_or_else(|| panic!("{host} is not listed"))
}

/// The back-off of `host` as the host listing shows it.
async fn backoff_of(f: &dyn Frontier, host: &str) -> Duration {
    host_of(f, host).await.backoff
}

/// Only a fetch handed out since the host last backed off says how the host is now: fetches
/// that were in flight together when it failed back it off once (not doubling per failure),
/// a success among them does not reset the back-off, and a `Retry-After` of one still holds.
/// A failure of a fetch handed out after the back-off doubles it; a success of one resets it.
pub async fn failures_in_flight_together_back_off_once(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    let urls: Vec<String> = (0..7).map(|i| format!("http://b.test/{i}")).collect();
    offer(&*f, None, &urls).await;
    let base = base_config().politeness.backoff_base;
    let error = |retry_after| Outcome::HostError { retry_after };

    let [first, second, third] = [lease(&*f).await, lease(&*f).await, lease(&*f).await];
    let straggler = lease(&*f).await;
    complete(&*f, first, error(None)).await;
    assert_eq!(backoff_of(&*f, "b.test").await, base, "the first failure");
    complete(&*f, second, error(None)).await;
    assert_eq!(
        backoff_of(&*f, "b.test").await,
        base,
        "a fetch in flight with the first failed too: the same failure, not a doubling"
    );
    complete(&*f, third, Outcome::Done).await;
    assert_eq!(
        backoff_of(&*f, "b.test").await,
        base,
        "a success of a fetch handed out before the back-off does not reset it"
    );

    let after = lease(&*f).await;
    complete(&*f, after, error(None)).await;
    assert_eq!(
        backoff_of(&*f, "b.test").await,
        base * 2,
        "a fetch handed out after the back-off failed: it doubles"
    );
    let hint = Duration::from_millis(150);
    let t = Instant::now();
    complete(&*f, straggler, error(Some(hint))).await;
    assert_eq!(
        backoff_of(&*f, "b.test").await,
        base * 2,
        "still one doubling"
    );
    let next_one = lease(&*f).await;
    // A shared frontier reckons in its server's milliseconds: allow for the rounding.
    assert!(
        t.elapsed() + Duration::from_millis(2) >= hint,
        "the straggler's Retry-After holds: the next fetch came after {:?}",
        t.elapsed()
    );
    complete(&*f, next_one, Outcome::Done).await;
    assert_eq!(
        backoff_of(&*f, "b.test").await,
        Duration::ZERO,
        "a success of a fetch handed out after the back-off resets it"
    );
    f.close();
}

/// While a host backs off it is paced to one fetch per back-off; the first of those that goes
/// through ends the back-off, and the host is ready again at once (a consumer waiting for it
/// is woken), not a back-off after that fetch — unless a `Retry-After` of a fetch from before
/// still holds it. A skip (robots.txt) did not reach the host: the back-off stays.
pub async fn a_success_ends_the_back_off_at_once(h: &dyn Harness) {
    let mut config = base_config();
    let base = Duration::from_millis(300);
    config.politeness.backoff_base = base;
    config.politeness.max_per_host = 2;
    let f = h.open(config, &[]);
    let urls: Vec<String> = (0..6).map(|i| format!("http://e.test/{i}")).collect();
    offer(&*f, None, &urls).await;
    let [failed, straggler] = [lease(&*f).await, lease(&*f).await];
    complete(&*f, failed, Outcome::HostError { retry_after: None }).await;
    assert_eq!(backoff_of(&*f, "e.test").await, base);

    let skipped = lease(&*f).await;
    complete(&*f, skipped, Outcome::Skipped).await;
    assert_eq!(
        backoff_of(&*f, "e.test").await,
        base,
        "a skip says nothing of the host"
    );
    // The probe and the straggler fill the host's two slots: a consumer asking now waits.
    let probe = lease(&*f).await;
    let waiter = {
        let f = Arc::clone(&f);
        tokio::spawn(async move { lease(&*f).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    complete(&*f, probe, Outcome::Done).await;
    let host = host_of(&*f, "e.test").await;
    assert_eq!(
        (host.backoff, host.ready_in),
        (Duration::ZERO, Duration::ZERO),
        "the fetch went through: the host is back to its pace (no delay) at once"
    );
    // Woken by the completion (a missed wake-up leaves it waiting until `next` hangs).
    let woken = waiter.await.expect("waiter");

    let hint = Duration::from_secs(2);
    complete(
        &*f,
        straggler,
        Outcome::HostError {
            retry_after: Some(hint),
        },
    )
    .await;
    let host = host_of(&*f, "e.test").await;
    assert_eq!(
        host.backoff,
        Duration::ZERO,
        "a straggler's error: no doubling"
    );
    assert!(
        host.ready_in > hint / 2,
        "the straggler's Retry-After holds the host: ready in {:?}",
        host.ready_in
    );
    complete(&*f, woken, Outcome::Done).await;
    f.close();
}
