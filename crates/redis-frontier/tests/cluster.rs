//! The shared frontier on a private Redis Cluster (3 masters with a replica each) beyond the
//! contract suite: the URL must name the kind of server it reaches, and the calls that name
//! no key — a named crawl's delete (`SCAN`), the room and version checks (`INFO`) — reach the
//! master that holds the crawl, not any node. The exported visited set is the one a single
//! Redis keeps for the same URLs, byte for byte.

mod common;

use std::time::Duration;

use frontier::{Frontier, Link, Next, Outcome};
use redis_frontier::{
    create_crawl, delete_crawl, export_guava, named_crawl_id, Created, RedisConfig, RedisFrontier,
    RedisFrontierError,
};
use test_support::redis_cluster::RedisCluster;
use test_support::redis_server::RedisServer;
use url::Url;

fn settings(url: &str, crawl_id: &str) -> RedisConfig {
    RedisConfig {
        url: url.into(),
        crawl_id: crawl_id.into(),
        lease: Duration::from_secs(5),
        holder: None,
        partitions: 0,
    }
}

fn links(host: &str, n: usize) -> Vec<Link> {
    (0..n)
        .map(|i| Link::new(Url::parse(&format!("http://{host}/{i}")).unwrap(), 1))
        .collect()
}

/// Keys matching `pattern` on every live master of `cluster`.
fn keys_on_masters(cluster: &mut RedisCluster, pattern: &str) -> u64 {
    let mut n = 0;
    for addr in cluster.addrs() {
        let node = cluster.node(addr).expect("started");
        let master = node
            .command(&["INFO", "replication"])
            .is_ok_and(|i| i.contains("role:master"));
        if !master {
            continue;
        }
        let count = node
            .command(&["EVAL", "return #redis.call('KEYS', ARGV[1])", "0", pattern])
            .expect("count keys");
        n += count.trim().trim_start_matches(':').parse::<u64>().unwrap();
    }
    n
}

/// Offers `urls` to a fresh crawl at `url`, leases and completes three of them.
async fn crawl_a_little(url: &str, crawl_id: &str) -> RedisFrontier {
    let f = RedisFrontier::connect(common::unpaced(), settings(url, crawl_id), &[])
        .await
        .expect("connect");
    let admitted = f.offer(None, links("a.test", 40)).await.unwrap();
    assert_eq!(admitted.len(), 40);
    f.offer(None, links("b.test", 20)).await.unwrap();
    for _ in 0..3 {
        let Next::Lease(lease) = f.next().await.unwrap() else {
            panic!("a URL is queued");
        };
        f.complete(lease, Outcome::Done).await.unwrap();
    }
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_on_a_cluster_is_the_crawl_on_one_redis() {
    let Some(mut cluster) = RedisCluster::for_test(3) else {
        return;
    };
    let Some(single) = RedisServer::for_test(&[]) else {
        return;
    };
    let curl = cluster.url();

    // The URL says which kind of server it reaches: the settings' fault (not "unavailable").
    let node = cluster.addrs()[0];
    let e = RedisFrontier::connect(
        common::unpaced(),
        settings(&format!("redis://{node}/0"), "kind"),
        &[],
    )
    .await
    .unwrap_err();
    assert!(
        matches!(e, RedisFrontierError::WrongKind(_)) && !e.is_unavailable(),
        "{e}"
    );
    assert!(e.to_string().contains("redis+cluster://"), "{e}");
    // Another database than 0 is selected on connecting, which a cluster node refuses: the
    // same answer.
    let e = RedisFrontier::connect(
        common::unpaced(),
        settings(&format!("redis://{node}/1"), "kind"),
        &[],
    )
    .await
    .unwrap_err();
    assert!(matches!(e, RedisFrontierError::WrongKind(_)), "{e}");
    let plain = format!("redis+cluster://{}", single.addr());
    let e = RedisFrontier::connect(common::unpaced(), settings(&plain, "kind"), &[])
        .await
        .unwrap_err();
    assert!(matches!(e, RedisFrontierError::WrongKind(_)), "{e}");
    assert!(e.to_string().contains("redis://"), "{e}");

    // The same crawl on both: the same figures, the same exported visited set.
    let on_cluster = crawl_a_little(&curl, "same").await;
    let on_one = crawl_a_little(&single.url(), "same").await;
    let (a, b) = (
        on_cluster.stats().await.unwrap(),
        on_one.stats().await.unwrap(),
    );
    assert_eq!((a.admitted, a.queued, a.pages), (60, 57, 3));
    assert_eq!(
        (a.admitted, a.queued, a.pages),
        (b.admitted, b.queued, b.pages)
    );
    assert_eq!(a.filter_bits_set, b.filter_bits_set);
    let exported = export_guava(&curl, "same").await.unwrap();
    assert_eq!(exported, export_guava(&single.url(), "same").await.unwrap());

    // A named crawl's delete finds every key of the crawl, on whichever master holds it.
    assert_eq!(
        create_crawl(&curl, "svc", "news").await.unwrap(),
        Created::Alive(1)
    );
    let id = named_crawl_id("svc", "news");
    drop(crawl_a_little(&curl, &id).await);
    let pattern = format!("crawl:{{{id}}}:*");
    let before = keys_on_masters(&mut cluster, &pattern);
    assert!(before > 5, "{before} keys");
    let removed = delete_crawl(&curl, "svc", "news").await.unwrap();
    assert_eq!(removed, before);
    assert_eq!(keys_on_masters(&mut cluster, &pattern), 0);
    assert_eq!(
        create_crawl(&curl, "svc", "news").await.unwrap(),
        Created::Alive(2)
    );
}

/// Settings of a crawl split into `partitions`.
fn parted(url: &str, crawl_id: &str, partitions: u32) -> RedisConfig {
    RedisConfig {
        partitions,
        ..settings(url, crawl_id)
    }
}

/// A crawl split into 6 partitions: its keys spread over the masters, its visited set is one
/// Guava file per partition — each the filter a local one of that shape builds from the URLs
/// of that partition's hosts —, every process must agree on the number, what it does not
/// serve yet is refused, and a named crawl's delete removes every partition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_crawl_is_spread_exported_agreed_and_deleted_whole() {
    let Some(mut cluster) = RedisCluster::for_test(3) else {
        return;
    };
    let curl = cluster.url();
    let cfg = common::unpaced();
    let f = RedisFrontier::connect(cfg.clone(), parted(&curl, "parted", 6), &[])
        .await
        .expect("connect");
    assert_eq!(f.partitions(), 6);
    let hosts: Vec<String> = (0..24).map(|h| format!("h{h}.test")).collect();
    let mut urls = Vec::new();
    for h in &hosts {
        let page = links(h, 10);
        urls.extend(page.iter().map(|l| l.url.to_string()));
        assert_eq!(
            f.offer(None, page).await.unwrap(),
            vec![frontier::Admission::Admitted; 10]
        );
    }
    for _ in 0..30 {
        let Next::Lease(lease) = f.next().await.unwrap() else {
            panic!("URLs are queued");
        };
        f.complete(lease, Outcome::Done).await.unwrap();
    }
    let stats = f.stats().await.unwrap();
    assert_eq!((stats.admitted, stats.pages, stats.queued), (240, 30, 210));
    assert_eq!(stats.hosts, 24);
    assert!(keys_on_masters(&mut cluster, "crawl:{parted *") > 0);

    // One file per partition, each a local filter of the partition's shape.
    let e = export_guava(&curl, "parted").await.unwrap_err();
    assert!(matches!(e, RedisFrontierError::Unsupported(_)), "{e}");
    let files = redis_frontier::export_partitions(&curl, "parted")
        .await
        .unwrap();
    assert_eq!(files.len(), 6);
    let shape =
        redis_frontier::Visited::partition("parted", 1, 6, cfg.expected_urls, cfg.fpp).unwrap();
    let mut nonempty = 0;
    for (p, file) in files.iter().enumerate() {
        let local = bloom::BloomFilter::<str, bloom::StringFunnel>::new(
            bloom::StringFunnel,
            (cfg.expected_urls * 3 / 2).div_ceil(6),
            cfg.fpp,
        )
        .unwrap();
        assert_eq!(local.bit_size(), shape.bit_size());
        for u in &urls {
            let host = Url::parse(u).unwrap().host_str().unwrap().to_owned();
            if redis_frontier::partition_of(&host, 6) as usize == p {
                local.put(u.as_str());
            }
        }
        nonempty += usize::from(local.bit_count() > 0);
        assert!(local.to_bytes() == *file, "partition {p}'s file");
    }
    assert!(nonempty >= 4, "{nonempty} partitions hold URLs");

    // Every process gives the same number, or 0 (the crawl's own).
    let e = RedisFrontier::connect(cfg.clone(), parted(&curl, "parted", 4), &[])
        .await
        .unwrap_err();
    assert!(
        matches!(e, RedisFrontierError::Partitions { stored: 6, ours: 4 }),
        "{e}"
    );
    let g = RedisFrontier::connect(cfg.clone(), parted(&curl, "parted", 0), &[])
        .await
        .unwrap();
    assert_eq!(g.partitions(), 6);
    // A named crawl's delete removes every partition's keys.
    assert_eq!(
        create_crawl(&curl, "svc", "wide").await.unwrap(),
        Created::Alive(1)
    );
    let id = named_crawl_id("svc", "wide");
    let w = RedisFrontier::connect(cfg.clone(), parted(&curl, &id, 6), &[])
        .await
        .unwrap();
    for h in &hosts {
        w.offer(None, links(h, 3)).await.unwrap();
    }
    drop(w);
    let pattern = format!("crawl:{{{id}*");
    // Partition 3's tag, as recorded (a lagging process writes there below).
    let meta = format!("crawl:{{{id}}}:meta");
    let home = cluster.master_of(&meta).unwrap();
    let tags = cluster
        .node(home)
        .unwrap()
        .command(&["HGET", &meta, "tags"])
        .unwrap();
    let third: u32 = tags.split(',').nth(2).unwrap().parse().unwrap();
    let before = keys_on_masters(&mut cluster, &pattern);
    assert!(before > 6 * 3, "{before} keys");
    assert_eq!(delete_crawl(&curl, "svc", "wide").await.unwrap(), before);
    assert_eq!(keys_on_masters(&mut cluster, &pattern), 0);
    // A process that had not heard of the delete writes into a partition afterwards; the
    // crawl made again under the ID starts without it.
    let stray = format!("{}stats", redis_frontier::partition_prefix(&id, 3, third));
    let master = cluster.master_of(&stray).unwrap();
    cluster
        .node(master)
        .unwrap()
        .command(&["HSET", &stray, "queued", "7"])
        .unwrap();
    assert_eq!(keys_on_masters(&mut cluster, &pattern), 1);
    assert_eq!(
        create_crawl(&curl, "svc", "wide").await.unwrap(),
        Created::Alive(2)
    );
    assert_eq!(keys_on_masters(&mut cluster, &pattern), 0);
}

/// On a cluster a page's links are on a replica before its fence answers (before its record
/// is written), and an offer without a fence before it is acknowledged: with every replica
/// stopped (SIGSTOP) both fail as unavailable — the engine retries — and succeed once the
/// replicas run again. Waited for, a failover cannot lose links whose page is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pages_links_are_on_a_replica_before_its_fence_answers() {
    let Some(mut cluster) = RedisCluster::for_test(3) else {
        return;
    };
    let curl = cluster.url();
    let f = RedisFrontier::connect(common::unpaced(), parted(&curl, "durable", 3), &[])
        .await
        .expect("connect");
    f.offer(None, links("a.test", 1)).await.unwrap();
    let Next::Lease(lease) = f.next().await.unwrap() else {
        panic!("a URL is queued");
    };
    let replicas: Vec<_> = cluster
        .view()
        .unwrap()
        .into_iter()
        .filter(|n| !n.master)
        .map(|n| n.addr)
        .collect();
    assert_eq!(replicas.len(), 3);
    for r in &replicas {
        cluster.node(*r).unwrap().pause().unwrap();
    }
    let page: Vec<Link> = ["a.test", "b.test", "c.test", "d.test"]
        .iter()
        .flat_map(|h| links(h, 3))
        .collect();
    let fenced = f.offer_and_hold(&lease, page.clone()).await;
    let plain = f.offer(None, links("e.test", 2)).await;
    for r in &replicas {
        cluster.node(*r).unwrap().resume().unwrap();
    }
    let e = fenced.unwrap_err();
    assert!(e.is_retryable(), "{e}");
    assert!(plain.unwrap_err().is_retryable());
    // Offered again (as the engine retries): admitted by the first try, now on a replica.
    let (_, held) = f.offer_and_hold(&lease, page).await.unwrap();
    assert_eq!(held, Some(true));
    f.offer(None, links("e.test", 2)).await.unwrap();
    f.complete(lease, Outcome::Done).await.unwrap();
    let stats = f.stats().await.unwrap();
    assert_eq!(stats.extra["wait_skipped"], 0);
    // Each failed offer was sent again before it failed (its `WAIT`s unanswered).
    let retried = stats.extra["wait_retried"];
    assert!(retried >= 2 * 4, "sent again {retried} times");
    assert_eq!(
        stats.admitted,
        1 + 12 - 1 + 2,
        "a.test/0 was the leased page"
    );

    // Replicas slower than one `WAIT` (stopped until the offer was sent again) hold it up,
    // no more: it goes through, its URLs admitted and counted once.
    for r in &replicas {
        cluster.node(*r).unwrap().pause().unwrap();
    }
    let slow = async {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while f.stats().await.unwrap().extra["wait_retried"] == retried
            && std::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for r in &replicas {
            cluster.node(*r).unwrap().resume().unwrap();
        }
    };
    let (answers, ()) = tokio::join!(f.offer(None, links("f.test", 3)), slow);
    let answers = answers.expect("admitted once a replica acknowledged");
    assert!(answers.iter().all(|a| *a == frontier::Admission::Admitted));
    let after = f.stats().await.unwrap();
    assert!(after.extra["wait_retried"] > retried);
    assert_eq!(after.admitted, stats.admitted + 3);
}
