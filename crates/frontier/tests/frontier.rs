//! The frontier's promises, tested from outside: canonical forms, exactly-once service under
//! concurrent producers/consumers with a tiny memory, order across memory and disk,
//! politeness and fairness in virtual time, budgets and termination.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use frontier::{
    Admission, Canonicalizer, FrontierConfig, HostScope, LocalFrontier, Order, OutOfScope, Outcome,
    Politeness, ScopeConfig,
};
use proptest::prelude::*;

mod common;
use common::config;
use tokio::time::Instant;

/// `config(64, BreadthFirst)` with a politeness delay and a per-host limit.
fn polite(delay: Duration, max_per_host: u32) -> FrontierConfig {
    FrontierConfig {
        politeness: Politeness {
            delay,
            max_per_host,
            ..Politeness::default()
        },
        ..config(64, Order::BreadthFirst)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Canonicalising a canonical URL changes nothing.
    #[test]
    fn canonicalisation_is_idempotent(
        scheme in "(?i)https?",
        host in "[a-zA-Z0-9]{1,10}(\\.[a-zA-Z]{2,5}){1,2}",
        port in prop::option::of(prop_oneof![Just(80u16), Just(443u16), 1u16..65535]),
        path in "(/([a-zA-Z0-9._~-]|%[0-9a-fA-F]{2}|\\.\\.|\\.|[ !$&'()*+,;=:@]){0,8}){0,5}",
        query in prop::option::of("([a-z0-9=&%]|%[0-9a-fA-F]{2}){0,20}"),
        fragment in prop::option::of("[a-z0-9]{0,5}"),
    ) {
        let mut url = format!("{scheme}://{host}");
        if let Some(p) = port { url.push_str(&format!(":{p}")); }
        url.push_str(&path);
        if let Some(q) = query { url.push('?'); url.push_str(&q); }
        if let Some(f) = fragment { url.push('#'); url.push_str(&f); }
        let c = Canonicalizer::default();
        if let Ok(once) = c.canonicalize(&url, None) {
            let twice = c.canonicalize(once.as_str(), None).unwrap();
            prop_assert_eq!(once.as_str(), twice.as_str());
            prop_assert!(once.fragment().is_none());
        }
    }
}

/// A synthetic web: page `i` of `distinct` links to 5 pages; offers are ~5× the URLs.
fn links_of(i: u64, distinct: u64) -> Vec<String> {
    (0..5u64)
        .map(|k| {
            let j = match k {
                0 => (i + 1) % distinct,
                _ => (i.wrapping_mul(2_654_435_761).wrapping_add(k * 40_503)) % distinct,
            };
            format!("http://h{}.test/p/{j}", j % 37)
        })
        .collect()
}

fn page_of(url: &str) -> u64 {
    url.rsplit('/').next().unwrap().parse().unwrap()
}

/// 8 tasks, each a consumer and a producer, over a tiny in-memory queue.
async fn run_crawl(distinct: u64, capacity: usize, tasks: usize, order: Order) {
    let f = Arc::new(LocalFrontier::new(config(capacity, order), &[]).unwrap());
    assert_eq!(f.offer("http://h0.test/p/0", 0, None), Admission::Admitted);
    let served: Arc<Mutex<HashMap<u64, u32>>> = Arc::default();
    let offers = Arc::new(std::sync::atomic::AtomicU64::new(1));
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let (f, served, offers) = (Arc::clone(&f), Arc::clone(&served), Arc::clone(&offers));
        handles.push(tokio::spawn(async move {
            while let Some(lease) = f.next().await {
                let i = page_of(&lease.entry().url);
                *served.lock().unwrap().entry(i).or_default() += 1;
                for link in links_of(i, distinct) {
                    f.offer(&link, lease.entry().depth + 1, Some(&lease.entry().url));
                    offers.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                tokio::task::yield_now().await;
                f.complete(lease, Outcome::Done);
            }
        }));
    }
    for h in handles {
        tokio::time::timeout(Duration::from_secs(60), h)
            .await
            .expect("the crawl terminates")
            .unwrap();
    }
    let served = served.lock().unwrap();
    let stats = f.stats();
    // Every page is reachable through the `i + 1` link; each was served exactly once.
    assert_eq!(served.len() as u64, distinct, "none lost");
    assert!(served.values().all(|&n| n == 1), "none served twice");
    assert_eq!(stats.admitted, distinct);
    assert_eq!(
        stats.offered,
        offers.load(std::sync::atomic::Ordering::Relaxed)
    );
    assert_eq!(stats.duplicates + stats.admitted, stats.offered);
    assert!(
        stats.extra("max_queued_memory") <= capacity as u64,
        "{stats:?}"
    );
    assert_eq!(stats.queued, 0);
    assert_eq!(stats.in_flight, 0);
    assert!(f.is_finished());
}

/// The case proptest found: concurrent offers of one new URL were both admitted (the filter,
/// like Guava's, may say "new" to both); admission is now serialised per URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_offers_of_one_url_admit_it_once() {
    for _ in 0..20 {
        run_crawl(496, 55, 7, Order::DepthFirst).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_workers_capacity_16_hundred_thousand_offers() {
    run_crawl(20_000, 16, 8, Order::BreadthFirst).await;
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn exactly_once_for_any_capacity_and_worker_count(
        distinct in 50u64..3000,
        capacity in 2usize..64,
        tasks in 1usize..9,
        dfs in any::<bool>(),
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let order = if dfs { Order::DepthFirst } else { Order::BreadthFirst };
        rt.block_on(run_crawl(distinct, capacity, tasks, order));
    }
}

/// Drains a frontier without politeness, returning URLs in service order.
async fn drain(f: &LocalFrontier) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(lease) = f.next().await {
        out.push(lease.entry().url.clone());
        f.complete(lease, Outcome::Done);
    }
    out
}

#[tokio::test]
async fn per_host_order_survives_the_spill() {
    for order in [Order::BreadthFirst, Order::DepthFirst] {
        let f = LocalFrontier::new(config(4, order), &[]).unwrap();
        for i in 0..1000 {
            assert_eq!(
                f.offer(&format!("http://big.test/{i}"), 1, None),
                Admission::Admitted
            );
            if i % 100 == 0 {
                f.offer(&format!("http://small{i}.test/"), 1, None);
            }
        }
        let stats = f.stats();
        assert!(stats.extra("queued_disk") > 900, "{stats:?}");
        assert!(stats.extra("queued_memory") <= 4);
        let served = drain(&f).await;
        let big: Vec<u64> = served
            .iter()
            .filter(|u| u.starts_with("http://big.test/"))
            .map(|u| page_of(u))
            .collect();
        let mut expected: Vec<u64> = (0..1000).collect();
        if order == Order::DepthFirst {
            expected.reverse();
        }
        assert_eq!(big, expected, "{order:?}");
        assert_eq!(served.len(), 1010);
        assert!(f.stats().extra("max_queued_memory") <= 4);
        assert_eq!(f.stats().extra("spill_bytes"), 0, "spill files emptied");
    }
}

/// Every URL carries the time it was admitted — through the spill, and when an operator
/// queues a finished URL again — and a purge by an age past the epoch drops none of them.
#[tokio::test]
async fn urls_keep_their_admission_time() {
    let f = LocalFrontier::new(config(4, Order::BreadthFirst), &[]).unwrap();
    let before = frontier::Entry::now_secs();
    for i in 0..50 {
        f.offer(&format!("http://t.test/{i}"), 1, None);
    }
    assert!(f.stats().extra("queued_disk") > 0);
    assert_eq!(
        f.delete_queue("t.test", u32::MAX),
        0,
        "older than the epoch"
    );
    assert_eq!(f.delete_queue("t.test", 1), 0, "younger than a day");
    let mut finished = Vec::new();
    while let Some(l) = f.next().await {
        let created = l.entry().created;
        assert!(
            (before..=frontier::Entry::now_secs()).contains(&created),
            "{created}"
        );
        finished.push(l.entry().url.clone());
        f.complete(l, Outcome::Done);
    }
    assert_eq!(finished.len(), 50);
    let again = frontier::Link::new(url::Url::parse("http://t.test/7").unwrap(), 2);
    assert_eq!(f.requeue_links(vec![again]), [true]);
    let l = f.next().await.expect("requeued");
    assert!(l.entry().created >= before, "{:?}", l.entry());
}

#[tokio::test(start_paused = true)]
async fn politeness_and_fairness_in_virtual_time() {
    let cfg = polite(Duration::from_secs(1), 1);
    let f = Arc::new(LocalFrontier::new(cfg, &[]).unwrap());
    for i in 0..300 {
        f.offer(&format!("http://giant.test/{i}"), 1, None);
    }
    for h in 0..10 {
        for i in 0..5 {
            f.offer(&format!("http://small{h}.test/{i}"), 1, None);
        }
    }
    let start = Instant::now();
    let log: Arc<Mutex<Vec<(String, Duration, Duration)>>> = Arc::default();
    let in_flight: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let (f, log, in_flight) = (Arc::clone(&f), Arc::clone(&log), Arc::clone(&in_flight));
        tasks.push(tokio::spawn(async move {
            while let Some(lease) = f.next().await {
                let host = lease.host().to_string();
                {
                    let mut m = in_flight.lock().unwrap();
                    let n = m.entry(host.clone()).or_default();
                    *n += 1;
                    assert!(*n <= 1, "two fetches in flight on {host}");
                }
                let began = start.elapsed();
                tokio::time::sleep(Duration::from_millis(300)).await; // the "fetch"
                *in_flight.lock().unwrap().get_mut(&host).unwrap() -= 1;
                log.lock().unwrap().push((host, began, start.elapsed()));
                f.complete(lease, Outcome::Done);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 350);
    let mut by_host: HashMap<&str, Vec<Duration>> = HashMap::new();
    for (h, began, _) in log.iter() {
        by_host.entry(h.as_str()).or_default().push(*began);
    }
    for (host, mut starts) in by_host.clone() {
        starts.sort();
        for w in starts.windows(2) {
            assert!(
                w[1] - w[0] >= Duration::from_secs(1),
                "{host}: gap {:?}",
                w[1] - w[0]
            );
        }
    }
    // The giant host does not starve the small ones: each small host is done after its
    // own 5 URLs at 1 s spacing, long before the giant one.
    for h in 0..10 {
        let last = *by_host[format!("small{h}.test").as_str()]
            .iter()
            .max()
            .unwrap();
        assert!(
            last < Duration::from_secs(6),
            "small{h} finished at {last:?}"
        );
    }
    let giant_last = *by_host["giant.test"].iter().max().unwrap();
    assert!(giant_last >= Duration::from_secs(299));
}

#[tokio::test(start_paused = true)]
async fn retry_after_crawl_delay_and_retries() {
    let cfg = FrontierConfig {
        politeness: Politeness {
            delay: Duration::from_millis(100),
            max_per_host: 1,
            backoff_base: Duration::from_secs(2),
            max_backoff: Duration::from_secs(60),
            ..Politeness::default()
        },
        ..config(64, Order::BreadthFirst)
    };
    let f = LocalFrontier::new(cfg, &[]).unwrap();
    for i in 0..3 {
        f.offer(&format!("http://a.test/{i}"), 0, None);
    }
    let t0 = Instant::now();
    let first = f.next().await.unwrap();
    assert_eq!(first.entry().url, "http://a.test/0");
    // 503 with Retry-After: 10 s → the same URL again, not before 10 s.
    f.complete(
        first,
        Outcome::Retry {
            after: Some(Duration::from_secs(10)),
        },
    );
    let again = f.next().await.unwrap();
    assert_eq!(again.entry().url, "http://a.test/0");
    assert_eq!(again.entry().attempt, 1);
    assert!(t0.elapsed() >= Duration::from_secs(10));
    // Success clears the back-off; a robots Crawl-delay of 5 s now spaces the fetches.
    f.set_crawl_delay("a.test", Duration::from_secs(5));
    f.complete(again, Outcome::Done);
    let t1 = Instant::now();
    let second = f.next().await.unwrap();
    assert_eq!(second.entry().url, "http://a.test/1");
    f.complete(second, Outcome::HostError { retry_after: None });
    let third = f.next().await.unwrap();
    assert!(t1.elapsed() >= Duration::from_secs(5), "{:?}", t1.elapsed());
    f.complete(third, Outcome::Done);
    assert!(f.next().await.is_none(), "finished");
}

#[tokio::test(start_paused = true)]
async fn a_fetch_that_starts_late_pushes_the_next_one_back() {
    // A lease whose fetch first waits 3 s for the host's robots.txt: the next fetch of that
    // host waits the delay from the page request (3 s + 1 s), not from the lease (1 s).
    let cfg = polite(Duration::from_secs(1), 2);
    let f = LocalFrontier::new(cfg, &[]).unwrap();
    for i in 0..3 {
        f.offer(&format!("http://a.test/{i}"), 0, None);
    }
    let t0 = Instant::now();
    let first = f.next().await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    f.host_contacted("a.test");
    let second = f.next().await.unwrap();
    assert_eq!(t0.elapsed(), Duration::from_secs(4));
    f.complete(first, Outcome::Done);
    // Without a late start the delay runs from the lease.
    let third = f.next().await.unwrap();
    assert_eq!(t0.elapsed(), Duration::from_secs(5));
    for lease in [second, third] {
        f.complete(lease, Outcome::Done);
    }
    assert!(f.next().await.is_none(), "finished");
}

#[tokio::test]
async fn budgets_scope_and_redirect_hops() {
    let cfg = FrontierConfig {
        scope: ScopeConfig {
            hosts: HostScope::SameDomain,
            max_depth: Some(2),
            ..ScopeConfig::default()
        },
        max_pages_per_host: Some(3),
        max_redirects: 2,
        ..config(16, Order::BreadthFirst)
    };
    let f = LocalFrontier::new(cfg, &["http://www.example.com/"]).unwrap();
    assert_eq!(
        f.offer("http://www.example.com/", 0, None),
        Admission::Admitted
    );
    assert_eq!(
        f.offer("http://WWW.example.com:80/#top", 0, None),
        Admission::Duplicate
    );
    assert_eq!(
        f.offer("http://other.org/", 1, None),
        Admission::OutOfScope(OutOfScope::Host)
    );
    assert_eq!(
        f.offer("mailto:x@example.com", 1, None),
        Admission::OutOfScope(OutOfScope::Invalid)
    );
    assert_eq!(
        f.offer("http://www.example.com/deep", 3, None),
        Admission::OutOfScope(OutOfScope::Depth)
    );
    assert_eq!(
        f.offer_hops("http://www.example.com/r", 1, None, 3),
        Admission::OutOfScope(OutOfScope::Redirects)
    );
    assert_eq!(
        f.offer("http://www.example.com/a", 1, None),
        Admission::Admitted
    );
    assert_eq!(
        f.offer("http://www.example.com/b", 1, None),
        Admission::Admitted
    );
    assert_eq!(
        f.offer("http://www.example.com/c", 1, None),
        Admission::OutOfScope(OutOfScope::HostBudget)
    );
    assert_eq!(
        f.offer("http://shop.example.com/a", 1, None),
        Admission::Admitted
    );
    assert_eq!(
        f.offer("http://shop.example.com/b", 1, None),
        Admission::Admitted
    );
    assert_eq!(
        f.offer("http://shop.example.com/c", 1, None),
        Admission::Admitted
    );
    let stats = f.stats();
    assert_eq!(stats.admitted, 6);
    assert_eq!(stats.duplicates, 1);
    assert_eq!(stats.offered, 12);
    assert_eq!(drain(&f).await.len(), 6);
}

#[tokio::test]
async fn close_ends_waiting_consumers() {
    let f = Arc::new(LocalFrontier::new(config(16, Order::BreadthFirst), &[]).unwrap());
    f.offer("http://a.test/", 0, None);
    let lease = f.next().await.unwrap();
    // One fetch in flight, nothing queued: a second consumer waits...
    let waiter = {
        let f = Arc::clone(&f);
        tokio::spawn(async move { f.next().await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiter.is_finished());
    // ...until the in-flight fetch completes without producing anything.
    f.complete(lease, Outcome::Done);
    assert!(tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .unwrap()
        .unwrap()
        .is_none());
    f.offer("http://a.test/more", 0, None);
    f.close();
    assert!(f.next().await.is_none(), "closed");
}

#[tokio::test]
async fn a_hosts_last_queued_url_is_marked_on_its_lease() {
    // Capacity 4: most of big.test waits on disk, which counts as queued.
    let f = LocalFrontier::new(config(4, Order::BreadthFirst), &[]).unwrap();
    for i in 0..20 {
        f.offer(&format!("http://big.test/{i}"), 1, None);
    }
    f.offer("http://small.test/", 1, None);
    let mut last = HashMap::new();
    while let Some(lease) = f.next().await {
        let url = lease.entry().url.clone();
        last.insert(url, lease.last_of_host());
        f.complete(lease, Outcome::Done);
    }
    assert_eq!(last.len(), 21);
    let marked: Vec<&String> = last.iter().filter(|(_, l)| **l).map(|(u, _)| u).collect();
    assert_eq!(marked.len(), 2, "{marked:?}");
    assert!(last["http://small.test/"]);
    assert!(
        last["http://big.test/19"],
        "breadth-first: the last offered is the last served"
    );
}
