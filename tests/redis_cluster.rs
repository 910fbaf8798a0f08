//! `crawler crawl` processes sharing one frontier on a private Redis Cluster (3 masters with
//! a replica each, `redis+cluster://`): together they crawl the test site to its ground
//! truth with every URL recorded once (a page budget split over partitions: exactly the
//! budget), a process killed loses no URL, and the master holding the crawl killed mid-crawl —
//! its replica promoted by the cluster, no operator — loses no URL; only leases out on it
//! may be fetched twice.

use std::time::{Duration, Instant};

use test_support::redis_cluster::RedisCluster;

use testsite::{SiteConfig, TestSite};

use crate::redis::{
    assert_whole, finish_all, refused_start, start_shared_with, stats,
    three_crawl_once_and_politely, union, Process,
};

/// The crawl's keys (crawl id `shared`, as [`Process`] names it) all sit in this key's slot.
const CRAWL_KEY: &str = "crawl:{shared}:stats";

/// A cluster none of whose nodes answers: 69, naming the nodes, not the password.
#[test]
fn an_unreachable_cluster_is_69_without_its_password() {
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (a, b) = (free(), free());
    let url = format!("redis+cluster://user:se@cret@127.0.0.1:{a},127.0.0.1:{b}");
    let (code, err) = refused_start(&url);
    assert_eq!(code, Some(69), "{err}");
    assert!(err.contains(&format!("127.0.0.1:{a}")), "{err}");
    assert!(!err.contains("cret"), "the password is shown: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_crawl_the_site_once_and_politely_on_a_cluster() {
    let Some(mut cluster) = RedisCluster::for_test(3) else {
        return;
    };
    // A `redis://` URL that reaches a cluster node is the settings' fault: 64, saying which
    // URL to use.
    let (code, err) = refused_start(&format!("redis://{}/0", cluster.addrs()[0]));
    assert_eq!(code, Some(64), "{err}");
    assert!(err.contains("redis+cluster://"), "{err}");

    // The crawl split into 6 partitions: the three processes' work spread over the masters.
    three_crawl_once_and_politely(&cluster.url(), "partitions = 6").await;
    // Every key of the crawl is under one of its partitions' tags (as recorded), and the
    // tags were chosen so that each master holds two of the six partitions.
    let prefixes = partition_prefixes(&mut cluster, "shared");
    assert_eq!(prefixes.len(), 6);
    let mut per_master = Vec::new();
    for addr in cluster.addrs() {
        let node = cluster.node(addr).unwrap();
        if !node
            .command(&["INFO", "replication"])
            .is_ok_and(|i| i.contains("role:master"))
        {
            continue;
        }
        // One bulk string (the test client reads no arrays): the node's keys, a line each.
        let keys = node
            .command(&[
                "EVAL",
                "return table.concat(redis.call('KEYS', ARGV[1]), '\\n')",
                "0",
                "crawl:*",
            ])
            .unwrap();
        let mut here = std::collections::BTreeSet::new();
        for key in keys
            .lines()
            .map(str::trim)
            .filter(|k| k.starts_with("crawl:"))
        {
            let p = prefixes
                .iter()
                .position(|prefix| key.starts_with(prefix.as_str()));
            assert!(p.is_some(), "a key outside the crawl's partitions: {key}");
            here.extend(p);
        }
        per_master.push(here.len());
    }
    assert_eq!(per_master, [2, 2, 2], "partitions per master");

    three_share_one_page_budget(&cluster.url()).await;

    // A process killed: as on one Redis, its leases expire in every partition (on the
    // masters' clocks) and go to the others. The crawl `shared` again, from nothing.
    for addr in cluster.addrs() {
        // Replicas refuse the flush (read-only): their masters' is replicated to them.
        let _ = cluster.node(addr).unwrap().command(&["FLUSHALL"]);
    }
    crate::redis::killed_process_loses_no_url(&cluster.url(), "partitions = 6").await;
}

/// Three processes on a crawl of 6 partitions with `crawl.max_pages = 300`: 300 pages
/// recorded in all, each once, and every process stopped by the budget.
async fn three_share_one_page_budget(redis_url: &str) {
    let site = TestSite::start(SiteConfig {
        pages: 2_000,
        hosts: 20,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let seed = site.site().seed_url();
    let procs: Vec<Process> = (0..3)
        .map(|_| Process::with_frontier(redis_url, "delay_ms = 0", "partitions = 6"))
        .collect();
    let env = [
        ("CRAWLER_CRAWL_MAX_PAGES", "300"),
        ("CRAWLER_FRONTIER_CRAWL_ID", "budget"),
    ];
    let children = procs.iter().map(|p| p.spawn_with(&seed, &env)).collect();
    let errs = finish_all(children).await;
    let (_, extra, twice) = union(&site, &procs.iter().collect::<Vec<_>>());
    assert!(extra.is_empty() && twice.is_empty(), "{extra:?} {twice:?}");
    let counts: Vec<usize> = procs.iter().map(Process::line_count).collect();
    println!("records per process under a budget of 300: {counts:?}");
    assert_eq!(counts.iter().sum::<usize>(), 300, "{errs:?}");
    for p in &procs {
        assert_eq!(stats(&p.out)["stopped_by"], "max_pages");
    }
}

/// The key prefixes of crawl `id`'s partitions, from the tags its first process recorded.
fn partition_prefixes(cluster: &mut RedisCluster, id: &str) -> Vec<String> {
    let meta = format!("crawl:{{{id}}}:meta");
    let home = cluster.master_of(&meta).unwrap();
    let node = cluster.node(home).unwrap();
    let parts: u32 = node
        .command(&["HGET", &meta, "partitions"])
        .unwrap()
        .parse()
        .unwrap();
    let tags = node.command(&["HGET", &meta, "tags"]).unwrap();
    let mut out = vec![redis_frontier::partition_prefix(id, 0, 0)];
    for (p, t) in (1..parts).zip(tags.split(',')) {
        out.push(redis_frontier::partition_prefix(id, p, t.parse().unwrap()));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_killed_mid_crawl_loses_no_url() {
    let Some(mut cluster) = RedisCluster::for_test(3) else {
        return;
    };
    // Pages answer after 50 ms, so leases are out when the master dies; the crawl is split
    // into 6 partitions, so the dead master held some of them and links crossed to it.
    let (site, procs, children) = start_shared_with(
        &cluster.url(),
        (3_000, 10, 50),
        3,
        "delay_ms = 5\nmax_per_host = 4",
        "partitions = 6",
    )
    .await;
    let recorded = || procs.iter().map(Process::line_count).sum::<usize>();
    let deadline = Instant::now() + Duration::from_secs(120);
    while recorded() < 800 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if recorded() < 800 {
        let n = recorded();
        let errs = tokio::task::block_in_place(|| crate::redis::kill_all(children));
        panic!("the crawl stalled at {n} records before the kill: {errs:#?}");
    }
    let master = cluster.master_of(CRAWL_KEY).unwrap();
    // The leases out in the partitions on that master.
    let mut leases = 0u64;
    let mut held = 0;
    for key in partition_prefixes(&mut cluster, "shared") {
        if cluster.master_of(&format!("{key}stats")).unwrap() != master {
            continue;
        }
        held += 1;
        let node = cluster.node(master).unwrap();
        leases += node
            .command(&["ZCARD", &format!("{key}leases")])
            .unwrap()
            .trim()
            .trim_start_matches(':')
            .parse::<u64>()
            .unwrap();
    }
    let at = recorded();
    let killed = Instant::now();
    tokio::task::block_in_place(|| cluster.kill(master)).unwrap();
    let promoted = cluster.master_of(CRAWL_KEY).unwrap();
    println!(
        "master {master} (partitions: {held} of 6) killed after {at} records with {leases} \
         leases out there; {promoted} took over in {:?}",
        killed.elapsed()
    );
    assert_ne!(promoted, master);
    let errs = finish_all(children).await;
    let twice = assert_whole(&site, &procs, &errs);
    println!("{} recorded twice", twice.len());
    // A lease out when the master died may be served again (its completion lost with the
    // master's last writes); nothing else. At most 3 × 8 leases are ever out (`concurrency`).
    assert!(
        twice.len() <= 3 * 8,
        "recorded twice: {} (with {leases} leases out just before the kill): {twice:?}",
        twice.len()
    );
    assert!(
        errs.iter().any(|e| e.contains("frontier unavailable")),
        "no process noticed the failover: {errs:?}"
    );
    // The crawl clock stood still while no master served the crawl (longer than a lease,
    // 2 s): no live holder's lease expired.
    let expired = stats(&procs[1].out)["frontier"]["leases_expired"].clone();
    println!("leases expired: {expired}");
    assert_eq!(expired, 0, "{errs:?}");
    site.stop().await;
}
