//! The frontier contract suite, unchanged, against a real private Redis and a private Redis
//! Cluster (3 masters with a replica each; the crawls' slots spread over them): every check
//! opens a new crawl id; the restore check reopens the same one (a restarted process), whose
//! lost lease is served again once it expires.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use frontier::{Frontier, FrontierConfig};
use redis_frontier::{RedisConfig, RedisFrontier};
use test_support::contract::{self, Harness};
use test_support::redis_cluster::RedisCluster;

struct OnRedis {
    url: String,
    partitions: u32,
    crawls: AtomicU64,
    last: Mutex<String>,
}

impl OnRedis {
    fn connect(&self, cfg: FrontierConfig, seeds: &[&str], id: &str) -> Arc<dyn Frontier> {
        let settings = RedisConfig {
            url: self.url.clone(),
            crawl_id: id.into(),
            lease: Duration::from_millis(400),
            holder: None,
            partitions: self.partitions,
        };
        let f = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(RedisFrontier::connect(cfg, settings, seeds))
        });
        Arc::new(f.expect("connect"))
    }
}

impl Harness for OnRedis {
    fn open(&self, cfg: FrontierConfig, seeds: &[&str]) -> Arc<dyn Frontier> {
        let id = format!("contract-{}", self.crawls.fetch_add(1, Ordering::Relaxed));
        *self.last.lock().unwrap() = id.clone();
        self.connect(cfg, seeds, &id)
    }

    fn reopen(&self, cfg: FrontierConfig, seeds: &[&str]) -> Option<Arc<dyn Frontier>> {
        let id = self.last.lock().unwrap().clone();
        Some(self.connect(cfg, seeds, &id))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_frontier_keeps_the_contract() {
    let Some(server) = common::redis(&[]) else {
        return;
    };
    let harness = OnRedis {
        url: server.url(),
        partitions: 0,
        crawls: AtomicU64::new(0),
        last: Mutex::default(),
    };
    contract::run_all(&harness).await;
}

/// A crawl split into 4 partitions on one Redis keeps the contract (what it does not refuse).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_partitioned_redis_frontier_keeps_the_contract() {
    let Some(server) = common::redis(&[]) else {
        return;
    };
    let harness = OnRedis {
        url: server.url(),
        partitions: 4,
        crawls: AtomicU64::new(0),
        last: Mutex::default(),
    };
    contract::run_partitioned(&harness).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_frontier_keeps_the_contract_on_a_cluster() {
    let Some(mut cluster) = RedisCluster::for_test(3) else {
        return;
    };
    let harness = OnRedis {
        url: cluster.url(),
        partitions: 0,
        crawls: AtomicU64::new(0),
        last: Mutex::default(),
    };
    contract::run_all(&harness).await;
    // And split into 6 partitions, each check's crawl over the masters.
    let parted = OnRedis {
        url: cluster.url(),
        partitions: 6,
        crawls: AtomicU64::new(1000),
        last: Mutex::default(),
    };
    contract::run_partitioned(&parted).await;
    // The crawls were not all on one master (each check's crawl is its own slot).
    let mut used = 0;
    for addr in cluster.addrs() {
        let node = cluster.node(addr).expect("started");
        if node
            .command(&["DBSIZE"])
            .is_ok_and(|n| n.trim().trim_start_matches(':') != "0")
            && node
                .command(&["INFO", "replication"])
                .is_ok_and(|i| i.contains("role:master"))
        {
            used += 1;
        }
    }
    assert!(
        used >= 2,
        "the contract's crawls all sat on {used} master(s)"
    );
}
