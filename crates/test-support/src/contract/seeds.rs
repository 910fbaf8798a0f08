//! The contract's checks of seeds and requeues: seeds widen the scope, a kept-open frontier
//! waits for them, and a finished URL is served again when requeued (with a date, asleep).

use super::*;

/// Seeds given while the crawl runs widen the host scope as the start seeds do.
pub async fn seeds_widen_the_scope(h: &dyn Harness) {
    let cfg = FrontierConfig {
        scope: ScopeConfig {
            hosts: HostScope::SameHost,
            ..ScopeConfig::default()
        },
        ..base_config()
    };
    let f = h.open(cfg, &["http://a.test/"]);
    let b = ["http://b.test/x".to_owned()];
    assert_eq!(
        offer(&*f, Some("http://a.test/"), &b).await,
        [Admission::OutOfScope(OutOfScope::Host)]
    );
    let seeded = f.seed(vec![link("http://b.test/", 0)]).await.expect("seed");
    assert_eq!(seeded, [Admission::Admitted]);
    let c = ["http://b.test/y".to_owned()];
    assert_eq!(
        offer(&*f, Some("http://b.test/"), &c).await,
        [Admission::Admitted],
        "a link to the new seed's host is in scope"
    );
    f.close();
}

/// A frontier kept open (a service) does not end when it runs dry: `next` waits, and a new
/// seed wakes it.
pub async fn a_kept_open_frontier_waits_for_seeds(h: &dyn Harness) {
    let cfg = FrontierConfig {
        keep_open: true,
        ..base_config()
    };
    let f = h.open(cfg, &[]);
    offer(&*f, None, &["http://k.test/1".into()]).await;
    let l = lease(&*f).await;
    complete(&*f, l, Outcome::Done).await;
    let waiter = {
        let f = Arc::clone(&f);
        tokio::spawn(async move { next(&*f).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiter.is_finished(), "a kept-open frontier ended when dry");
    f.seed(vec![link("http://k.test/2", 0)]).await.unwrap();
    match tokio::time::timeout(HANG, waiter).await.unwrap().unwrap() {
        Next::Lease(l) => assert_eq!(l.entry().url, "http://k.test/2"),
        other => panic!("expected the new seed, got {other:?}"),
    }
    f.close();
}

/// `requeue` (an operator's forget) serves a finished URL again, though the visited set has it.
pub async fn a_requeued_url_is_served_again(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    offer(&*f, None, &["http://q.test/1".into()]).await;
    let l = lease(&*f).await;
    complete(&*f, l, Outcome::Done).await;
    assert_eq!(next(&*f).await, Next::End(End::Finished));
    let again = f
        .requeue(vec![link("http://q.test/1", 3)])
        .await
        .expect("requeue");
    assert_eq!(again, [true]);
    let l = lease(&*f).await;
    assert_eq!(
        (l.entry().url.as_str(), l.entry().depth),
        ("http://q.test/1", 3)
    );
    complete(&*f, l, Outcome::Done).await;
    assert_eq!(
        offer(&*f, None, &["http://q.test/1".into()]).await,
        [Admission::Duplicate],
        "still seen"
    );
    // With a date (a client's, for a URL it finished): asleep until then, movable.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let dated = Link {
        due: Some(now + 86_400),
        ..link("http://q.test/1", 0)
    };
    assert_eq!(f.requeue(vec![dated]).await.expect("requeue"), [true]);
    assert_eq!(f.stats().await.expect("stats").extra("scheduled"), 1);
    assert!(f.try_next().await.expect("try_next").is_none(), "asleep");
    let moved = f.recrawl(vec![Url::parse("http://q.test/1").unwrap()], Some(now - 1));
    assert_eq!(
        moved.await.expect("recrawl"),
        [frontier::Recrawled::Scheduled]
    );
    let l = lease(&*f).await;
    assert_eq!(l.entry().url, "http://q.test/1");
    complete(&*f, l, Outcome::Done).await;
    assert_eq!(next(&*f).await, Next::End(End::Finished));
}
