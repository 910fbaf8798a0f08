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
