//! What the shared frontier costs in Redis: admission rate from one process, and memory per
//! visited URL against scrapy-redis' duplicate filter (a SET of SHA1 hex fingerprints) in the
//! same Redis.
//!
//! `cargo bench -p redis-frontier --bench admit -- [--urls N] [--page N] [--tasks N] [--same-host 1] [--cluster 1 | --masters M] [--partitions P]`
//!
//! `--cluster 1`: the same on a private Redis Cluster of 3 masters with a replica each
//! (`redis+cluster://`; every admission then waits for a replica, see the frontier's
//! `durable.rs`). `--masters M`: a cluster of M masters without replicas (each master's CPU
//! time is the figure: this machine's 2 cores cap the total). `--partitions P`: the crawl
//! split into P partitions (`frontier.partitions`), spread over the masters.
//!
//! One process (this one) offers `--urls` new URLs on 1,000 hosts in pages of `--page` links
//! from `--tasks` concurrent tasks (workers offering their pages at once), then offers them
//! all again (every one a duplicate its near cache knows), then offers them from a second
//! connection, as another process of the crawl would (duplicates only Redis knows). Memory: `MEMORY USAGE` of the visited bitmap, sized for
//! `--urls` at 1% FPP, and of a SET holding the same URLs' 40-character SHA1 hex strings.

use std::sync::Arc;
use std::time::{Duration, Instant};

use frontier::{Frontier, Link};
use redis_frontier::RedisFrontier;
use sha1::{Digest, Sha1};
use test_support::redis_cluster::RedisCluster;
use test_support::redis_server::RedisServer;

mod common;
use common::{arg, bench_config, settings};

/// URL `i`: on one of 1,000 hosts, or (`same_host`) on its page's host, as most links of a
/// real page are.
fn url(i: u64, page: u64, same_host: bool) -> String {
    let host = if same_host {
        (i / page) % 1000
    } else {
        i % 1000
    };
    format!("http://h{host}.example/section/{}/page-{i}.html", i % 97)
}

async fn offer_all(f: &Arc<RedisFrontier>, urls: u64, page: u64, tasks: u64, same: bool) -> f64 {
    let start = Instant::now();
    let mut handles = Vec::new();
    for t in 0..tasks {
        let f = Arc::clone(f);
        handles.push(tokio::spawn(async move {
            let mut first = t * page;
            while first < urls {
                let links: Vec<Link> = (first..(first + page).min(urls))
                    .map(|i| Link::new(url::Url::parse(&url(i, page, same)).unwrap(), 1))
                    .collect();
                f.offer(Some("http://h0.example/"), links).await.unwrap();
                first += page * tasks;
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    urls as f64 / start.elapsed().as_secs_f64()
}

/// Offers `urls / 2` links as a crawl does (BENCHMARKS.md §8: 88% of a crawl's offers are
/// duplicates): per page of `page` links, 12% new URLs, 44% URLs this process offered on
/// earlier pages, 44% URLs another process admitted (ids below `urls`). Returns offered
/// links per second.
async fn offer_mix(f: &Arc<RedisFrontier>, urls: u64, page: u64, tasks: u64, same: bool) -> f64 {
    let pages = urls / 2 / page;
    let fresh = (page * 12).div_ceil(100);
    let own = (page - fresh) / 2;
    let start = Instant::now();
    let mut handles = Vec::new();
    for t in 0..tasks {
        let f = Arc::clone(f);
        handles.push(tokio::spawn(async move {
            let mut p = t;
            while p < pages {
                let mut ids: Vec<u64> = (0..fresh).map(|j| urls + p * fresh + j).collect();
                for j in 0..own {
                    // New URLs of this task's earlier pages (its first page repeats itself).
                    let earlier = p.saturating_sub(tasks * (1 + j % 4));
                    ids.push(urls + earlier * fresh + j % fresh);
                }
                while (ids.len() as u64) < page {
                    ids.push((p * page + ids.len() as u64 * 7919) % urls);
                }
                let links: Vec<Link> = ids
                    .iter()
                    .map(|&i| Link::new(url::Url::parse(&url(i, page, same)).unwrap(), 1))
                    .collect();
                f.offer(Some("http://h0.example/"), links).await.unwrap();
                p += tasks;
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    (pages * page) as f64 / start.elapsed().as_secs_f64()
}

async fn memory_usage(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> u64 {
    redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(key)
        .arg("SAMPLES")
        .arg(0)
        .query_async(conn)
        .await
        .unwrap()
}

/// Each node's `INFO section`.
async fn node_info(nodes: &[String], section: &str) -> Vec<String> {
    let mut out = Vec::new();
    for url in nodes {
        let mut conn = redis::Client::open(url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let info: String = redis::cmd("INFO")
            .arg(section)
            .query_async(&mut conn)
            .await
            .unwrap();
        out.push(info);
    }
    out
}

/// The number `name` of an `INFO` text (0 when absent).
fn info_number(info: &str, name: &str) -> f64 {
    info.lines()
        .find_map(|l| {
            l.strip_prefix(name)?
                .strip_prefix(':')?
                .trim()
                .parse::<f64>()
                .ok()
        })
        .unwrap_or(0.0)
}

/// Each node's CPU time so far (`INFO cpu`: user + system), in seconds.
async fn cpu_seconds(nodes: &[String]) -> Vec<f64> {
    node_info(nodes, "cpu")
        .await
        .iter()
        .map(|i| info_number(i, "used_cpu_user") + info_number(i, "used_cpu_sys"))
        .collect()
}

/// Each node's memory in use (`INFO memory`: `used_memory`), in bytes.
async fn used_memory(nodes: &[String]) -> Vec<f64> {
    node_info(nodes, "memory")
        .await
        .iter()
        .map(|i| info_number(i, "used_memory"))
        .collect()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (urls, page, tasks) = (
        arg("--urls", 1_000_000),
        arg("--page", 50),
        arg("--tasks", 16),
    );
    let same = arg("--same-host", 0) == 1;
    let cluster = arg("--cluster", 0) == 1;
    let masters = arg("--masters", 0) as usize;
    let partitions = arg("--partitions", 1) as u32;
    // The server or cluster (kept running to the end); every node's URL, the master of the
    // crawl's first partition first (where `MEMORY` is read and the dupefilter SET goes).
    let (_server, _cluster, server_url, nodes) = if cluster || masters > 0 {
        let mut c = if cluster {
            RedisCluster::start(3).expect("a private Redis Cluster (apt-get install redis-server)")
        } else {
            RedisCluster::start_bare(masters).expect("a private Redis Cluster of bare masters")
        };
        let master = c.master_of("crawl:{bench}:stats").unwrap();
        let url = c.url();
        let mut nodes = c.addrs();
        nodes.sort_by_key(|a| *a != master);
        let nodes = nodes.iter().map(|a| format!("redis://{a}/0")).collect();
        (None, Some(c), url, nodes)
    } else {
        let s =
            RedisServer::start(&[]).expect("a private redis-server (apt-get install redis-server)");
        let url = s.url();
        (Some(s), None, url.clone(), vec![url])
    };
    let node = nodes[0].clone();
    println!(
        "on {}, the crawl in {partitions} partition(s)",
        if cluster {
            "a cluster of 3 masters with a replica each".to_owned()
        } else if masters > 0 {
            format!("a cluster of {masters} master(s) without replicas")
        } else {
            "one Redis".to_owned()
        }
    );
    let cfg = bench_config(urls);
    let settings = redis_frontier::RedisConfig {
        partitions,
        ..settings(server_url, Duration::from_secs(30))
    };
    let f = Arc::new(
        RedisFrontier::connect(cfg.clone(), settings.clone(), &[])
            .await
            .unwrap(),
    );
    // A second process of the same crawl: its near cache has seen none of the URLs.
    let other = Arc::new(
        RedisFrontier::connect(cfg.clone(), settings.clone(), &[])
            .await
            .unwrap(),
    );
    // A third, for the crawl-like mix.
    let third = Arc::new(RedisFrontier::connect(cfg, settings, &[]).await.unwrap());
    let client = redis::Client::open(node).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let busy = |info: &str| {
        // Microseconds Redis spent in scripts (`INFO commandstats`).
        info.lines()
            .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
            .filter_map(|l| {
                l.split("usec=")
                    .nth(1)?
                    .split(',')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum::<u64>()
    };
    // Script time summed over the nodes.
    let script_usec = || {
        let nodes = nodes.clone();
        async move {
            let mut total = 0;
            for info in node_info(&nodes, "commandstats").await {
                total += busy(&info);
            }
            total
        }
    };
    let mem_before = used_memory(&nodes).await;
    let cpu_before = cpu_seconds(&nodes).await;
    let t0 = Instant::now();
    let new = offer_all(&f, urls, page, tasks, same).await;
    let cpu_new: Vec<String> = cpu_seconds(&nodes)
        .await
        .iter()
        .zip(&cpu_before)
        .map(|(after, before)| format!("{:.2}", after - before))
        .collect();
    println!(
        "CPU seconds of the new offers ({:.2} s) by node, the first partition's master first: {}",
        t0.elapsed().as_secs_f64(),
        cpu_new.join(", ")
    );
    let mem_new: Vec<String> = used_memory(&nodes)
        .await
        .iter()
        .zip(&mem_before)
        .map(|(after, before)| format!("{:.1}", (after - before) / urls as f64))
        .collect();
    println!(
        "memory used per new URL (bytes) by node, the first partition's master first: {}",
        mem_new.join(", ")
    );
    let (t1, b1) = (t0.elapsed(), script_usec().await);
    let dup = offer_all(&f, urls, page, tasks, same).await;
    let (t2, b2) = (t0.elapsed(), script_usec().await);
    let theirs = offer_all(&other, urls, page, tasks, same).await;
    let (t3, b3) = (t0.elapsed(), script_usec().await);
    let mixed = offer_mix(&third, urls, page, tasks, same).await;
    println!(
        "Redis busy in scripts: {:.0}% of the new offers' time, {:.0}% of the duplicates', \
         {:.0}% of the other process' duplicates'",
        b1 as f64 / 1e4 / t1.as_secs_f64(),
        (b2 - b1) as f64 / 1e4 / (t2 - t1).as_secs_f64(),
        (b3 - b2) as f64 / 1e4 / (t3 - t2).as_secs_f64()
    );
    println!(
        "a crawl-like mix from a third process (of each page's links 12% new, 44% it offered \
         before, 44% another process admitted): {mixed:.0} offered links/s"
    );
    let stats = f.stats().await.unwrap();
    println!(
        "offers from one process, pages of {page} links ({}), {tasks} tasks: {new:.0} new \
         links/s, {dup:.0} duplicate links/s (seen by this process), {theirs:.0} duplicate \
         links/s (admitted by another process) ({} admitted of {urls})",
        if same {
            "a page's links on its host"
        } else {
            "links on 1,000 hosts"
        },
        stats.admitted
    );

    // Every partition's bitmap is the first's size (one shape).
    let bitmap = memory_usage(&mut conn, &f.visited().bits_key()).await * u64::from(f.partitions());
    // scrapy-redis' RFPDupeFilter: SADD of each request's SHA1 hex fingerprint.
    for chunk in (0..urls).collect::<Vec<_>>().chunks(10_000) {
        let mut cmd = redis::cmd("SADD");
        cmd.arg("scrapy:dupefilter{bench}");
        for &i in chunk {
            cmd.arg(format!("{:x}", Sha1::digest(url(i, page, same).as_bytes())));
        }
        let _: u64 = cmd.query_async(&mut conn).await.unwrap();
    }
    let set = memory_usage(&mut conn, "scrapy:dupefilter{bench}").await;
    println!(
        "memory per visited URL at 1% FPP ({urls} URLs): bitmap {:.3} bytes ({bitmap} bytes), \
         SET of SHA1 hex {:.1} bytes ({set} bytes), {:.0}x",
        bitmap as f64 / urls as f64,
        set as f64 / urls as f64,
        set as f64 / bitmap as f64
    );
}
