//! The RPCs that move URLs: PutDiscovered, PutURLs and GetURLs, known URLs with a date, and
//! what happens to them while the shared frontier's Redis is stalled. The helpers here are
//! shared with the queue controls' tests (`queues.rs`).

use super::*;

/// No workers (what is queued stays for the client) and no pacing of a host's hand-outs.
pub(super) fn unpaced(cfg: &mut engine::CrawlConfig) {
    cfg.crawl.workers = engine::Workers::Count(0);
    cfg.politeness.delay_ms = 0;
    cfg.politeness.max_per_host = 100;
}

pub(super) fn batch(id: &str, urls: &[&str], crawl_id: &str) -> DiscoveredBatch {
    DiscoveredBatch {
        id: id.into(),
        items: urls
            .iter()
            .map(|u| UrlInfo {
                url: (*u).into(),
                crawl_id: crawl_id.into(),
                ..UrlInfo::default()
            })
            .collect(),
    }
}

/// The acks of `batches` sent on one PutDiscovered stream, or the error that ended it.
pub(super) async fn put_discovered(
    c: &mut UrlFrontierClient<Channel>,
    batches: Vec<DiscoveredBatch>,
) -> Result<Vec<(String, Vec<i32>)>, tonic::Status> {
    let mut acks = c
        .put_discovered(tonic::codegen::tokio_stream::iter(batches))
        .await?
        .into_inner();
    let mut out = Vec::new();
    while let Some(ack) = acks.message().await? {
        out.push((ack.id, ack.statuses));
    }
    Ok(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovered_batches_queue_each_new_url_once_and_are_acked_in_order() {
    // No workers: what is queued stays queued, for GetStats to count.
    let crawl = Crawl::start_with(|cfg| cfg.crawl.workers = engine::Workers::Count(0)).await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let (ok, skipped) = (Ack::Ok as i32, Ack::Skipped as i32);

    let acks = put_discovered(
        &mut c,
        vec![
            batch("probe", &[], ""),
            batch(
                "b1",
                &[
                    "http://a.test/1",
                    "http://a.test/1",
                    "http://b.test/2",
                    "not a url",
                    "ftp://a.test/file",
                ],
                "DEFAULT",
            ),
            // Another spelling of a URL already queued is the same URL.
            batch("b2", &["HTTP://A.TEST:80/1", "http://a.test/3"], ""),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        acks,
        vec![
            ("probe".to_owned(), vec![]),
            ("b1".to_owned(), vec![ok, skipped, ok, skipped, skipped]),
            ("b2".to_owned(), vec![skipped, ok]),
        ]
    );
    let stats = c
        .get_stats(QueueWithinCrawlParams::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!((stats.size, stats.number_of_queues), (3, 2));

    // A batch over service.max_urls_per_call, or naming what cannot be a crawl ID, ends the
    // stream with an error saying so; the batches before it are acked.
    let big: Vec<String> = (0..1001).map(|i| format!("http://c.test/{i}")).collect();
    let big: Vec<&str> = big.iter().map(String::as_str).collect();
    let e = put_discovered(&mut c, vec![batch("big", &big, "")])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    assert!(e.message().contains("max_urls_per_call"), "{e}");
    let mut other = c
        .put_discovered(tonic::codegen::tokio_stream::iter(vec![
            batch("d1", &["http://d.test/1"], ""),
            batch("d2", &["http://d.test/2"], "no/such"),
        ]))
        .await
        .unwrap()
        .into_inner();
    let first = other.message().await.unwrap().unwrap();
    assert_eq!((first.id.as_str(), first.statuses), ("d1", vec![ok]));
    let e = other.message().await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    let stats = c
        .get_stats(QueueWithinCrawlParams::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(stats.size, 4, "nothing of the refused batches was queued");

    crawl.stop().await;
    server.await.unwrap().unwrap();
}

pub(super) fn item(url: &str, known: Option<u64>, id: &str) -> UrlItem {
    item_of_crawl(url, "", known, id)
}

/// A PutURLs item of crawl `crawl_id`: discovered, or known with `known` as its date.
pub(super) fn item_of_crawl(url: &str, crawl_id: &str, known: Option<u64>, id: &str) -> UrlItem {
    let info = Some(UrlInfo {
        url: url.into(),
        crawl_id: crawl_id.into(),
        ..UrlInfo::default()
    });
    UrlItem {
        item: Some(match known {
            None => Item::Discovered(DiscoveredUrlItem { info }),
            Some(date) => Item::Known(KnownUrlItem {
                info,
                refetchable_from_date: date,
            }),
        }),
        id: id.into(),
        creation_date: 0,
    }
}

/// The acks of `items` sent on one PutURLs stream, as (ID, status), or the error that ended it.
pub(super) async fn put_urls(
    c: &mut UrlFrontierClient<Channel>,
    items: Vec<UrlItem>,
) -> Result<Vec<(String, i32)>, tonic::Status> {
    let mut acks = c
        .put_ur_ls(tonic::codegen::tokio_stream::iter(items))
        .await?
        .into_inner();
    let mut out = Vec::new();
    while let Some(ack) = acks.message().await? {
        out.push((ack.id, ack.status));
    }
    Ok(out)
}

/// What one GetURLs with `params` hands out.
pub(super) async fn get_infos(
    c: &mut UrlFrontierClient<Channel>,
    params: GetParams,
) -> Vec<UrlInfo> {
    let mut infos = c.get_ur_ls(params).await.unwrap().into_inner();
    let mut out = Vec::new();
    while let Some(info) = infos.message().await.unwrap() {
        out.push(info);
    }
    out
}

/// The URLs one GetURLs hands out (held for `hold` seconds), with their keys, sorted.
pub(super) async fn get_urls(
    c: &mut UrlFrontierClient<Channel>,
    hold: u32,
) -> Vec<(String, String)> {
    let params = GetParams {
        delay_requestable: hold,
        ..GetParams::default()
    };
    let mut out: Vec<(String, String)> = get_infos(c, params)
        .await
        .into_iter()
        .map(|info| {
            assert_eq!(info.crawl_id, "DEFAULT");
            (info.url, info.key)
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handed_out_urls_are_held_known_ones_are_done_and_a_vanished_clients_come_back() {
    let crawl = Crawl::start_with(unpaced).await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let (ok, skipped) = (Ack::Ok as i32, Ack::Skipped as i32);

    // Discovered: queued once; an ack names the item's ID, or its URL when it has none.
    let acks = put_urls(
        &mut c,
        vec![
            item("http://a.test/1", None, "i1"),
            item("http://a.test:8080/2", None, ""),
            item("http://b.test/1", None, "i3"),
            item("http://a.test/1", None, "i4"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        acks,
        vec![
            ("i1".to_owned(), ok),
            ("http://a.test:8080/2".to_owned(), ok),
            ("i3".to_owned(), ok),
            ("i4".to_owned(), skipped),
        ]
    );

    // GetURLs hands each out once, keyed by host (and port), and holds it.
    let all = vec![
        ("http://a.test/1".to_owned(), "a.test".to_owned()),
        ("http://a.test:8080/2".to_owned(), "a.test:8080".to_owned()),
        ("http://b.test/1".to_owned(), "b.test".to_owned()),
    ];
    assert_eq!(get_urls(&mut c, 2).await, all);
    assert_eq!(get_urls(&mut c, 2).await, vec![], "all are held");

    // Known with date 0: done, never handed out again — held (a.test/1, by another
    // spelling) or not (c.test/1, never seen: a later discovery of it is a repeat).
    let acks = put_urls(
        &mut c,
        vec![
            item("HTTP://A.TEST/1", Some(0), "k1"),
            item("http://c.test/1", Some(0), "k2"),
            item("http://c.test/1", None, "k3"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        acks,
        vec![
            ("k1".to_owned(), ok),
            ("k2".to_owned(), ok),
            ("k3".to_owned(), skipped)
        ]
    );
    let stats = c
        .get_stats(QueueWithinCrawlParams::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(stats.counts.get("completed"), Some(&1));
    assert_eq!(
        stats.in_process, 2,
        "a.test:8080/2 and b.test/1 are still held"
    );

    // The client that held them vanishes: once their hold (2 s) has passed they are served
    // again, and nothing done ever is.
    let mut again = Vec::new();
    for _ in 0..300 {
        again.extend(get_urls(&mut c, 60).await);
        if again.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    again.sort();
    assert_eq!(again, vec![all[1].clone(), all[2].clone()]);
    assert_eq!(get_urls(&mut c, 60).await, vec![]);

    // Without a recrawl schedule a client's date is kept all the same: the URL is finished
    // (a page) and sleeps until 2030.
    let acks = put_urls(
        &mut c,
        vec![
            item("http://b.test/1", Some(0), "b"),
            item("http://a.test:8080/2", Some(1_900_000_000), "later"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(acks, vec![("b".to_owned(), ok), ("later".to_owned(), ok)]);
    let stats = c
        .get_stats(QueueWithinCrawlParams::default())
        .await
        .unwrap()
        .into_inner();
    // Done: a.test/1, c.test/1 (finished when it came up), b.test/1, a.test:8080/2 — which
    // sleeps.
    assert_eq!((stats.size, stats.counts.get("completed")), (0, Some(&4)));
    assert_eq!(stats.counts.get("scheduled"), Some(&1));

    crawl.stop().await;
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn puts_fail_while_redis_is_stalled_and_resent_nothing_is_lost() {
    let Some(redis) = test_support::redis_server::RedisServer::for_test(&[]) else {
        return;
    };
    let url = redis.url();
    let crawl = Crawl::start_with(move |cfg| {
        cfg.crawl.workers = engine::Workers::Count(0);
        cfg.frontier.backend = engine::FrontierBackend::Redis;
        cfg.frontier.redis_url = url;
        cfg.frontier.crawl_id = "grpc-faults".into();
        cfg.politeness.delay_ms = 0;
        cfg.politeness.max_per_host = 100;
    })
    .await;
    let mut s = settings("", 16, Duration::from_secs(10));
    s.api.request_timeout = Duration::from_secs(2);
    let (addr, server) = crawl.serve(s).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let (ok, skipped, fail) = (Ack::Ok as i32, Ack::Skipped as i32, Ack::Fail as i32);

    let acks = put_discovered(&mut c, vec![batch("b1", &["http://a.test/1"], "")])
        .await
        .unwrap();
    assert_eq!(acks, vec![("b1".to_owned(), vec![ok])]);

    // Redis stops answering (SIGSTOP): the next batch and item are acked FAIL, not held.
    redis.pause().unwrap();
    let acks = put_discovered(
        &mut c,
        vec![batch("b2", &["http://a.test/2", "http://b.test/3"], "")],
    )
    .await;
    let acks_items = put_urls(&mut c, vec![item("http://c.test/4", None, "i4")]).await;
    let leased = c
        .get_ur_ls(GetParams {
            delay_requestable: 2,
            ..GetParams::default()
        })
        .await;
    redis.resume().unwrap();
    assert_eq!(leased.unwrap_err().code(), Code::Unavailable);
    assert_eq!(acks.unwrap(), vec![("b2".to_owned(), vec![fail, fail])]);
    assert_eq!(acks_items.unwrap(), vec![("i4".to_owned(), fail)]);

    // Resent: each is queued now or was by the call that timed out (a repeat, SKIPPED);
    // none is lost.
    let acks = put_discovered(
        &mut c,
        vec![batch("b2", &["http://a.test/2", "http://b.test/3"], "")],
    )
    .await
    .unwrap();
    assert!(
        acks[0].1.iter().all(|s| *s == ok || *s == skipped),
        "{acks:?}"
    );
    let acks = put_urls(&mut c, vec![item("http://c.test/4", None, "i4")])
        .await
        .unwrap();
    assert!(acks[0].1 == ok || acks[0].1 == skipped, "{acks:?}");
    // (What the stalled GetURLs leased once Redis went on, if anything, comes back when its
    // 2 s hold has passed.)
    let mut got = Vec::new();
    for _ in 0..300 {
        got.extend(get_urls(&mut c, 60).await);
        if got.len() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    got.sort();
    let urls: Vec<&str> = got.iter().map(|(u, _)| u.as_str()).collect();
    assert_eq!(
        urls,
        [
            "http://a.test/1",
            "http://a.test/2",
            "http://b.test/3",
            "http://c.test/4"
        ]
    );

    crawl.stop().await;
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_known_url_with_a_date_is_due_again_from_that_date_and_not_before() {
    // A recrawl schedule whose own interval (an hour) never comes due in the test.
    let crawl = Crawl::start_with(|cfg| {
        unpaced(cfg);
        cfg.recrawl.policy = engine::config::RecrawlPolicy::Fixed;
        cfg.recrawl.interval_secs = 3600;
        cfg.recrawl.min_interval_secs = 1;
    })
    .await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let ok = Ack::Ok as i32;
    let urls = ["http://a.test/1", "http://a.test/2", "http://b.test/1"];
    put_discovered(&mut c, vec![batch("all", &urls, "")])
        .await
        .unwrap();
    assert_eq!(get_urls(&mut c, 60).await.len(), 3);

    // Held ones: a.test/1 again in 2 s, a.test/2 in an hour, b.test/1 done (by the crawl's
    // schedule: an hour). Not held: c.test/1, never seen, is admitted asleep until its date.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let soon = now + 2;
    let acks = put_urls(
        &mut c,
        vec![
            item("http://a.test/1", Some(soon), "a1"),
            item("http://a.test/2", Some(now + 3600), "a2"),
            item("http://b.test/1", Some(0), "b1"),
            item("http://c.test/1", Some(soon), "c1"),
        ],
    )
    .await
    .unwrap();
    let ids: Vec<(&str, i32)> = acks.iter().map(|(id, s)| (id.as_str(), *s)).collect();
    assert_eq!(ids, [("a1", ok), ("a2", ok), ("b1", ok), ("c1", ok)]);

    // Nothing before the date; then a.test/1 and c.test/1, and only they.
    let mut again = Vec::new();
    for _ in 0..150 {
        let got = get_urls(&mut c, 60).await;
        if !got.is_empty() {
            let at = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            assert!(at >= soon, "{got:?} handed out at {at}, before {soon}");
        }
        again.extend(got.into_iter().map(|(url, _)| url));
        if again.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    again.sort();
    assert_eq!(again, ["http://a.test/1", "http://c.test/1"]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        get_urls(&mut c, 60).await,
        vec![],
        "a.test/2 waits its hour"
    );

    crawl.stop().await;
    server.await.unwrap().unwrap();
}

/// URLs are handed out as they were put, with their metadata, and updated by any spelling
/// of their canonical form; metadata past the bound refuses the batch before any of it is
/// offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urls_come_back_as_put_with_their_metadata() {
    let crawl = Crawl::start_with(unpaced).await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let known_with = |url: &str, date: Option<u64>, values: &[&str]| {
        let mut i = item(url, date, url);
        let info = match &mut i.item {
            Some(Item::Discovered(d)) => d.info.as_mut(),
            Some(Item::Known(k)) => k.info.as_mut(),
            None => None,
        };
        info.unwrap().metadata.insert(
            "depth".into(),
            urlfrontier_proto::v2::StringList {
                values: values.iter().map(|v| (*v).to_owned()).collect(),
            },
        );
        i
    };
    let with_metadata = |url: &str, values: &[&str]| known_with(url, None, values);
    let acks = put_urls(
        &mut c,
        vec![
            with_metadata("http://a.test?x=1", &["1", "two"]),
            item("http://a.test/plain", None, "plain"),
            item("HTTP://E.test?bare", None, "bare"),
        ],
    )
    .await
    .unwrap();
    assert!(acks.iter().all(|(_, s)| *s == Ack::Ok as i32), "{acks:?}");
    let params = GetParams {
        delay_requestable: 60,
        ..GetParams::default()
    };
    let mut got = get_infos(&mut c, params).await;
    got.sort_by(|a, b| a.url.cmp(&b.url));
    let urls: Vec<&str> = got.iter().map(|i| i.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "HTTP://E.test?bare",
            "http://a.test/plain",
            "http://a.test?x=1"
        ],
        "as put, with metadata or without"
    );
    assert_eq!((got[0].key.as_str(), got[1].metadata.len()), ("e.test", 0));
    assert_eq!(got[2].metadata["depth"].values, ["1", "two"]);
    assert_eq!(got[2].key, "a.test");

    // The update names the canonical form: it finishes the lease all the same.
    let acks = put_urls(&mut c, vec![item("http://a.test/?x=1", Some(0), "done")])
        .await
        .unwrap();
    assert_eq!(acks, [("done".to_owned(), Ack::Ok as i32)]);
    let stats = c
        .get_stats(QueueWithinCrawlParams::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (stats.in_process, stats.counts.get("completed")),
        (2, Some(&1))
    );

    // A known URL never seen, with a date that has come: admitted asleep, it wakes and
    // comes back as put, with its metadata.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let late = known_with("http://C.test/late", Some(now - 5), &["3"]);
    let acks = put_urls(&mut c, vec![late]).await.unwrap();
    assert_eq!(acks, [("http://C.test/late".to_owned(), Ack::Ok as i32)]);
    let params = GetParams {
        key: "c.test".into(),
        delay_requestable: 60,
        ..GetParams::default()
    };
    let got = get_infos(&mut c, params).await;
    assert_eq!(got.len(), 1);
    let (url, key) = (got[0].url.as_str(), got[0].key.as_str());
    assert_eq!((url, key), ("http://C.test/late", "c.test"));
    assert_eq!(got[0].metadata["depth"].values, ["3"]);

    // Past the bound: the stream ends with INVALID_ARGUMENT and nothing of the batch is
    // queued (PutDiscovered checks the whole batch first).
    let big = "v".repeat(frontier::MAX_CLIENT_BYTES);
    let mut items = batch("big", &["http://b.test/1", "http://b.test/2"], "");
    items.items[1].metadata.insert(
        "k".into(),
        urlfrontier_proto::v2::StringList { values: vec![big] },
    );
    let e = put_discovered(&mut c, vec![items]).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    assert!(e.message().contains("at most 8192"), "{e}");
    let stats = c
        .get_stats(QueueWithinCrawlParams {
            key: "b.test".into(),
            ..QueueWithinCrawlParams::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(stats.size, 0, "none of the batch queued");

    crawl.stop().await;
    server.await.unwrap().unwrap();
}
