//! What the benches share: their `--name N` arguments, and the crawl they run on.

#![allow(dead_code)]

use std::time::Duration;

use frontier::{FrontierConfig, HostScope, Politeness, ScopeConfig};
use redis_frontier::RedisConfig;

/// The value of `--name N` among the bench's arguments, else `default`.
pub fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A crawl of `urls` URLs at 1% FPP, any host in scope, no politeness delay.
pub fn bench_config(urls: u64) -> FrontierConfig {
    FrontierConfig {
        scope: ScopeConfig {
            hosts: HostScope::Any,
            ..ScopeConfig::default()
        },
        expected_urls: urls,
        fpp: 0.01,
        politeness: Politeness {
            delay: Duration::ZERO,
            ..Politeness::default()
        },
        ..FrontierConfig::default()
    }
}

/// Crawl `bench` on the Redis at `url`, with leases of `lease`.
pub fn settings(url: String, lease: Duration) -> RedisConfig {
    RedisConfig {
        url,
        crawl_id: "bench".into(),
        lease,
        holder: None,
        partitions: 0,
    }
}
