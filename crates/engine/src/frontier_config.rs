//! The frontier's configuration, read from the crawl's: scope, canonicalisation, the
//! visited set's size, the queue's memory and order, budgets and politeness.

use std::path::PathBuf;
use std::time::Duration;

use config::{CrawlConfig, DedupMode, QueueOrder, ScopeKind};
use frontier::{CanonConfig, FrontierConfig, HostScope, Order, Politeness, ScopeConfig};

use crate::revisit;

/// Builds the frontier configuration from the crawl configuration.
pub fn frontier_config(cfg: &CrawlConfig) -> FrontierConfig {
    let f = &cfg.frontier;
    FrontierConfig {
        canon: CanonConfig {
            sort_query: f.sort_query,
            drop_params: f.drop_params.clone(),
            strip_www: f.strip_www,
            max_url_len: f.max_url_len as usize,
        },
        scope: ScopeConfig {
            hosts: match f.scope {
                ScopeKind::SameHost => HostScope::SameHost,
                ScopeKind::SameDomain => HostScope::SameDomain,
                ScopeKind::Domains => HostScope::Domains(f.domains.clone()),
                ScopeKind::Any => HostScope::Any,
            },
            include: f.include.clone(),
            exclude: f.exclude.clone(),
            max_depth: Some(cfg.crawl.max_depth),
            max_path_segments: f.max_path_segments as usize,
            max_repeated_segments: f.max_repeated_segments as usize,
            max_query_params: f.max_query_params as usize,
        },
        dedup: match f.dedup {
            DedupMode::Bloom => frontier::Dedup::Bloom,
            DedupMode::Exact => frontier::Dedup::Exact,
        },
        expected_urls: f.expected_urls,
        fpp: f.fpp,
        memory_capacity: f.memory_capacity as usize,
        spill_dir: (!f.spill_dir.is_empty()).then(|| PathBuf::from(&f.spill_dir)),
        order: match f.order {
            QueueOrder::BreadthFirst => Order::BreadthFirst,
            QueueOrder::DepthFirst => Order::DepthFirst,
        },
        max_pages: (cfg.crawl.max_pages > 0).then_some(cfg.crawl.max_pages),
        max_pages_per_host: (f.max_pages_per_host > 0).then_some(f.max_pages_per_host),
        max_redirects: cfg.fetch.max_redirects,
        keep_open: false,
        recrawl: revisit::policy(cfg),
        politeness: Politeness {
            delay: Duration::from_millis(cfg.politeness.delay_ms),
            max_per_host: cfg.politeness.max_per_host,
            backoff_base: Duration::from_millis(cfg.politeness.backoff_base_ms.max(1)),
            max_backoff: Duration::from_secs(cfg.politeness.max_backoff_secs),
            delay_factor: cfg.politeness.delay_factor,
            max_delay: Duration::from_millis(cfg.politeness.max_delay_ms),
            ip_delay: Duration::from_millis(cfg.politeness.ip_delay_ms),
            max_per_ip: cfg.politeness.max_per_ip,
        },
    }
}
