//! What a recrawl schedule costs in Redis, kept as the frontier keeps it: `--urls N` URLs on
//! 1,000 hosts are admitted (a one-shot crawl's state: the visited bitmap and the host
//! queues), then each is leased and completed under a fixed daily schedule with the history
//! of a typical fetch (a 200 with nginx's ETag, a Last-Modified, a digest), so that it sleeps
//! in its second's `due:S` list, with its field in the `dueat` index. Prints the server's
//! `used_memory` per URL at both points, the mean element, and completions per second.
//!
//! `cargo bench -p redis-frontier --bench schedule -- [--urls N] [--tasks T]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use frontier::DEFAULT_MAX_PER_HOST;
use frontier::{Frontier, Link, Outcome};
use recrawl::{Policy, Schedule};
use redis_frontier::RedisFrontier;
use test_support::redis_server::RedisServer;

mod common;
use common::{arg, bench_config, settings};
#[path = "../../frontier/benches/common/mod.rs"]
mod history;
use history::fetched;

/// URL `i`, on one of 1,000 hosts (about 60 bytes, as a documentation site's are).
fn url(i: u64) -> String {
    format!(
        "http://h{}.example/section/{}/page-{i}.html",
        i % 1000,
        i % 97
    )
}

async fn used_memory(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(conn)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Leases and completes URLs from `tasks` tasks until none is ready; how many.
async fn complete_all(f: &Arc<RedisFrontier>, tasks: u64) -> u64 {
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let f = Arc::clone(f);
        handles.push(tokio::spawn(async move {
            let mut done = 0u64;
            while let Some(mut lease) = f.try_next().await.unwrap() {
                let i = lease.entry().id;
                lease.set_visited(fetched(i));
                f.complete(lease, Outcome::Done).await.unwrap();
                done += 1;
            }
            done
        }));
    }
    let mut completed = 0;
    for h in handles {
        completed += h.await.unwrap();
    }
    completed
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (urls, tasks) = (arg("--urls", 1_000_000), arg("--tasks", 16));
    let server =
        RedisServer::start(&[]).expect("a private redis-server (apt-get install redis-server)");
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let mut cfg = bench_config(urls);
    cfg.politeness.max_per_host = DEFAULT_MAX_PER_HOST.max(4);
    cfg.recrawl = Policy {
        schedule: Schedule::Fixed,
        interval_secs: 86_400,
        ..Policy::default()
    };
    let settings = settings(server.url(), Duration::from_secs(60));
    let empty = used_memory(&mut conn).await;
    let f = Arc::new(RedisFrontier::connect(cfg, settings, &[]).await.unwrap());
    for first in (0..urls).step_by(1000) {
        let links = (first..(first + 1000).min(urls))
            .map(|i| Link::new(url::Url::parse(&url(i)).unwrap(), 1))
            .collect();
        f.offer(Some("http://h0.example/"), links).await.unwrap();
    }
    let queued = used_memory(&mut conn).await;

    let start = Instant::now();
    let mut completed = 0;
    // Until every URL is asleep: a task stops when no host has room at that moment.
    while f.stats().await.unwrap().queued > 0 {
        completed += complete_all(&f, tasks).await;
    }
    let secs = start.elapsed().as_secs_f64();
    let scheduled = used_memory(&mut conn).await;
    let stats = f.stats().await.unwrap();

    // The mean element of the due lists (HOST\nENTRY, the entry with its visit).
    let seconds: Vec<String> = redis::cmd("ZRANGE")
        .arg("crawl:{bench}:duez")
        .arg(0)
        .arg(99)
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut sample = Vec::new();
    for s in &seconds {
        let els: Vec<Vec<u8>> = redis::cmd("LRANGE")
            .arg(format!("crawl:{{bench}}:due:{s}"))
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .unwrap();
        sample.extend(els.into_iter().map(|e| e.len()));
    }
    let per = |b: u64| b.saturating_sub(empty) as f64 / urls as f64;
    println!(
        "{urls} URLs on 1,000 hosts, {completed} completed by {tasks} tasks in {secs:.1} s \
         ({:.0}/s); {} scheduled",
        completed as f64 / secs,
        stats.extra("scheduled"),
    );
    println!(
        "used_memory per URL: {:.1} B queued (one-shot: bitmap and host queues), {:.1} B \
         scheduled (bitmap, due lists, dueat index); the mean due element {:.1} B (of {})",
        per(queued),
        per(scheduled),
        sample.iter().sum::<usize>() as f64 / sample.len().max(1) as f64,
        sample.len(),
    );
}
