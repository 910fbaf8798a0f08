//! What the Redis frontier's tests share: a private Redis (or a skip where none can start and
//! the test script did not require one) and frontiers on it.

#![allow(dead_code)]

use std::time::Duration;

use frontier::FrontierConfig;
use redis_frontier::{RedisConfig, RedisFrontier};
use test_support::redis_server::RedisServer;

/// A private Redis (see [`RedisServer::for_test`]).
pub fn redis(extra: &[&str]) -> Option<RedisServer> {
    RedisServer::for_test(extra)
}

/// Settings for crawl `crawl_id` on `server`, with short leases.
pub fn settings(server: &RedisServer, crawl_id: &str, lease: Duration) -> RedisConfig {
    RedisConfig {
        url: server.url(),
        crawl_id: crawl_id.into(),
        lease,
        holder: None,
        partitions: 0,
    }
}

/// The contract suite's base configuration without a politeness delay, kept open when idle.
pub fn unpaced() -> FrontierConfig {
    FrontierConfig {
        politeness: frontier::Politeness {
            delay: Duration::ZERO,
            ..frontier::Politeness::default()
        },
        keep_open: true,
        ..test_support::contract::base_config()
    }
}

/// A frontier of crawl `crawl_id`.
pub async fn open(server: &RedisServer, crawl_id: &str, cfg: FrontierConfig) -> RedisFrontier {
    RedisFrontier::connect(cfg, settings(server, crawl_id, Duration::from_secs(5)), &[])
        .await
        .expect("connect")
}
