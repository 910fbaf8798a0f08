//! The frontier contract suite, unchanged, against a real private Redis: every check opens a
//! new crawl id; the restore check reopens the same one (a restarted process), whose lost
//! lease is served again once it expires.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use frontier::{Frontier, FrontierConfig};
use redis_frontier::RedisFrontier;
use test_support::contract::{self, Harness};
use test_support::redis_server::RedisServer;

struct OnRedis {
    server: RedisServer,
    crawls: AtomicU64,
    last: Mutex<String>,
}

impl OnRedis {
    fn connect(&self, cfg: FrontierConfig, seeds: &[&str], id: &str) -> Arc<dyn Frontier> {
        let settings = common::settings(&self.server, id, Duration::from_millis(400));
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
        server,
        crawls: AtomicU64::new(0),
        last: Mutex::default(),
    };
    contract::run_all(&harness).await;
}
