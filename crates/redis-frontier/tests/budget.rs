//! A crawl-wide page budget over partitions, on a private Redis: two processes on a crawl of
//! 4 partitions share `max_pages` exactly — a share one partition holds unused (a skip gave
//! it back) goes to another partition's URL, and the budget spent ends both.

mod common;

use std::time::Duration;

use frontier::{End, Frontier, FrontierConfig, Link, Next, Outcome};
use redis_frontier::{partition_of, RedisConfig, RedisFrontier};
use url::Url;

use common::redis;

fn links(urls: &[String]) -> Vec<Link> {
    urls.iter()
        .map(|u| Link::new(Url::parse(u).unwrap(), 1))
        .collect()
}

async fn process(server: &test_support::redis_server::RedisServer, who: &str) -> RedisFrontier {
    let cfg = FrontierConfig {
        max_pages: Some(2),
        ..common::unpaced()
    };
    let settings = RedisConfig {
        holder: Some(who.into()),
        partitions: 4,
        ..common::settings(server, "budget", Duration::from_secs(5))
    };
    RedisFrontier::connect(cfg, settings, &[]).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_share_held_unused_in_one_partition_goes_to_another() {
    let Some(server) = redis(&[]) else { return };
    // Two hosts in different partitions.
    let one = "one.test";
    let other = (0..)
        .map(|i| format!("h{i}.test"))
        .find(|h| partition_of(h, 4) != partition_of(one, 4))
        .unwrap();
    let a = process(&server, "a").await;
    let b = process(&server, "b").await;
    let mut urls = vec![format!("http://{one}/1")];
    urls.extend((1..=3).map(|i| format!("http://{other}/{i}")));
    a.offer(None, links(&urls)).await.unwrap();

    let first = a.try_next_from(one).await.unwrap().expect("one's URL");
    let second = b.try_next_from(&other).await.unwrap().expect("other's URL");
    // Two leases out: the budget of 2 is spent for now, in every partition and process.
    assert!(a.try_next_from(&other).await.unwrap().is_none());
    assert!(b.try_next_from(&other).await.unwrap().is_none());
    // A skip gives `one`'s page back; `other`'s partition takes it.
    a.complete(first, Outcome::Skipped).await.unwrap();
    let third = b
        .try_next_from(&other)
        .await
        .unwrap()
        .expect("the page given back");
    assert!(a.try_next_from(&other).await.unwrap().is_none());
    b.complete(second, Outcome::Done).await.unwrap();
    b.complete(third, Outcome::Done).await.unwrap();
    // Spent: both processes end on the budget, one URL left queued.
    for f in [&a, &b] {
        let end = tokio::time::timeout(Duration::from_secs(30), f.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(end, Next::End(End::Budget));
    }
    let s = a.stats().await.unwrap();
    assert_eq!((s.pages, s.queued, s.in_flight), (2, 1, 0));
}

/// Partition 0's record of the shares lost (its master failed over and the replica had not
/// the last grants): the next grant takes the partitions' own totals back first, so the
/// budget is not granted twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shares_lost_at_partition_0_are_not_granted_again() {
    let Some(server) = redis(&[]) else { return };
    let hosts: Vec<String> = {
        let mut seen = Vec::new();
        let mut hosts = Vec::new();
        for h in (0..).map(|i| format!("s{i}.test")) {
            let p = partition_of(&h, 4);
            if !seen.contains(&p) {
                seen.push(p);
                hosts.push(h);
            }
            if hosts.len() == 3 {
                break;
            }
        }
        hosts
    };
    let a = process(&server, "a").await;
    let urls: Vec<String> = hosts.iter().map(|h| format!("http://{h}/1")).collect();
    a.offer(None, links(&urls)).await.unwrap();
    let first = a.try_next_from(&hosts[0]).await.unwrap().expect("a share");
    let second = a.try_next_from(&hosts[1]).await.unwrap().expect("a share");
    server
        .command(&["DEL", "crawl:{budget}:budget"])
        .expect("the record dropped");
    assert!(
        a.try_next_from(&hosts[2]).await.unwrap().is_none(),
        "a third page within a budget of 2"
    );
    a.complete(first, Outcome::Done).await.unwrap();
    a.complete(second, Outcome::Done).await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(30), a.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(end, Next::End(End::Budget));
}
