//! `crawl.concurrency` bounds the fetches in flight: the built-in workers' and the external
//! fetchers' leases together.

use std::time::{Duration, Instant};

use serde_json::json;
use testsite::{SiteConfig, TestSite};

use super::start_with;

/// Seeds the site's seed URL and waits (at most a minute) for `pages` records.
async fn seed_and_wait(api: &crate::client::Api, site: &TestSite, pages: u64) {
    let seed = site.site().seed_url();
    api.call("POST", "/api/v1/seeds", Some(json!({ "urls": [seed] })))
        .await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while api.status().await["pages"].as_u64().unwrap_or(0) < pages {
        assert!(Instant::now() < deadline, "{}", api.status().await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `crawl.concurrency` bounds the fetches in flight, leases included: a lease call hands out
/// no more than the slots free, and a completion frees its slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_concurrency_bounds_the_leases_out() {
    let site = super::site(50, 1).await;
    // Twelve URLs due at once on one host that allows twenty in flight: only the eight
    // fetch slots of `crawl.concurrency` are handed out.
    let svc = start_with(&site, Some(0), "", |cfg| {
        cfg.politeness.max_per_host = 20;
        cfg.crawl.sitemaps = false;
    })
    .await;
    let api = &svc.api;
    let origin = site.site().seed_url();
    let urls: Vec<String> = (0..12).map(|i| format!("{origin}lease-test/{i}")).collect();
    api.call("POST", "/api/v1/seeds", Some(json!({ "urls": urls })))
        .await;
    let lease = |max: u32| async move {
        let (code, got) = api
            .call("POST", "/api/v1/leases", Some(json!({ "max": max })))
            .await;
        assert_eq!(code, 200, "{got}");
        got["leases"].as_array().unwrap().clone()
    };
    let first = lease(50).await;
    assert_eq!(first.len(), 8, "{first:?}");
    assert!(lease(50).await.is_empty(), "every slot is taken");
    let done = json!({"results": [{"lease_id": first[0]["lease_id"], "status": 404}]});
    let (code, answer) = api
        .call("POST", "/api/v1/leases/complete", Some(done))
        .await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(lease(50).await.len(), 1, "the completion freed one slot");
    svc.stop().await;
}

/// `crawl.concurrency` bounds the built-in workers' fetches too: eight workers, two slots,
/// one host that allows twenty in flight and answers slowly — never more than two requests
/// at once reach it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_concurrency_bounds_more_workers() {
    let site = TestSite::start(SiteConfig {
        pages: 40,
        hosts: 1,
        latency_ms: 30,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let svc = start_with(&site, Some(8), "", |cfg| {
        cfg.crawl.concurrency = 2;
        cfg.politeness.max_per_host = 20;
    })
    .await;
    let api = &svc.api;
    seed_and_wait(api, &site, 40).await;
    let (_, pages) = svc.stop().await;
    assert!(pages.len() >= 40);
    let stats = site.observer().host_stats();
    let most = stats.iter().map(|(_, s)| s.max_concurrent).max().unwrap();
    assert_eq!(most, 2, "{stats:?}");
}

/// The memory governor at its floor (`crawl.max_memory_mb` below what the process needs at
/// all): one fetch at a time reaches the site, the crawl still finishes, and status and
/// `/metrics` say why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_budget_at_its_floor_lets_one_fetch_run() {
    let site = TestSite::start(SiteConfig {
        pages: 30,
        hosts: 3,
        latency_ms: 20,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let svc = start_with(&site, None, "", |cfg| {
        cfg.crawl.concurrency = 8;
        cfg.crawl.max_memory_mb = 1;
        cfg.politeness.max_per_host = 8;
    })
    .await;
    let api = &svc.api;
    seed_and_wait(api, &site, 30).await;
    let status = api.status().await;
    let memory = &status["memory"];
    assert_eq!(memory["throttle"], "floor", "{status}");
    assert_eq!(memory["fetch_slots"], 1, "{status}");
    assert_eq!(memory["budget_bytes"], 1 << 20, "{status}");
    assert!(
        memory["reason"].as_str().unwrap().starts_with("resident "),
        "{status}"
    );
    let (code, _, metrics) =
        crate::client::http(api.addr, "GET", "/metrics", "127.0.0.1", &[], None).await;
    assert_eq!(code, 200);
    let metrics = String::from_utf8(metrics).unwrap();
    for line in [
        "crawler_memory_throttle_level 3",
        "crawler_fetch_slots_effective 1",
        "crawler_memory_budget_bytes 1048576",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "{line} missing in\n{metrics}"
        );
    }
    let (_, pages) = svc.stop().await;
    assert!(pages.len() >= 30);
    assert_eq!(site.observer().max_concurrent_all(), 1, "over all hosts");
}
