//! The contract's checks of the host listing and an operator's per-host controls.

use super::*;

/// Hosts are listed in pages (descending by the figure, then by name; or by name from an
/// offset, the active ones only, one host by its name) with their queues, and an operator's
/// controls hold: a block hands out nothing, a delay spaces fetches, an
/// in-flight limit and a page budget bound the host. An unknown host is said to be unknown.
pub async fn host_listing_and_controls(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    for (host, n) in [("x.test", 3), ("y.test", 1), ("z.test", 2)] {
        let urls: Vec<String> = (0..n).map(|i| format!("http://{host}/{i}")).collect();
        offer(&*f, None, &urls).await;
    }
    let query = |after| HostQuery {
        sort: HostSort::Queued,
        limit: 2,
        after,
        ..HostQuery::default()
    };
    let first = f.hosts(query(None)).await.expect("hosts");
    let names: Vec<&str> = first.hosts.iter().map(|h| h.host.as_str()).collect();
    assert_eq!((names, first.total), (vec!["x.test", "z.test"], 3));
    assert_eq!(first.hosts[0].queued, 3);
    let second = f.hosts(query(first.next)).await.unwrap();
    assert_eq!(second.hosts.len(), 1);
    assert_eq!(
        (second.hosts[0].host.as_str(), second.next),
        ("y.test", None)
    );

    let set = |host: &'static str, c: HostControls| {
        let f = Arc::clone(&f);
        async move { f.set_host(host, c).await.expect("set_host") }
    };
    assert!(!set("nowhere.test", HostControls::default()).await);
    // Block every host but x: only x is served.
    for host in ["y.test", "z.test"] {
        let block = HostControls {
            block_for: Some(Duration::from_secs(3600)),
            ..HostControls::default()
        };
        assert!(set(host, block).await);
    }
    let blocked = f.hosts(query(None)).await.unwrap();
    assert!(blocked
        .hosts
        .iter()
        .any(|h| h.host == "z.test" && h.blocked_for.is_some()));
    // By name and offset, the active ones only (x), and one host by its name.
    let by_name = |skip, active_only, host: Option<&str>| HostQuery {
        sort: HostSort::Name,
        limit: 2,
        skip,
        active_only,
        host: host.map(str::to_owned),
        ..HostQuery::default()
    };
    let names =
        |page: HostPage| -> Vec<String> { page.hosts.into_iter().map(|h| h.host).collect() };
    assert_eq!(
        names(f.hosts(by_name(1, false, None)).await.unwrap()),
        ["y.test", "z.test"]
    );
    assert_eq!(
        names(f.hosts(by_name(0, true, None)).await.unwrap()),
        ["x.test"]
    );
    let one = f.hosts(by_name(0, false, Some("z.test"))).await.unwrap();
    assert_eq!((one.hosts.len(), one.hosts[0].queued), (1, 2));
    assert!(f
        .hosts(by_name(0, false, Some("nowhere.test")))
        .await
        .unwrap()
        .hosts
        .is_empty());
    // x: one at a time, 60 ms apart.
    let gap = Duration::from_millis(60);
    let limit = HostControls {
        delay: Some(gap),
        max_in_flight: Some(1),
        max_pages: Some(4),
        ..HostControls::default()
    };
    assert!(set("x.test", limit).await);
    let a = lease(&*f).await;
    assert_eq!(a.host(), "x.test");
    assert_eq!(
        f.try_next().await.unwrap(),
        None,
        "x at its limit, y and z blocked"
    );
    let t = Instant::now();
    complete(&*f, a, Outcome::Done).await;
    let b = lease(&*f).await;
    assert_eq!(b.host(), "x.test");
    assert!(t.elapsed() >= gap / 2, "the host's delay held");
    complete(&*f, b, Outcome::Done).await;
    let more: Vec<String> = (3..6).map(|i| format!("http://x.test/{i}")).collect();
    assert_eq!(
        offer(&*f, None, &more).await,
        [
            Admission::Admitted,
            Admission::OutOfScope(OutOfScope::HostBudget),
            Admission::OutOfScope(OutOfScope::HostBudget),
        ],
        "the host's budget of 4 admissions"
    );
    // Refused for its budget, a URL stays unseen: with the budget raised, it is admitted
    // when it comes again.
    let raised = HostControls {
        max_pages: Some(6),
        ..HostControls::default()
    };
    assert!(set("x.test", raised).await);
    assert_eq!(
        offer(&*f, None, &more[1..]).await,
        [Admission::Admitted, Admission::Admitted],
        "refused for the budget, not seen"
    );
    // Unblocked, the rest is served: x's four, y's one, z's two.
    for host in ["y.test", "z.test"] {
        let unblock = HostControls {
            block_for: Some(Duration::ZERO),
            ..HostControls::default()
        };
        assert!(set(host, unblock).await);
    }
    let mut served: BTreeMap<String, u32> = BTreeMap::new();
    loop {
        match next(&*f).await {
            Next::Lease(l) => {
                *served.entry(l.host().to_owned()).or_default() += 1;
                complete(&*f, l, Outcome::Done).await;
            }
            Next::End(e) => {
                assert_eq!(e, End::Finished);
                break;
            }
        }
    }
    let want: BTreeMap<String, u32> = [("x.test", 4), ("y.test", 1), ("z.test", 2)]
        .into_iter()
        .map(|(h, n)| (h.to_owned(), n))
        .collect();
    assert_eq!(served, want);
    let done = f
        .hosts(HostQuery {
            sort: HostSort::Done,
            limit: 1,
            after: None,
            ..HostQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (done.hosts[0].host.as_str(), done.hosts[0].done),
        ("x.test", 6)
    );
}

/// An operator's limit of URLs finished (url-frontier's crawl limit): with two leases out on
/// a limit of two, the host hands out nothing more, and with both finished still nothing;
/// its URLs stay queued. Raised, one more is served; cleared (0), the rest.
pub async fn a_limit_of_finished_urls_stops_a_host(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    let urls: Vec<String> = (0..5).map(|i| format!("http://a.test/{i}")).collect();
    offer(&*f, None, &urls).await;
    let limit = |n| {
        let f = Arc::clone(&f);
        async move {
            let c = HostControls {
                max_done: Some(n),
                ..HostControls::default()
            };
            assert!(f.set_host("a.test", c).await.expect("set_host"));
        }
    };
    limit(2).await;
    let (a, b) = (lease(&*f).await, lease(&*f).await);
    assert_eq!(
        f.try_next().await.unwrap(),
        None,
        "two out on a limit of two"
    );
    complete(&*f, a, Outcome::Done).await;
    complete(&*f, b, Outcome::Skipped).await;
    assert_eq!(
        f.try_next().await.unwrap(),
        None,
        "two finished on a limit of two"
    );
    let one = HostQuery {
        limit: 1,
        host: Some("a.test".into()),
        ..HostQuery::default()
    };
    let info = f.hosts(one).await.unwrap().hosts.remove(0);
    assert_eq!(
        (info.queued, info.done, info.max_done),
        (3, 2, Some(2)),
        "its URLs stay"
    );
    limit(3).await;
    let c = lease(&*f).await;
    complete(&*f, c, Outcome::Done).await;
    assert_eq!(
        f.try_next().await.unwrap(),
        None,
        "three finished on a limit of three"
    );
    limit(0).await;
    let mut rest = 0;
    while let Next::Lease(l) = next(&*f).await {
        rest += 1;
        complete(&*f, l, Outcome::Done).await;
    }
    assert_eq!(rest, 2, "cleared, the rest is served and the crawl ends");
}
