//! Crawl IDs: upstream's testCrawlIDs and what it leaves out — a put naming a new ID makes a
//! crawl of its own (its own visited set and queues), reads make none, one stream or batch
//! may name several crawls, `service.max_crawls` bounds them, DeleteCrawl removes one whole
//! (a put after it starts afresh) and empties `DEFAULT`'s queues, a restarted service takes
//! its crawls up again; in Redis each crawl is a namespace of its own, deleted key by key, and
//! the service's replicas share them (each takes up what another made and lets go of what
//! another deleted).

use urlfrontier_proto::v2::get_params;

use super::urls::{batch, get_infos, get_urls, item_of_crawl, put_discovered, put_urls, unpaced};
use super::*;

/// A discovered URL of crawl `crawl_id`, acked by its URL.
fn item_in(url: &str, crawl_id: &str) -> UrlItem {
    item_of_crawl(url, crawl_id, None, "")
}

/// The statuses of `items` put on one stream.
async fn statuses(c: &mut UrlFrontierClient<Channel>, items: Vec<UrlItem>) -> Vec<i32> {
    put_urls(c, items)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, s)| s)
        .collect()
}

/// A crawl's `(size, number_of_queues)` and the ID its figures name.
async fn stats(c: &mut UrlFrontierClient<Channel>, crawl_id: &str) -> (u64, u64, String) {
    let s = c
        .get_stats(QueueWithinCrawlParams {
            crawl_id: crawl_id.into(),
            ..QueueWithinCrawlParams::default()
        })
        .await
        .unwrap()
        .into_inner();
    (s.size, s.number_of_queues, s.crawl_id)
}

async fn crawl_ids(c: &mut UrlFrontierClient<Channel>) -> Vec<String> {
    c.list_crawls(Local::default())
        .await
        .unwrap()
        .into_inner()
        .values
}

async fn delete_crawl(c: &mut UrlFrontierClient<Channel>, id: &str) -> u64 {
    c.delete_crawl(DeleteCrawlMessage {
        value: id.into(),
        local: false,
    })
    .await
    .unwrap()
    .into_inner()
    .value
}

/// The URLs one GetURLs of crawl `crawl_id` hands out, with the crawl each names, sorted.
async fn get_urls_of(c: &mut UrlFrontierClient<Channel>, crawl_id: &str) -> Vec<(String, String)> {
    let params = GetParams {
        delay_requestable: 60,
        item: Some(get_params::Item::CrawlId(crawl_id.into())),
        ..GetParams::default()
    };
    let infos = get_infos(c, params).await;
    let mut out: Vec<(String, String)> = infos.into_iter().map(|i| (i.url, i.crawl_id)).collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_ids_are_crawls_of_their_own_made_by_puts_deleted_whole_and_restored() {
    let configure = |cfg: &mut engine::CrawlConfig| {
        unpaced(cfg);
        cfg.crawl.persist = true;
        cfg.service.max_crawls = 2;
    };
    let crawl = Crawl::start_with(configure).await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let (ok, skipped) = (Ack::Ok as i32, Ack::Skipped as i32);
    assert_eq!(crawl_ids(&mut c).await, ["DEFAULT"]);

    // Upstream's testCrawlIDs: one URL to a bespoke crawl, to the default one by no ID and
    // by its name (the same crawl: seen).
    let u = "http://urlfrontier.net/";
    let acks = statuses(
        &mut c,
        vec![item_in(u, "BESPOKE"), item_in(u, ""), item_in(u, "DEFAULT")],
    )
    .await;
    assert_eq!(acks, [ok, ok, skipped]);
    assert_eq!(stats(&mut c, "").await, (1, 1, "DEFAULT".into()));
    assert_eq!(stats(&mut c, "BESPOKE").await, (1, 1, "BESPOKE".into()));
    assert_eq!(crawl_ids(&mut c).await, ["DEFAULT", "BESPOKE"]);

    // One batch naming two crawls: each URL to its crawl's visited set, acked in order.
    let mut mixed = batch("m", &["http://a.test/1"; 4], "BESPOKE");
    mixed.items[1].crawl_id = String::new();
    mixed.items[2].url = "http://b.test/1".into();
    let acks = put_discovered(&mut c, vec![mixed]).await.unwrap();
    assert_eq!(acks, [("m".to_owned(), vec![ok, ok, ok, skipped])]);

    // GetURLs of one crawl hands out its URLs only, each naming it; of every crawl, the rest.
    assert_eq!(
        get_urls_of(&mut c, "BESPOKE").await,
        [
            ("http://a.test/1".to_owned(), "BESPOKE".to_owned()),
            ("http://b.test/1".to_owned(), "BESPOKE".to_owned()),
            (u.to_owned(), "BESPOKE".to_owned()),
        ]
    );
    assert_eq!(get_urls_of(&mut c, "nobody").await, []);
    assert_eq!(
        get_urls(&mut c, 60).await,
        [
            ("http://a.test/1".to_owned(), "a.test".to_owned()),
            (u.to_owned(), "urlfrontier.net".to_owned()),
        ]
    );
    assert_eq!(
        crawl_ids(&mut c).await,
        ["DEFAULT", "BESPOKE"],
        "reads make none"
    );

    // service.max_crawls = 2: a third named crawl is refused, and nothing of it is made.
    assert_eq!(statuses(&mut c, vec![item_in(u, "third")]).await, [ok]);
    let e = put_urls(&mut c, vec![item_in(u, "fourth")])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e}");
    assert!(e.message().contains("max_crawls"), "{e}");
    assert_eq!(crawl_ids(&mut c).await, ["DEFAULT", "BESPOKE", "third"]);

    // DeleteCrawl of a named crawl: its URLs counted (held ones too), the crawl and its
    // files gone; a put after it makes a new crawl that has seen nothing.
    let out = crawl.dir.path().join("out");
    assert!(
        out.join("crawls/BESPOKE/state").is_dir(),
        "its state is its own"
    );
    assert_eq!(delete_crawl(&mut c, "BESPOKE").await, 3);
    assert_eq!(stats(&mut c, "BESPOKE").await, (0, 0, "BESPOKE".into()));
    assert_eq!(crawl_ids(&mut c).await, ["DEFAULT", "third"]);
    assert!(!out.join("crawls/BESPOKE").exists());
    assert_eq!(delete_crawl(&mut c, "BESPOKE").await, 0, "gone already");
    assert_eq!(statuses(&mut c, vec![item_in(u, "BESPOKE")]).await, [ok]);
    assert_eq!(stats(&mut c, "BESPOKE").await, (1, 1, "BESPOKE".into()));

    // SetActive(false) pauses every crawl: nothing is handed out from any.
    c.set_active(Active {
        state: false,
        local: false,
    })
    .await
    .unwrap();
    assert_eq!(get_urls(&mut c, 60).await, []);
    c.set_active(Active {
        state: true,
        local: false,
    })
    .await
    .unwrap();

    // DeleteCrawl of DEFAULT empties its queues (the service runs on it): what is queued
    // is dropped, what a client holds stays held.
    assert_eq!(
        statuses(&mut c, vec![item_in("http://c.test/", "")]).await,
        [ok]
    );
    assert_eq!(stats(&mut c, "").await.0, 3);
    assert_eq!(delete_crawl(&mut c, "").await, 1);
    assert_eq!(stats(&mut c, "DEFAULT").await.0, 2);
    assert_eq!(crawl_ids(&mut c).await, ["DEFAULT", "BESPOKE", "third"]);

    // A restarted service takes its crawls up again, as they were.
    let dir = crawl.stop().await;
    server.await.unwrap().unwrap();
    let crawl = Crawl::start_in(dir, configure).await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    assert_eq!(crawl_ids(&mut c).await, ["DEFAULT", "BESPOKE", "third"]);
    assert_eq!(stats(&mut c, "BESPOKE").await, (1, 1, "BESPOKE".into()));
    assert_eq!(
        statuses(&mut c, vec![item_in(u, "BESPOKE")]).await,
        [skipped]
    );
    assert_eq!(stats(&mut c, "third").await, (1, 1, "third".into()));

    crawl.stop().await;
    server.await.unwrap().unwrap();
}

/// Polls `check` every 100 ms for up to 30 s.
async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_redis_each_crawl_id_is_a_namespace_replicas_share_and_a_delete_removes_whole() {
    let Some(redis) = test_support::redis_server::RedisServer::for_test(&[]) else {
        return;
    };
    let url = redis.url();
    let configure = move |cfg: &mut engine::CrawlConfig| {
        unpaced(cfg);
        cfg.frontier.backend = engine::FrontierBackend::Redis;
        cfg.frontier.redis_url = url.clone();
        cfg.frontier.crawl_id = "svc".into();
    };
    let keys = |pattern: &str| {
        redis
            .command(&["EVAL", "return #redis.call('KEYS', ARGV[1])", "0", pattern])
            .unwrap()
    };
    let crawl = Crawl::start_with(configure.clone()).await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let ok = Ack::Ok as i32;

    // The same URL in three crawls: three visited sets, three namespaces.
    let u = "http://a.test/";
    let acks = statuses(
        &mut c,
        vec![item_in(u, "news"), item_in(u, ""), item_in(u, "news2")],
    )
    .await;
    assert_eq!(acks, [ok, ok, ok]);
    assert_ne!(keys("crawl:{svc/news}:*"), ":0");

    // Another replica of the service (its own output) takes them up from Redis.
    let replica = Crawl::start_with(configure).await;
    let (raddr, rserver) = replica
        .serve(settings("", 16, Duration::from_secs(10)))
        .await;
    let mut r = UrlFrontierClient::new(channel(raddr).await);
    assert_eq!(crawl_ids(&mut r).await, ["DEFAULT", "news", "news2"]);
    assert_eq!(stats(&mut r, "news").await, (1, 1, "news".into()));

    // A crawl made on one replica shows on the other.
    assert_eq!(statuses(&mut r, vec![item_in(u, "late")]).await, [ok]);
    eventually("the crawl made elsewhere", async || {
        crawl_ids(&mut c).await == ["DEFAULT", "late", "news", "news2"]
    })
    .await;
    assert_eq!(stats(&mut c, "late").await, (1, 1, "late".into()));

    // DeleteCrawl removes every key of the crawl, and only those; the other replica lets
    // go of it, and a put there after makes a new, empty crawl.
    assert_eq!(delete_crawl(&mut c, "news").await, 1);
    assert_eq!(keys("crawl:{svc/news}:*"), ":0");
    assert_ne!(keys("crawl:{svc/news2}:*"), ":0");
    assert_ne!(keys("crawl:{svc}:*"), ":0");
    eventually("the replica to let go", async || {
        crawl_ids(&mut r).await == ["DEFAULT", "late", "news2"]
    })
    .await;
    // Unlisted first, then stopped and removed: its files go a moment later.
    let files = replica.dir.path().join("out/crawls/news");
    eventually("its files to go too", async || !files.exists()).await;
    assert_eq!(stats(&mut c, "").await.0, 1);
    assert_eq!(statuses(&mut r, vec![item_in(u, "news")]).await, [ok]);
    eventually("the crawl made again", async || {
        crawl_ids(&mut c).await == ["DEFAULT", "late", "news", "news2"]
    })
    .await;
    assert_eq!(stats(&mut c, "news").await, (1, 1, "news".into()));

    // A delete cut short (the ID left `deleting`) refuses the ID until a delete finishes it.
    redis
        .command(&["HSET", "crawl:{svc}:named", "cut", "deleting"])
        .unwrap();
    let e = put_urls(&mut c, vec![item_in(u, "cut")]).await.unwrap_err();
    assert_eq!(e.code(), Code::Unavailable, "{e}");
    assert!(e.message().contains("being deleted"), "{e}");
    assert_eq!(delete_crawl(&mut c, "cut").await, 0);
    assert_eq!(statuses(&mut c, vec![item_in(u, "cut")]).await, [ok]);

    // A registry that is lost (flushed, evicted) is no evidence of a delete: nothing is let go.
    let all = ["DEFAULT", "cut", "late", "news", "news2"];
    eventually("the replica to join", async || {
        crawl_ids(&mut r).await == all
    })
    .await;
    redis.command(&["DEL", "crawl:{svc}:named"]).unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(crawl_ids(&mut r).await, all);
    assert_eq!(crawl_ids(&mut c).await, all);

    replica.stop().await;
    rserver.await.unwrap().unwrap();
    crawl.stop().await;
    server.await.unwrap().unwrap();
}
