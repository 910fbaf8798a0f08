//! A purge by age on a private Redis (url-frontier's PurgeURLs with `days`): the URLs
//! admitted before the cutoff go, queued or asleep — read from their entries by the scripts —
//! and the rest stay queued in their order.

mod common;

use frontier::{Entry, Frontier, FrontierConfig, Link, Next, Outcome};
use url::Url;

const DAY: u32 = 86_400;

fn cfg() -> FrontierConfig {
    common::unpaced()
}

/// Ages the entry `el` (`prefix` before its bytes) by three days if `old` says so; checks
/// that it was admitted just now.
fn aged(el: &[u8], prefix: usize, old: impl Fn(&Entry) -> bool) -> Option<Vec<u8>> {
    let mut e = Entry::decode_all(&el[prefix..], 1).unwrap().pop().unwrap();
    let now = Entry::now_secs();
    assert!((now - 60..=now).contains(&e.created), "admitted now: {e:?}");
    if !old(&e) {
        return None;
    }
    e.created -= 3 * DAY;
    let mut bytes = el[..prefix].to_vec();
    e.encode(&mut bytes);
    Some(bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purge_by_age_drops_what_was_admitted_before_it() {
    let Some(server) = common::redis(&[]) else {
        return;
    };
    let f = common::open(&server, "purge", cfg()).await;
    let mut links: Vec<Link> = (0..6)
        .map(|i| Link::new(Url::parse(&format!("http://old.test/{i}")).unwrap(), 1))
        .collect();
    let tomorrow = u64::from(Entry::now_secs()) + u64::from(DAY);
    for name in ["asleep-old", "asleep-young"] {
        links.push(Link {
            due: Some(tomorrow),
            ..Link::new(Url::parse(&format!("http://old.test/{name}")).unwrap(), 1)
        });
    }
    f.offer(None, links).await.unwrap();

    // Three days older, as a run three days ago would have written them: the even pages
    // and one asleep URL.
    let mut conn = redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let q = "crawl:{purge}:q:old.test";
    let els: Vec<Vec<u8>> = redis::cmd("LRANGE")
        .arg(q)
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(els.len(), 6);
    let even = |e: &Entry| e.url.ends_with(['0', '2', '4']);
    for (i, el) in els.iter().enumerate() {
        if let Some(bytes) = aged(el, 0, even) {
            let _: () = redis::cmd("LSET")
                .arg(q)
                .arg(i)
                .arg(bytes)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
    }
    let seconds: Vec<String> = redis::cmd("ZRANGE")
        .arg("crawl:{purge}:duez")
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(seconds.len(), 1);
    let due = format!("crawl:{{purge}}:due:{}", seconds[0]);
    let els: Vec<Vec<u8>> = redis::cmd("LRANGE")
        .arg(&due)
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    let prefix = "old.test\n".len();
    for (i, el) in els.iter().enumerate() {
        if let Some(bytes) = aged(el, prefix, |e| e.url.ends_with("-old")) {
            let _: () = redis::cmd("LSET")
                .arg(&due)
                .arg(i)
                .arg(bytes)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
    }

    assert_eq!(
        f.delete_queue("old.test", 4).await.unwrap(),
        0,
        "none so old"
    );
    // An age past the epoch drops nothing (its cutoff is not "every URL").
    assert_eq!(f.delete_queue("old.test", u32::MAX).await.unwrap(), 0);
    assert_eq!(f.delete_queue("old.test", 30_000).await.unwrap(), 0);
    assert_eq!(f.delete_queue("old.test", 2).await.unwrap(), 3 + 1);
    assert_eq!(f.delete_queue("old.test", 2).await.unwrap(), 0, "again");
    let stats = f.stats().await.unwrap();
    assert_eq!(stats.queued, 3, "{stats:?}");

    // The rest, in their order; the young asleep URL still sleeps.
    let mut left = Vec::new();
    for _ in 0..3 {
        let Next::Lease(l) = f.next().await.unwrap() else {
            panic!("ended early")
        };
        left.push(l.entry().url.clone());
        f.complete(l, Outcome::Done).await.unwrap();
    }
    assert_eq!(
        left,
        [
            "http://old.test/1",
            "http://old.test/3",
            "http://old.test/5"
        ]
    );
    let listed = f
        .list_urls(frontier::UrlQuery {
            limit: 10,
            ..frontier::UrlQuery::default()
        })
        .await
        .unwrap();
    let urls: Vec<&str> = listed.urls.iter().map(|u| u.entry.url.as_str()).collect();
    assert_eq!(urls, ["http://old.test/asleep-young"]);
}
