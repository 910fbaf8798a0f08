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
    if h.lacks(Lacks::HostOverrides) {
        f.close();
        return;
    }
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

/// An operator's delete of a host's queue (url-frontier's DeleteQueue): every URL queued for
/// it goes — those on disk too — and is counted; a lease out stays out and completes; the
/// host's URLs stay known; other hosts are untouched; the crawl then ends, and a restored
/// one does not bring the dropped URLs back.
pub async fn a_deleted_queue_drops_its_urls(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    // More than `memory_capacity` (64), so part of the queue is on disk.
    let urls: Vec<String> = (0..150).map(|i| format!("http://del.test/{i}")).collect();
    offer(&*f, None, &urls).await;
    let keep: Vec<String> = (0..3).map(|i| format!("http://keep.test/{i}")).collect();
    offer(&*f, None, &keep).await;
    // And two asleep until tomorrow (a client's date): its queue's too.
    let tomorrow = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        + 86_400;
    let asleep = (0..2).map(|i| Link {
        due: Some(tomorrow),
        ..link(&format!("http://del.test/asleep{i}"), 1)
    });
    let admitted = f.offer(None, asleep.collect()).await.expect("offer");
    assert_eq!(admitted, [Admission::Admitted; 2]);
    let mut served = Vec::new();
    let out = loop {
        let l = lease(&*f).await;
        if l.host() == "del.test" {
            break l;
        }
        served.push(l.entry().url.clone());
        complete(&*f, l, Outcome::Done).await;
    };
    // A purge by age drops none of them: each was admitted just now (and says so).
    assert_eq!(f.delete_queue("del.test", 1).await.expect("by age"), 0);
    assert_eq!(
        f.delete_queue("del.test", 0).await.expect("delete"),
        149 + 2
    );
    assert_eq!(f.delete_queue("del.test", 0).await.expect("again"), 0);
    assert_eq!(f.delete_queue("nowhere.test", 0).await.expect("unknown"), 0);
    let del = |f: Arc<dyn Frontier>| async move {
        let one = HostQuery {
            limit: 1,
            host: Some("del.test".into()),
            ..HostQuery::default()
        };
        let info = f.hosts(one).await.unwrap().hosts.remove(0);
        (info.queued, info.in_flight, info.done)
    };
    assert_eq!(del(Arc::clone(&f)).await, (0, 1, 0), "the lease stays out");
    assert_eq!(
        offer(&*f, None, &urls[..3]).await,
        [Admission::Duplicate; 3],
        "the dropped URLs stay known"
    );
    complete(&*f, out, Outcome::Done).await;
    assert_eq!(del(Arc::clone(&f)).await, (0, 0, 1), "and completes");
    while let Next::Lease(l) = next(&*f).await {
        served.push(l.entry().url.clone());
        complete(&*f, l, Outcome::Done).await;
    }
    served.sort();
    assert_eq!(
        served, keep,
        "the other host whole, nothing of the deleted queue"
    );
    let stats = f.stats().await.unwrap();
    assert_eq!(
        (stats.queued, stats.extra("scheduled")),
        (0, 0),
        "none asleep either"
    );
    drop(f);
    let Some(g) = h.reopen(base_config(), &[]) else {
        return;
    };
    assert_eq!(
        g.try_next().await.unwrap().map(|l| l.entry().url.clone()),
        None,
        "a restored crawl has nothing of the deleted queue"
    );
    assert_eq!(
        g.stats().await.unwrap().extra("scheduled"),
        0,
        "nor of what slept in it"
    );
}

/// An operator's default delay (url-frontier's SetDelay of every queue): a host without a
/// delay of its own is paced by it from its next hand-out, one with its own keeps that, and
/// a host already waiting keeps its time when the default is lowered again.
pub async fn a_default_delay_paces_hosts_without_their_own(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    let urls = ["a", "b"].map(|h| (1..=2).map(move |i| format!("http://{h}.test/{i}")));
    offer(&*f, None, &urls.into_iter().flatten().collect::<Vec<_>>()).await;
    let own = HostControls {
        delay: Some(Duration::ZERO),
        ..HostControls::default()
    };
    assert!(f.set_host("b.test", own).await.expect("set_host"));
    f.set_default_delay(Duration::from_secs(3600))
        .await
        .expect("set_default_delay");
    let mut served = Vec::new();
    while let Some(l) = f.try_next().await.expect("try_next") {
        served.push(l.entry().url.clone());
        complete(&*f, l, Outcome::Done).await;
    }
    served.sort();
    assert_eq!(
        served,
        ["http://a.test/1", "http://b.test/1", "http://b.test/2"],
        "a.test waits an hour after its first; b.test keeps its own delay"
    );
    f.set_default_delay(Duration::ZERO)
        .await
        .expect("set_default_delay");
    assert_eq!(
        f.try_next().await.unwrap().map(|l| l.entry().url.clone()),
        None,
        "a.test keeps the time it was given"
    );
}

/// An operator's delay for one host counts from its last fetch's start at once, shorter or
/// longer (url-frontier's SetDelay of a queue, `PUT /api/v1/hosts/{host}`'s `delay_ms`).
pub async fn a_host_delay_counts_from_its_last_fetch(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    let urls: Vec<String> = (1..=3).map(|i| format!("http://p.test/{i}")).collect();
    offer(&*f, None, &urls).await;
    let delay = |d: Duration| HostControls {
        delay: Some(d),
        ..HostControls::default()
    };
    let hour = Duration::from_secs(3600);
    assert!(f.set_host("p.test", delay(hour)).await.expect("set_host"));
    let first = lease(&*f).await;
    complete(&*f, first, Outcome::Done).await;
    assert!(f.try_next().await.unwrap().is_none(), "an hour to wait");
    assert!(f.set_host("p.test", delay(Duration::ZERO)).await.unwrap());
    let second = f.try_next().await.unwrap();
    let second = second.expect("a shorter delay applies at once");
    complete(&*f, second, Outcome::Done).await;
    assert!(f.set_host("p.test", delay(hour)).await.unwrap());
    assert!(
        f.try_next().await.unwrap().is_none(),
        "a longer delay applies at once too"
    );
}
