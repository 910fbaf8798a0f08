//! The contract's check of how a host's back-off grows and resets when fetches of it were in
//! flight together.

use super::*;

/// The back-off of `host` as the host listing shows it.
async fn backoff_of(f: &dyn Frontier, host: &str) -> Duration {
    let query = HostQuery {
        limit: 1000,
        ..HostQuery::default()
    };
    let page = f.hosts(query).await.expect("hosts");
    page.hosts
        .iter()
        .find(|h| h.host == host)
        .unwrap_or_else(|| panic!("{host} is not listed"))
        .backoff
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

    let together = [lease(&*f).await, lease(&*f).await, lease(&*f).await];
    let [first, second, third] = together;
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
