//! The shared visited set against a real, private Redis: a page's links are admitted
//! atomically — several processes offering the same URLs admit each exactly once — and the
//! bitmap holds exactly the bits a local Guava-layout filter of the same shape sets.

use std::collections::HashMap;

use bloom::{BloomFilter, StringFunnel};
use redis::aio::ConnectionManager;
use redis_frontier::server::RedisServer;
use redis_frontier::{Admit, Visited};

/// A private Redis, or `None` (with a note) where `redis-server` is missing and the test
/// script did not require it.
fn redis() -> Option<RedisServer> {
    match RedisServer::start(&[]) {
        Ok(s) => Some(s),
        Err(e) if std::env::var_os("REQUIRE_REDIS_TESTS").is_none() => {
            eprintln!("skipped: no private redis-server ({e}); scripts/test.sh installs it");
            None
        }
        Err(e) => panic!("redis-server required: {e}"),
    }
}

async fn connect(server: &RedisServer) -> ConnectionManager {
    let client = redis::Client::open(server.url()).unwrap();
    ConnectionManager::new(client).await.unwrap()
}

fn url(i: u64) -> Admit {
    let host = format!("h{}.test", i % 30);
    Admit {
        url: format!("http://{host}/p/{i}"),
        host,
        entry: i.to_le_bytes().to_vec(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_processes_admit_each_url_once() {
    let Some(server) = redis() else { return };
    const URLS: u64 = 3000;
    let visited = Visited::new("once", 100_000, 0.01).unwrap();
    let mut tasks = Vec::new();
    for t in 0..4u64 {
        let visited = visited.clone();
        let mut conn = connect(&server).await;
        tasks.push(tokio::spawn(async move {
            // Each "process" offers every URL, in its own order, a page of 100 at a time.
            let mut order: Vec<u64> = (0..URLS).collect();
            order.rotate_left((t * 777) as usize);
            if t % 2 == 1 {
                order.reverse();
            }
            let mut mine = Vec::new();
            for page in order.chunks(100) {
                let links: Vec<Admit> = page.iter().map(|&i| url(i)).collect();
                let new = visited.admit(&mut conn, &links, 1).await.unwrap();
                mine.extend(page.iter().zip(new).filter(|(_, n)| *n).map(|(&i, _)| i));
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
    // A Bloom filter may call a new URL seen (1% here), never admit one twice.
    assert!(admitted.values().all(|&n| n == 1), "admitted twice");
    assert!(
        admitted.len() as u64 > URLS * 97 / 100,
        "{}",
        admitted.len()
    );
    let mut conn = connect(&server).await;
    let mut queued = 0u64;
    for h in 0..30 {
        let len: u64 = redis::cmd("LLEN")
            .arg(visited.queue_key(&format!("h{h}.test")))
            .query_async(&mut conn)
            .await
            .unwrap();
        queued += len;
    }
    assert_eq!(
        queued,
        admitted.len() as u64,
        "every admitted URL queued once"
    );
    let hosts: u64 = redis::cmd("ZCARD")
        .arg(visited.ready_key())
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(hosts, 30);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bitmap_is_the_local_filters_bits() {
    let Some(server) = redis() else { return };
    let (expected, fpp) = (5_000, 0.01);
    let visited = Visited::new("bits", expected, fpp).unwrap();
    let local: BloomFilter<str, StringFunnel> =
        BloomFilter::new(StringFunnel, expected, fpp).unwrap();
    assert_eq!(visited.bit_size(), local.bit_size());
    assert_eq!(visited.hashes(), local.num_hash_functions());
    let mut conn = connect(&server).await;
    let links: Vec<Admit> = (0..2000).map(url).collect();
    for page in links.chunks(250) {
        visited.admit(&mut conn, page, 1).await.unwrap();
    }
    for l in &links {
        local.put(l.url.as_str());
    }
    // Guava's writeTo: strategy, k, word count (BE), then the 64-bit words (BE), bit i being
    // bit i % 64 of word i / 64; Redis' bit i is bit 7 - i % 8 of byte i / 8.
    let guava = local.to_bytes();
    let words: Vec<u64> = guava[6..]
        .chunks(8)
        .map(|w| u64::from_be_bytes(w.try_into().unwrap()))
        .collect();
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
