//! The queue controls and figures: SetDelay (of a key and of every queue), BlockQueueUntil,
//! SetCrawlLimit, DeleteQueue, ListQueues and GetStats of a key.

use super::urls::{batch, get_urls, item, put_discovered, put_urls, unpaced};
use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_can_be_slowed_and_blocked() {
    let crawl = Crawl::start_with(unpaced).await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let urls = ["http://a.test/1", "http://a.test/2", "http://b.test/1"];
    put_discovered(&mut c, vec![batch("all", &urls, "")])
        .await
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();

    // a.test: an hour between hand-outs; b.test: blocked for an hour.
    c.set_delay(QueueDelayParams {
        key: "a.test".into(),
        delay_requestable: 3600,
        ..QueueDelayParams::default()
    })
    .await
    .unwrap();
    let block = |time| BlockQueueParams {
        key: "b.test".into(),
        time,
        ..BlockQueueParams::default()
    };
    c.block_queue_until(block(now + 3600)).await.unwrap();
    let got = get_urls(&mut c, 60).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].1, "a.test");
    assert_eq!(get_urls(&mut c, 60).await, vec![]);

    // Lifted (time 0): b.test's URL is handed out; a.test's next still waits its delay.
    c.block_queue_until(block(0)).await.unwrap();
    let got = get_urls(&mut c, 60).await;
    assert_eq!(
        got,
        vec![("http://b.test/1".to_owned(), "b.test".to_owned())]
    );

    // Unknown queues are ignored (as upstream); nonsense is refused.
    c.set_delay(QueueDelayParams {
        key: "nowhere.test".into(),
        delay_requestable: 1,
        ..QueueDelayParams::default()
    })
    .await
    .unwrap();
    let e = c.block_queue_until(block(u64::MAX)).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");

    // An empty key: an hour between hand-outs for every queue without its own delay.
    c.set_delay(QueueDelayParams {
        key: String::new(),
        delay_requestable: 3600,
        ..QueueDelayParams::default()
    })
    .await
    .unwrap();
    put_discovered(
        &mut c,
        vec![batch("c", &["http://c.test/1", "http://c.test/2"], "")],
    )
    .await
    .unwrap();
    let got = get_urls(&mut c, 60).await;
    assert_eq!(
        got,
        vec![("http://c.test/1".to_owned(), "c.test".to_owned())],
        "c.test's second waits the default hour"
    );

    crawl.stop().await;
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_limit_stops_a_queue_and_its_figures_show_it() {
    let crawl = Crawl::start_with(unpaced).await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let urls = ["http://a.test/1", "http://a.test/2", "http://a.test/3"];
    put_discovered(&mut c, vec![batch("all", &urls, "")])
        .await
        .unwrap();
    let limit = |key: &str, limit| CrawlLimitParams {
        key: key.into(),
        limit,
        ..CrawlLimitParams::default()
    };
    let stats = |key: &str| QueueWithinCrawlParams {
        key: key.into(),
        ..QueueWithinCrawlParams::default()
    };

    // One URL completed at most: one is handed out, and once it is done, nothing more.
    c.set_crawl_limit(limit("a.test", 1)).await.unwrap();
    let got = get_urls(&mut c, 60).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        get_urls(&mut c, 60).await,
        vec![],
        "one held on a limit of one"
    );
    let acks = put_urls(&mut c, vec![item(&got[0].0, Some(0), "done")])
        .await
        .unwrap();
    assert_eq!(acks, vec![("done".to_owned(), Ack::Ok as i32)]);
    assert_eq!(
        get_urls(&mut c, 60).await,
        vec![],
        "one done on a limit of one"
    );
    let a = c.get_stats(stats("a.test")).await.unwrap().into_inner();
    assert_eq!(
        (
            a.size,
            a.in_process,
            a.counts.get("completed"),
            a.number_of_queues
        ),
        (2, 0, Some(&1), 1),
        "its other URLs stay"
    );
    // At its limit the queue is inactive: listed only with the inactive ones.
    let list = |include_inactive| Pagination {
        include_inactive,
        ..Pagination::default()
    };
    let queues = c.list_queues(list(false)).await.unwrap().into_inner();
    assert!(queues.values.is_empty(), "{queues:?}");
    let queues = c.list_queues(list(true)).await.unwrap().into_inner();
    assert_eq!(queues.values, ["a.test"]);

    // Lifted (0): the rest is handed out.
    c.set_crawl_limit(limit("a.test", 0)).await.unwrap();
    assert_eq!(get_urls(&mut c, 60).await.len(), 2);

    // A queue the crawl does not know is said to be unknown.
    let e = c
        .set_crawl_limit(limit("nowhere.test", 1))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e}");

    crawl.stop().await;
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_queue_drops_what_is_queued_and_keeps_what_is_held() {
    let crawl = Crawl::start_with(unpaced).await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let a: Vec<String> = (1..=5).map(|i| format!("http://a.test/{i}")).collect();
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    put_discovered(&mut c, vec![batch("a", &a, "")])
        .await
        .unwrap();
    let mut one = c
        .get_ur_ls(GetParams {
            max_urls_per_queue: 1,
            max_queues: 1,
            delay_requestable: 60,
            ..GetParams::default()
        })
        .await
        .unwrap()
        .into_inner();
    let held = one.message().await.unwrap().expect("one URL").url;
    assert!(one.message().await.unwrap().is_none());
    put_discovered(
        &mut c,
        vec![batch("b", &["http://b.test/1", "http://b.test/2"], "")],
    )
    .await
    .unwrap();
    let queue = |key: &str| QueueWithinCrawlParams {
        key: key.into(),
        ..QueueWithinCrawlParams::default()
    };
    let deleted = c.delete_queue(queue("a.test")).await.unwrap().into_inner();
    assert_eq!(deleted.value, 4, "the four queued, not the one held");
    for key in ["a.test", "nowhere.test"] {
        let again = c.delete_queue(queue(key)).await.unwrap().into_inner();
        assert_eq!(again.value, 0, "{key}");
    }
    let e = c.delete_queue(queue("")).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    let s = c.get_stats(queue("a.test")).await.unwrap().into_inner();
    assert_eq!((s.size, s.in_process), (1, 1), "the held URL stays held");

    // Only the other queue is handed out; the dropped URLs stay known.
    let got: Vec<String> = get_urls(&mut c, 60)
        .await
        .into_iter()
        .map(|(u, _)| u)
        .collect();
    assert_eq!(got, ["http://b.test/1", "http://b.test/2"]);
    let acks = put_discovered(&mut c, vec![batch("again", &a[1..2], "")])
        .await
        .unwrap();
    assert_eq!(acks, vec![("again".to_owned(), vec![Ack::Skipped as i32])]);
    // The held URL is updated as usual.
    let acks = put_urls(&mut c, vec![item(&held, Some(0), "done")])
        .await
        .unwrap();
    assert_eq!(acks, vec![("done".to_owned(), Ack::Ok as i32)]);
    let s = c.get_stats(queue("a.test")).await.unwrap().into_inner();
    assert_eq!((s.size, s.counts.get("completed")), (0, Some(&1)));

    crawl.stop().await;
    server.await.unwrap().unwrap();
}

/// Upstream's GetURLs reservation tests (its #147): a queue with a delay serves one URL per
/// delay however many GetURLs ask at once — keyed or not, on a connection each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_get_urls_serve_a_delayed_queue_once() {
    let crawl = Crawl::start_with(unpaced).await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let urls: Vec<String> = (0..20).map(|i| format!("http://a.test/{i}")).collect();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    put_discovered(&mut c, vec![batch("all", &urls, "")])
        .await
        .unwrap();
    c.set_delay(QueueDelayParams {
        key: "a.test".into(),
        delay_requestable: 300,
        ..QueueDelayParams::default()
    })
    .await
    .unwrap();
    // Connected first, then let go together.
    let start = Arc::new(tokio::sync::Barrier::new(8));
    let mut calls = Vec::new();
    for i in 0..8 {
        let mut c = UrlFrontierClient::new(channel(addr).await);
        let params = GetParams {
            key: if i % 2 == 0 {
                "a.test".into()
            } else {
                String::new()
            },
            max_urls_per_queue: 5,
            delay_requestable: 60,
            ..GetParams::default()
        };
        let start = Arc::clone(&start);
        calls.push(tokio::spawn(async move {
            start.wait().await;
            super::urls::get_infos(&mut c, params).await.len()
        }));
    }
    let mut served = 0;
    for call in calls {
        served += call.await.unwrap();
    }
    assert_eq!(served, 1, "one URL per delay, whoever asks");

    crawl.stop().await;
    server.await.unwrap().unwrap();
}
