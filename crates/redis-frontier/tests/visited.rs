//! The shared visited set against a real, private Redis: a page's links are admitted
//! atomically — several processes offering the same URLs admit each exactly once — and the
//! bitmap holds exactly the bits a local Guava-layout filter of the same shape sets.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use bloom::{BloomFilter, StringFunnel};
use frontier::{Admission, Frontier, FrontierConfig, Link};
use test_support::contract::base_config;
use url::Url;

fn url(i: u64) -> String {
    format!("http://h{}.test/p/{i}", i % 30)
}

fn links(ids: &[u64]) -> Vec<Link> {
    ids.iter()
        .map(|&i| Link::new(Url::parse(&url(i)).unwrap(), 1))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_processes_admit_each_url_once() {
    let Some(server) = common::redis(&[]) else {
        return;
    };
    const URLS: u64 = 3000;
    let mut tasks = Vec::new();
    for t in 0..4u64 {
        // Each "process" has its own connection and offers every URL, in its own order, a
        // page of 100 at a time.
        let f = Arc::new(common::open(&server, "once", base_config()).await);
        tasks.push(tokio::spawn(async move {
            let mut order: Vec<u64> = (0..URLS).collect();
            order.rotate_left((t * 777) as usize);
            if t % 2 == 1 {
                order.reverse();
            }
            let mut mine = Vec::new();
            for page in order.chunks(100) {
                let got = f.offer(Some("http://h0.test/"), links(page)).await.unwrap();
                mine.extend(
                    page.iter()
                        .zip(got)
                        .filter(|(_, a)| *a == Admission::Admitted)
                        .map(|(&i, _)| i),
                );
            }
            mine
        }));
    }
    let mut admitted: HashMap<u64, u32> = HashMap::new();
    for t in tasks {
        for i in t.await.unwrap() {
            *admitted.entry(i).or_default() += 1;
        }
    }
    // A Bloom filter may call a new URL seen (1% at the design load), never admit one twice.
    assert!(admitted.values().all(|&n| n == 1), "admitted twice");
    assert!(
        admitted.len() as u64 > URLS * 97 / 100,
        "{}",
        admitted.len()
    );
    let f = common::open(&server, "once", base_config()).await;
    let stats = f.stats().await.unwrap();
    assert_eq!(stats.admitted, admitted.len() as u64);
    assert_eq!(
        stats.queued,
        admitted.len() as u64,
        "each admitted URL queued once"
    );
    assert_eq!(stats.offered, 4 * URLS);
    assert_eq!(stats.hosts, 30);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bitmap_is_the_local_filters_bits() {
    let Some(server) = common::redis(&[]) else {
        return;
    };
    let (expected, fpp) = (5_000, 0.01);
    let cfg = FrontierConfig {
        expected_urls: expected,
        fpp,
        ..base_config()
    };
    let f = common::open(&server, "bits", cfg).await;
    let visited = f.visited().clone();
    let local: BloomFilter<str, StringFunnel> =
        BloomFilter::new(StringFunnel, expected, fpp).unwrap();
    assert_eq!(visited.bit_size(), local.bit_size());
    assert_eq!(visited.hashes(), local.num_hash_functions());
    let ids: Vec<u64> = (0..2000).collect();
    for page in ids.chunks(250) {
        f.offer(None, links(page)).await.unwrap();
    }
    for &i in &ids {
        local.put(url(i).as_str());
    }
    // Guava's writeTo: strategy, k, word count (BE), then the 64-bit words (BE), bit i being
    // bit i % 64 of word i / 64; Redis' bit i is bit 7 - i % 8 of byte i / 8.
    let guava = local.to_bytes();
    let words: Vec<u64> = guava[6..]
        .chunks(8)
        .map(|w| u64::from_be_bytes(w.try_into().unwrap()))
        .collect();
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let bitmap: Vec<u8> = redis::cmd("GET")
        .arg(visited.bits_key())
        .query_async(&mut conn)
        .await
        .unwrap();
    let redis_bit = |i: u64| {
        bitmap
            .get((i / 8) as usize)
            .is_some_and(|b| b & (0x80 >> (i % 8)) != 0)
    };
    let local_bit = |i: u64| words[(i / 64) as usize] & (1 << (i % 64)) != 0;
    let differ = (0..visited.bit_size())
        .filter(|&i| redis_bit(i) != local_bit(i))
        .count();
    assert_eq!(differ, 0);
    assert!(local.bit_count() > 10_000, "{}", local.bit_count());
}

/// A process whose settings size another filter than the crawl's is refused: it would test
/// other bits and admit URLs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_with_another_filter_shape_is_refused() {
    let Some(server) = common::redis(&[]) else {
        return;
    };
    let sized = |expected_urls| FrontierConfig {
        expected_urls,
        ..base_config()
    };
    common::open(&server, "shape", sized(5_000)).await;
    let settings = common::settings(&server, "shape", std::time::Duration::from_secs(5));
    let err = redis_frontier::RedisFrontier::connect(sized(50_000), settings, &[])
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            redis_frontier::RedisFrontierError::ShapeMismatch { .. }
        ),
        "{err}"
    );
}

/// A process of an older build than the crawl's entries (their format recorded with the
/// shape) is refused before it drops any as undecodable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_older_than_the_crawls_entries_is_refused() {
    let Some(server) = common::redis(&[]) else {
        return;
    };
    common::open(&server, "format", base_config()).await;
    let mut conn = redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let format: u64 = redis::cmd("HGET")
        .arg("crawl:{format}:meta")
        .arg("entry_format")
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg("crawl:{format}:meta")
        .arg("entry_format")
        .arg(format + 2)
        .query_async(&mut conn)
        .await
        .unwrap();
    let settings = common::settings(&server, "format", std::time::Duration::from_secs(5));
    let err = redis_frontier::RedisFrontier::connect(base_config(), settings, &[])
        .await
        .unwrap_err();
    // This build reads one format more than it writes for one partition: a crawl of
    // several records it, so a build from before partitions is refused there.
    assert!(
        matches!(err, redis_frontier::RedisFrontierError::NewerEntries { stored, ours }
            if stored == format + 2 && ours == format + 1),
        "{err}"
    );
    let parted = redis_frontier::RedisConfig {
        partitions: 4,
        ..common::settings(&server, "format4", std::time::Duration::from_secs(5))
    };
    redis_frontier::RedisFrontier::connect(base_config(), parted, &[])
        .await
        .unwrap();
    let recorded: u64 = redis::cmd("HGET")
        .arg("crawl:{format4}:meta")
        .arg("entry_format")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(recorded, format + 1);
    assert!(err.to_string().contains("newer crawler"), "{err}");
}

/// `dedup = "exact"`: a filter far too small calls most new URLs seen; the exact set of
/// fingerprints in Redis confirms each "maybe seen", so every new URL is admitted once and a
/// URL offered again is still a duplicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_dedup_admits_what_a_full_filter_calls_seen() {
    let Some(server) = common::redis(&[]) else {
        return;
    };
    let tiny = |dedup| FrontierConfig {
        expected_urls: 50,
        dedup,
        ..base_config()
    };
    let ids: Vec<u64> = (0..2000).collect();
    let mut admitted = HashMap::new();
    for (crawl, dedup) in [
        ("tiny-bloom", frontier::Dedup::Bloom),
        ("tiny-exact", frontier::Dedup::Exact),
    ] {
        let f = common::open(&server, crawl, tiny(dedup)).await;
        let mut n = 0;
        for page in ids.chunks(100) {
            let got = f.offer(None, links(page)).await.unwrap();
            n += got.iter().filter(|a| **a == Admission::Admitted).count();
        }
        let again = f.offer(None, links(&ids[..100])).await.unwrap();
        assert!(again.iter().all(|a| *a == Admission::Duplicate));
        admitted.insert(crawl, n);
    }
    assert_eq!(admitted["tiny-exact"], 2000, "{admitted:?}");
    assert!(admitted["tiny-bloom"] < 1000, "{admitted:?}");
}

/// A crawl of several partitions needs room for every partition's bitmap at once (together
/// half as large again as one): refused where one bitmap would fit but all of them not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_partitions_bitmap_must_fit() {
    let Some(server) = common::redis(&["--maxmemory-policy", "noeviction"]) else {
        return;
    };
    let info = server.command(&["INFO", "memory"]).unwrap();
    let used: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // 2 × 10^6 URLs at 1%: one bitmap of 2.4 MB, or six of 0.6 MB (3.6 MB together).
    let limit = (used + 3_200_000).to_string();
    server
        .command(&["CONFIG", "SET", "maxmemory", &limit])
        .unwrap();
    let sized = FrontierConfig {
        expected_urls: 2_000_000,
        ..base_config()
    };
    let parted = redis_frontier::RedisConfig {
        partitions: 6,
        ..common::settings(&server, "six", std::time::Duration::from_secs(5))
    };
    let err = redis_frontier::RedisFrontier::connect(sized.clone(), parted, &[])
        .await
        .unwrap_err();
    assert!(
        matches!(err, redis_frontier::RedisFrontierError::Full(_)),
        "{err}"
    );
    common::open(&server, "one", sized).await;
}
