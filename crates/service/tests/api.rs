//! The service on a real server on `127.0.0.1:0` against the local test site: seeds given
//! over the API crawl the site to its ground truth; pause holds new fetches (seen from the
//! site's request log); host controls, errors and the token answer as documented; and with
//! `crawl.workers = 0` an external fetcher using only the lease calls crawls the site to its
//! ground truth, with abandoned leases served again.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use testsite::{SiteConfig, TestSite};
use tokio_util::sync::CancellationToken;

mod client;
use client::{http, Api};

#[path = "api/concurrency.rs"]
mod concurrency;
#[path = "api/crawls.rs"]
mod crawls;
#[path = "api/hostile.rs"]
mod hostile;

fn config(out: &std::path::Path, site: &TestSite, workers: Option<u32>) -> engine::CrawlConfig {
    let mut cfg = engine::CrawlConfig::default();
    cfg.crawl.out_dir = out.to_path_buf();
    cfg.crawl.concurrency = 8;
    if let Some(n) = workers {
        cfg.crawl.workers = engine::Workers::Count(n);
    }
    cfg.crawl.progress_secs = 3600;
    cfg.fetch.retry_base_ms = 20;
    cfg.fetch.resolve = [("*.test".to_owned(), "127.0.0.1".to_owned())].into();
    cfg.politeness.delay_ms = 0;
    cfg.politeness.max_per_host = 4;
    cfg.politeness.backoff_base_ms = 20;
    cfg.frontier.scope = engine::ScopeKind::Domains;
    cfg.frontier.domains = vec!["test".into()];
    // The test site is on loopback: the operator's seeds over the API may be.
    cfg.service.allow_private_seeds = true;
    let _ = site;
    cfg
}

/// The test site: `pages` pages on `hosts` hosts.
async fn site(pages: u64, hosts: u32) -> TestSite {
    TestSite::start(SiteConfig {
        pages,
        hosts,
        ..SiteConfig::default()
    })
    .await
    .unwrap()
}

struct Service {
    api: Api,
    running: Option<engine::Running>,
    /// The service's crawls (`DEFAULT` and those a test makes).
    crawls: std::sync::Arc<engine::crawls::Crawls>,
    shutdown: CancellationToken,
    server: tokio::task::JoinHandle<Result<(), service::ServeError>>,
    _dir: tempfile::TempDir,
    out: std::path::PathBuf,
}

async fn start(site: &TestSite, workers: Option<u32>, token: &str) -> Service {
    start_with(site, workers, token, |_| {}).await
}

/// [`start`], with `change` applied to the configuration.
async fn start_with(
    site: &TestSite,
    workers: Option<u32>,
    token: &str,
    change: impl FnOnce(&mut engine::CrawlConfig),
) -> Service {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut cfg = config(&out, site, workers);
    cfg.service.api_token = token.into();
    change(&mut cfg);
    let settings = service::Settings::from_config(&cfg);
    let opts = engine::RunOptions {
        progress: engine::ProgressMode::Log,
        fresh: false,
        serve: true,
    };
    let maker_cfg = cfg.clone();
    let running = launch::start(cfg, opts).await.expect("engine starts");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let crawls = std::sync::Arc::new(engine::crawls::Crawls::new(
        running.control(),
        Some(std::sync::Arc::new(launch::crawls::Maker::new(
            maker_cfg, opts,
        ))),
        4,
    ));
    let server = tokio::spawn(service::serve(
        listener,
        crawls.clone(),
        settings,
        shutdown.clone(),
    ));
    Service {
        api: Api {
            addr,
            token: (!token.is_empty()).then(|| token.to_owned()),
        },
        running: Some(running),
        crawls,
        shutdown,
        server,
        _dir: dir,
        out,
    }
}

impl Service {
    async fn stop(mut self) -> (engine::Summary, Vec<Value>) {
        self.shutdown.cancel();
        let summary = self
            .running
            .take()
            .unwrap()
            .finish(self.shutdown.clone())
            .await
            .expect("the crawl ends cleanly");
        self.server.await.unwrap().unwrap();
        self.crawls.finish_all().await;
        let pages = std::fs::read_to_string(self.out.join("pages.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (summary, pages)
    }
}

/// Each ground-truth URL exactly once, with its expected outcome.
fn assert_ground_truth(site: &TestSite, pages: &[Value]) {
    let records = pages.iter().map(|p| testsite::Recorded {
        url: p["url"].as_str().unwrap_or_default().to_owned(),
        status: p["status"].as_u64().and_then(|s| u16::try_from(s).ok()),
        error: p["error"].as_str().map(str::to_owned),
    });
    if let Err(e) = site.site().ground_truth().check(records) {
        panic!("{e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeds_over_the_api_crawl_the_site_and_controls_hold() {
    let site = site(300, 3).await;
    let svc = start(&site, None, "").await;
    let api = &svc.api;
    assert_eq!(api.status().await["state"], "idle", "no seeds yet");

    // Paused before the seed: nothing is requested from the site until resumed.
    assert_eq!(
        api.call("POST", "/api/v1/pause", None).await.1["state"],
        "paused"
    );
    let seed = site.site().seed_url();
    let (code, answer) = api
        .call(
            "POST",
            "/api/v1/seeds",
            Some(json!({"urls": [seed, "ftp://h0.test/", "not a url"]})),
        )
        .await;
    assert_eq!(code, 200, "{answer}");
    let results: Vec<&str> = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["result"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["admitted", "invalid", "invalid"], "{answer}");
    assert_eq!(
        answer["results"][1]["reason"], "only http and https are crawled",
        "{answer}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(site.observer().log().is_empty(), "a request while paused");
    assert_eq!(api.status().await["state"], "paused");
    // The seed's host is known now: one fetch at a time, 40 ms apart (the configuration
    // says 0 and 4).
    let h0 = seed
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let (code, answer) = api
        .call(
            "PUT",
            &format!("/api/v1/hosts/{h0}"),
            Some(json!({"delay_ms": 40, "max_in_flight": 1})),
        )
        .await;
    assert_eq!(code, 200, "{answer}");
    api.call("POST", "/api/v1/resume", None).await;

    let status = api.idle_with(1).await;
    let log = site.observer().log();
    let stats = site.observer().host_stats();
    let h0_stats = stats
        .iter()
        .find(|(h, _)| h.as_str() == "h0.test")
        .map(|(_, s)| s)
        .expect("h0 was crawled");
    assert!(h0_stats.max_concurrent <= 1, "{h0_stats:?}");
    // Arrivals carry network jitter, so the span is checked, not each gap: from the first
    // page (robots.txt comes first, in the same lease) to the last, at least n − 2 delays.
    let starts: Vec<f64> = log
        .iter()
        .filter(|r| r.host == "h0.test")
        .map(|r| r.at_ms)
        .collect();
    let pages = &starts[1..];
    assert!(pages.len() >= 20, "{} requests to h0", starts.len());
    let span = pages[pages.len() - 1] - pages[0];
    let floor = (pages.len() - 2) as f64 * 40.0;
    assert!(
        span >= floor,
        "h0: {} pages in {span:.0} ms, at least {floor:.0} expected",
        pages.len()
    );
    let (_, again) = api
        .call("POST", "/api/v1/seeds", Some(json!({"urls": [seed]})))
        .await;
    assert_eq!(again["results"][0]["result"], "duplicate");

    // Hosts: listed with what was done; an unknown one is 404; controls are taken.
    let (code, hosts) = api
        .call("GET", "/api/v1/hosts?sort=done&limit=2", None)
        .await;
    assert_eq!(code, 200, "{hosts}");
    assert_eq!(hosts["hosts"].as_array().unwrap().len(), 2);
    assert!(hosts["hosts"][0]["done"].as_u64().unwrap() > 0, "{hosts}");
    assert!(hosts["next"].is_string(), "{hosts}");
    let first = hosts["hosts"][0]["host"].as_str().unwrap().to_owned();
    // h2.test's robots.txt answers 500: the host is not crawled for now, and the failure
    // counts among its errors.
    let (_, all) = api.call("GET", "/api/v1/hosts?limit=10", None).await;
    let h2 = all["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["host"].as_str().unwrap().starts_with("h2.test"))
        .unwrap_or_else(|| panic!("no h2.test in {all}"));
    assert_eq!(h2["robots"], "unreachable", "{h2}");
    assert!(h2["errors"].as_u64().unwrap() >= 1, "{h2}");
    // Each host's delay says what sets it: h0's is the operator's 40 ms (unless its last
    // errors left a longer back-off).
    let h0_row = all["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["host"] == h0.as_str())
        .unwrap_or_else(|| panic!("no {h0} in {all}"));
    let expected = match h0_row["backoff_ms"].as_u64().unwrap() {
        b if b > 40 => (json!(b), json!("backoff")),
        _ => (json!(40), json!("operator")),
    };
    assert_eq!(
        (&h0_row["delay_ms"], &h0_row["delay_reason"]),
        (&expected.0, &expected.1),
        "{h0_row}"
    );
    assert_eq!(h0_row["latency_delay_ms"], 0, "{h0_row}");
    let (code, _) = api
        .call(
            "PUT",
            &format!("/api/v1/hosts/{first}"),
            Some(json!({"delay_ms": 5, "max_in_flight": 1})),
        )
        .await;
    assert_eq!(code, 200);
    let (code, err) = api
        .call(
            "PUT",
            "/api/v1/hosts/nowhere.test",
            Some(json!({"delay_ms": 5})),
        )
        .await;
    assert_eq!((code, err["error"].is_string()), (404, true), "{err}");
    let (code, err) = api
        .call(
            "PUT",
            &format!("/api/v1/hosts/{first}"),
            Some(json!({"max_in_flight": 0})),
        )
        .await;
    assert_eq!(
        (code, err["field"].as_str()),
        (400, Some("max_in_flight")),
        "{err}"
    );

    // Bad requests: JSON errors, no panic.
    let (code, _, body) = http(
        api.addr,
        "POST",
        "/api/v1/seeds",
        "127.0.0.1",
        &[],
        Some("{\"urls\": [1,"),
    )
    .await;
    let err: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(code, 400, "{err}");
    assert!(err["error"].is_string());
    let (code, err) = api.call("GET", "/api/v1/hosts?sort=size", None).await;
    assert_eq!((code, err["field"].as_str()), (400, Some("sort")));
    let many: Vec<String> = (0..10_001).map(|i| format!("http://h0.test/{i}")).collect();
    let (code, err) = api
        .call("POST", "/api/v1/seeds", Some(json!({ "urls": many })))
        .await;
    assert_eq!((code, err["field"].as_str()), (400, Some("urls")), "{err}");

    // Metrics: parseable lines whose counters equal the status.
    let (code, headers, metrics) = http(api.addr, "GET", "/metrics", "127.0.0.1", &[], None).await;
    assert_eq!(code, 200);
    assert!(headers
        .iter()
        .any(|(k, v)| k == "content-type" && v.contains("openmetrics")));
    let metrics = String::from_utf8(metrics).unwrap();
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
            .unwrap_or_else(|| panic!("{name} missing in\n{metrics}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let pages = status["pages"].as_u64().unwrap() as f64;
    assert!(value("crawler_pages_total") >= pages);
    assert!(value("crawler_fetch_duration_seconds_count") > 0.0);
    assert!(value("crawler_links_offered_total") > 0.0);
    assert!(
        metrics.contains("crawler_fetches_total{class=\"2xx\"}"),
        "{metrics}"
    );
    assert!(metrics.trim_end().ends_with("# EOF"));

    // The OpenAPI document and the dashboard are served.
    let (code, doc) = api.call("GET", "/openapi.json", None).await;
    assert_eq!(code, 200);
    assert!(doc["paths"]["/api/v1/leases"].is_object());
    let (code, _, page) = http(api.addr, "GET", "/", "127.0.0.1", &[], None).await;
    assert_eq!(code, 200);
    assert!(String::from_utf8_lossy(&page).contains("/api/v1/status"));

    // Forget: the seed was fetched, so it is queued and fetched again (seen from the site);
    // a URL never admitted is unknown.
    let requests_before = site
        .observer()
        .log()
        .iter()
        .filter(|r| r.path == "/")
        .count();
    let (code, forgot) = api
        .call(
            "POST",
            "/api/v1/forget",
            Some(json!({"urls": [seed, "http://h0.test/never-linked", "nope"]})),
        )
        .await;
    assert_eq!(code, 200, "{forgot}");
    let results: Vec<&str> = forgot["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["result"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["requeued", "unknown", "invalid"], "{forgot}");
    let pages_before = status["pages"].as_u64().unwrap();
    api.idle_with(pages_before + 1).await;
    let requests_after = site
        .observer()
        .log()
        .iter()
        .filter(|r| r.path == "/")
        .count();
    assert_eq!(
        requests_after,
        requests_before + 1,
        "the forgotten seed fetched again"
    );

    let (summary, pages) = svc.stop().await;
    assert_eq!(summary.stopped_by, engine::StopReason::Shutdown);
    // The forgotten seed has two records; the rest of the site one each.
    let seed_records = pages.iter().filter(|p| p["url"] == seed.as_str()).count();
    assert_eq!(seed_records, 2);
    let once: Vec<Value> = {
        let mut seen_seed = false;
        pages
            .into_iter()
            .filter(|p| {
                if p["url"] == seed.as_str() {
                    let first = !seen_seed;
                    seen_seed = true;
                    first
                } else {
                    true
                }
            })
            .collect()
    };
    assert_ground_truth(&site, &once);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_guards_the_api() {
    let site = site(10, 1).await;
    let svc = start(&site, None, "s3cret-token-0123").await;
    let (code, _) = svc.api.call("GET", "/api/v1/status", None).await;
    assert_eq!(code, 200, "with the token");
    let anon = Api {
        addr: svc.api.addr,
        token: None,
    };
    let (code, err) = anon.call("GET", "/api/v1/status", None).await;
    assert_eq!(code, 401, "{err}");
    let wrong = Api {
        addr: svc.api.addr,
        token: Some("s3cret-token-012X".into()),
    };
    assert_eq!(wrong.call("POST", "/api/v1/pause", None).await.0, 401);
    assert_eq!(anon.call("GET", "/metrics", None).await.0, 401);
    assert_eq!(svc.api.call("GET", "/metrics", None).await.0, 200);
    svc.stop().await;
}

/// `DELETE /api/v1/hosts/{host}/queue` drops what is queued for the host: nothing of it is
/// leased afterwards, its URLs stay known, and the crawl has nothing left to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosts_queue_can_be_deleted() {
    let site = site(10, 1).await;
    let svc = start(&site, Some(0), "").await;
    let api = &svc.api;
    let seed = site.site().seed_url();
    let urls: Vec<String> = (1..=3).map(|i| format!("{seed}p{i}")).collect();
    let (code, answer) = api
        .call("POST", "/api/v1/seeds", Some(json!({ "urls": urls })))
        .await;
    assert_eq!(code, 200, "{answer}");
    let host = seed
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let path = format!("/api/v1/hosts/{host}/queue");
    let (code, answer) = api.call("DELETE", &path, None).await;
    assert_eq!((code, &answer), (200, &json!({"deleted": 3})));
    let (code, answer) = api
        .call("DELETE", "/api/v1/hosts/nowhere.test/queue", None)
        .await;
    assert_eq!((code, &answer), (200, &json!({"deleted": 0})));
    let (_, got) = api
        .call("POST", "/api/v1/leases", Some(json!({"max": 10})))
        .await;
    assert_eq!(got["leases"], json!([]), "{got}");
    let (_, again) = api
        .call("POST", "/api/v1/seeds", Some(json!({ "urls": [urls[0]] })))
        .await;
    assert_eq!(again["results"][0]["result"], "duplicate", "{again}");
    assert_eq!(api.status().await["state"], "idle");
    svc.stop().await;
}

/// An external fetcher in this test: leases, fetches from the site itself, extracts links
/// with the engine's extractor, completes. The first batch it takes is abandoned with a
/// one-second lease: those URLs must come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_fetchers_alone_crawl_the_site_and_lost_leases_come_back() {
    let site = site(1000, 3).await;
    let svc = start(&site, Some(0), "").await;
    let api = &svc.api;
    let seed = site.site().seed_url();
    api.call("POST", "/api/v1/seeds", Some(json!({"urls": [seed]})))
        .await;
    let (_, first) = api
        .call(
            "POST",
            "/api/v1/leases",
            Some(json!({"max": 5, "lease_secs": 1})),
        )
        .await;
    let abandoned: Vec<String> = first["leases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["url"].as_str().unwrap().to_owned())
        .collect();
    assert!(!abandoned.is_empty(), "{first}");
    let site_addr = site.addr();
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let (code, got) = api
            .call("POST", "/api/v1/leases", Some(json!({"max": 50})))
            .await;
        assert_eq!(code, 200, "{got}");
        let leases = got["leases"].as_array().unwrap().clone();
        if leases.is_empty() {
            let s = api.status().await;
            if s["state"] == "idle" {
                break;
            }
            assert!(Instant::now() < deadline, "not done in time: {s}");
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        let mut results = Vec::new();
        for l in leases {
            let url = url::Url::parse(l["url"].as_str().unwrap()).unwrap();
            let host = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(80));
            let started = Instant::now();
            let (status, headers, body) = http(
                site_addr,
                "GET",
                &url[url::Position::BeforePath..],
                &host,
                &[],
                None,
            )
            .await;
            let header = |name: &str| {
                headers
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            };
            let ct = header("content-type");
            // As a crawler should: only HTML is parsed for links.
            let html = ct.as_deref().is_some_and(|c| {
                c.starts_with("text/html") || c.starts_with("application/xhtml+xml")
            });
            let links: Vec<String> = if status == 200 && html {
                link_extract::extract(&body, ct.as_deref(), &url, true)
                    .links
                    .into_iter()
                    .map(String::from)
                    .collect()
            } else {
                Vec::new()
            };
            results.push(json!({
                "lease_id": l["lease_id"],
                "status": status,
                "final_url": header("location"),
                "content_type": ct,
                "bytes": body.len(),
                "fetch_ms": started.elapsed().as_millis() as u64,
                "links": links,
                "retry_after_secs": header("retry-after").and_then(|v| v.parse::<u64>().ok()),
            }));
        }
        let (code, done) = api
            .call(
                "POST",
                "/api/v1/leases/complete",
                Some(json!({ "results": results })),
            )
            .await;
        assert_eq!(code, 200, "{done}");
        assert!(done["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["result"] != "unknown_lease"));
    }
    // A completion of an expired lease changes nothing.
    let late = json!({"results": [{"lease_id": first["leases"][0]["lease_id"], "status": 200}]});
    let (_, answer) = api
        .call("POST", "/api/v1/leases/complete", Some(late))
        .await;
    assert_eq!(answer["results"][0]["result"], "unknown_lease");
    let (_, metrics, body) = http(api.addr, "GET", "/metrics", "127.0.0.1", &[], None).await;
    let _ = metrics;
    let text = String::from_utf8(body).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("crawler_leases_expired_total ")
                && l.split(' ').nth(1).unwrap().parse::<u64>().unwrap() >= abandoned.len() as u64),
        "{text}"
    );
    let (_, pages) = svc.stop().await;
    for url in &abandoned {
        assert!(
            pages.iter().any(|p| p["url"] == url.as_str()),
            "abandoned {url} never recorded"
        );
    }
    assert_ground_truth(&site, &pages);
}
