//! Client keys: a queue is the URL's `key` (its host when none is given) — one queue for
//! several hosts, paced, controlled and listed as one, none of its own for those hosts — and
//! a known URL's update with a date carries its new metadata, in the queue it was in.

use super::urls::{get_infos, item, put_urls, unpaced};
use super::*;

/// A PutURLs item for `url` under `key`, discovered or known with `known` as its date, with
/// the metadata `v` = `values`.
pub(super) fn keyed(url: &str, key: &str, known: Option<u64>, values: &[&str]) -> UrlItem {
    let mut item = item(url, known, url);
    let info = match &mut item.item {
        Some(Item::Discovered(d)) => d.info.as_mut(),
        Some(Item::Known(k)) => k.info.as_mut(),
        None => None,
    };
    let info = info.expect("made with its info");
    info.key = key.into();
    if !values.is_empty() {
        let values = values.iter().map(|v| (*v).to_owned()).collect();
        info.metadata
            .insert("v".into(), urlfrontier_proto::v2::StringList { values });
    }
    item
}

fn held(hold: u32) -> GetParams {
    GetParams {
        delay_requestable: hold,
        ..GetParams::default()
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_key_is_the_queue_of_its_urls_whatever_their_hosts() {
    // One fetch at a time per queue: a key's hosts share it.
    let crawl = Crawl::start_with(|cfg| {
        unpaced(cfg);
        cfg.politeness.max_per_host = 1;
    })
    .await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let acks = put_urls(
        &mut c,
        vec![
            keyed("http://a.test/1", "shared", None, &[]),
            keyed("http://b.test/1", "shared", None, &[]),
            keyed("http://c.test/1", "", None, &[]),
            keyed("http://d.test/1", "d.test", None, &[]),
        ],
    )
    .await
    .unwrap();
    assert!(acks.iter().all(|(_, s)| *s == Ack::Ok as i32), "{acks:?}");
    let all = Pagination {
        include_inactive: true,
        ..Pagination::default()
    };
    let queues = c.list_queues(all).await.unwrap().into_inner();
    assert_eq!(queues.values, ["c.test", "d.test", "shared"]);

    let mut got: Vec<(String, String)> = get_infos(&mut c, held(60))
        .await
        .into_iter()
        .map(|i| (i.key, i.url))
        .collect();
    got.sort();
    let pairs: Vec<(&str, &str)> = got.iter().map(|(k, u)| (k.as_str(), u.as_str())).collect();
    assert_eq!(
        pairs,
        [
            ("c.test", "http://c.test/1"),
            ("d.test", "http://d.test/1"),
            ("shared", "http://a.test/1"),
        ],
        "one of the shared queue's two hosts at a time"
    );
    let stats = |key: &str| QueueWithinCrawlParams {
        key: key.into(),
        ..QueueWithinCrawlParams::default()
    };
    let shared = c.get_stats(stats("shared")).await.unwrap().into_inner();
    assert_eq!(
        (shared.size, shared.in_process),
        (2, 1),
        "one queued, one held"
    );
    let b = c.get_stats(stats("b.test")).await.unwrap().into_inner();
    assert_eq!((b.size, b.number_of_queues), (0, 0), "no queue of its host");
    let whole = c.get_stats(stats("")).await.unwrap().into_inner();
    assert_eq!(
        (whole.size, whole.counts.get("active_queues")),
        (4, Some(&3)),
        "three queues, each with a URL held"
    );

    // The key's controls hold its hosts: blocked, b.test waits though a.test is done.
    let block = BlockQueueParams {
        key: "shared".into(),
        time: now() + 3600,
        ..BlockQueueParams::default()
    };
    c.block_queue_until(block).await.unwrap();
    let whole = c.get_stats(stats("")).await.unwrap().into_inner();
    assert_eq!(
        whole.counts.get("active_queues"),
        Some(&2),
        "a blocked queue is not active"
    );
    let acks = put_urls(&mut c, vec![keyed("http://a.test/1", "", Some(0), &[])])
        .await
        .unwrap();
    assert_eq!(acks, [("http://a.test/1".to_owned(), Ack::Ok as i32)]);
    assert_eq!(get_infos(&mut c, held(60)).await, vec![], "blocked");
    let unblock = BlockQueueParams {
        key: "shared".into(),
        time: 0,
        ..BlockQueueParams::default()
    };
    c.block_queue_until(unblock).await.unwrap();
    let got = get_infos(&mut c, held(60)).await;
    let pairs: Vec<(&str, &str)> = got
        .iter()
        .map(|i| (i.key.as_str(), i.url.as_str()))
        .collect();
    assert_eq!(pairs, [("shared", "http://b.test/1")]);

    // A known URL never handed out is done in its key's queue too: no queue of its host.
    let acks = put_urls(
        &mut c,
        vec![keyed("http://e.test/1", "shared", Some(0), &[])],
    )
    .await
    .unwrap();
    assert_eq!(acks, [("http://e.test/1".to_owned(), Ack::Ok as i32)]);
    let all = Pagination {
        include_inactive: true,
        ..Pagination::default()
    };
    let queues = c.list_queues(all).await.unwrap().into_inner();
    assert_eq!(queues.values, ["c.test", "d.test", "shared"]);

    crawl.stop().await;
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_known_update_with_a_date_carries_its_new_metadata_in_its_queue() {
    let crawl = Crawl::start_with(unpaced).await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let put = put_urls(&mut c, vec![keyed("http://a.test/1", "k", None, &["1"])])
        .await
        .unwrap();
    assert_eq!(put, [("http://a.test/1".to_owned(), Ack::Ok as i32)]);
    let got = get_infos(&mut c, held(60)).await;
    assert_eq!((got[0].key.as_str(), got.len()), ("k", 1));
    assert_eq!(got[0].metadata["v"].values, ["1"]);

    // Fetched by the client, due again at once, with new metadata (and a key it cannot
    // move to): it comes back with the update's metadata, in its queue.
    let update = keyed("http://a.test/1", "elsewhere", Some(now() - 5), &["2", "b"]);
    let acks = put_urls(&mut c, vec![update]).await.unwrap();
    assert_eq!(acks, [("http://a.test/1".to_owned(), Ack::Ok as i32)]);
    let mut again = Vec::new();
    for _ in 0..100 {
        again = get_infos(&mut c, held(60)).await;
        if !again.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(again.len(), 1, "due again");
    assert_eq!(
        (again[0].url.as_str(), again[0].key.as_str()),
        ("http://a.test/1", "k")
    );
    assert_eq!(again[0].metadata["v"].values, ["2", "b"]);

    crawl.stop().await;
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_date_for_a_finished_url_queues_it_again_until_then() {
    let crawl = Crawl::start_with(unpaced).await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let ok = |url: &str| vec![(url.to_owned(), Ack::Ok as i32)];
    let put = put_urls(&mut c, vec![keyed("http://a.test/1", "k", None, &["1"])]);
    assert_eq!(put.await.unwrap(), ok("http://a.test/1"));
    assert_eq!(get_infos(&mut c, held(60)).await.len(), 1);
    let done = put_urls(&mut c, vec![keyed("http://a.test/1", "k", Some(0), &[])]);
    assert_eq!(done.await.unwrap(), ok("http://a.test/1"));
    assert_eq!(get_infos(&mut c, held(60)).await, vec![], "finished");

    // The client wants it again from a date (passed already): it comes back, as put now.
    let again = keyed("http://a.test/1", "k", Some(now() - 5), &["2"]);
    assert_eq!(
        put_urls(&mut c, vec![again]).await.unwrap(),
        ok("http://a.test/1")
    );
    let mut got = Vec::new();
    for _ in 0..100 {
        got = get_infos(&mut c, held(60)).await;
        if !got.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(got.len(), 1, "queued again");
    assert_eq!(
        (got[0].url.as_str(), got[0].key.as_str()),
        ("http://a.test/1", "k")
    );
    assert_eq!(got[0].metadata["v"].values, ["2"]);

    crawl.stop().await;
    server.await.unwrap().unwrap();
}
