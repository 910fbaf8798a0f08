//! Politeness seen from the server: host names on one address paced together
//! (`politeness.ip_delay_ms`, `max_per_ip`), hosts paced by their own latency
//! (`politeness.delay_factor`), a robots.txt `Crawl-delay` above `max_delay_ms` honoured, and
//! one above `max_backoff_secs` skipping its host with a record for each URL.

use testsite::{SiteConfig, TestSite};

use crate::crawl::{crawl_site, read_pages};
use crate::util::{crawler, recorded, stderr};

/// Every request the site received, whatever its host, came at least `gap_ms` after the one
/// before over the whole log: the span of all arrivals (single gaps carry the network's
/// jitter; the span does not add it up) is at least (n − 2) gaps.
fn assert_spaced(log: &[testsite::RequestRecord], gap_ms: f64) {
    let mut starts: Vec<f64> = log.iter().map(|r| r.at_ms).collect();
    starts.sort_by(f64::total_cmp);
    let span = starts[starts.len() - 1] - starts[0];
    let floor = (starts.len() - 2) as f64 * gap_ms;
    assert!(
        span >= floor,
        "{} requests in {span:.0} ms, at least {floor:.0} expected",
        starts.len()
    );
}

/// The start-to-start gaps between the page requests (not robots.txt) `host` received.
fn page_gaps(site: &TestSite, host: &str) -> Vec<f64> {
    let starts: Vec<f64> = site
        .observer()
        .log()
        .iter()
        .filter(|r| r.host == host && r.path != "/robots.txt")
        .map(|r| r.at_ms)
        .collect();
    starts.windows(2).map(|w| w[1] - w[0]).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Hosts answering after 100, 10 and 60 ms, `delay_factor = 2`, `delay_ms = 30`,
/// `max_delay_ms = 150`, one fetch at a time per host: each host's pace is twice its latency
/// within those bounds — h1 every 30 ms (the delay: twice 10 ms is less), h4 every 120 ms —
/// and h0's robots.txt `Crawl-delay: 0.25`, above `max_delay_ms`, is honoured (250 ms, not
/// the 150 its latency would give). The server sees arrivals, each a little after its
/// start, so single gaps carry jitter; the span of a host's page requests does not add it
/// up (as in `politeness_seen_from_the_server`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_host_is_paced_by_its_own_latency() {
    let site = TestSite::start(SiteConfig {
        pages: 20,
        hosts: 5,
        extra_links: 1,
        depth: 1,
        crawl_delay: Some(0.25),
        // h2's robots.txt answers 5xx (not crawled), h3 has no latency.
        host_latency_ms: vec![100, 10, 0, 0, 60],
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let (_dir, out) = crawl_site(
        &site,
        "[crawl]\nconcurrency = 8\nsitemaps = false\n\
         [politeness]\ndelay_ms = 30\nmax_per_host = 1\ndelay_factor = 2\nmax_delay_ms = 150\n",
    )
    .await;
    assert!(!read_pages(&out).is_empty());
    let mut medians = Vec::new();
    for (host, pace) in [("h0.test", 250.0), ("h1.test", 30.0), ("h4.test", 120.0)] {
        let gaps = page_gaps(&site, host);
        assert!(gaps.len() >= 4, "{host}: {} gaps", gaps.len());
        let span: f64 = gaps.iter().sum();
        // The first page's own pace comes from its duration, measured when it completes: the
        // gaps after it are paced, the first within one pace of it.
        let floor = (gaps.len() - 1) as f64 * pace;
        assert!(
            span >= floor,
            "{host}: {} gaps in {span:.0} ms, at least {floor:.0} expected ({gaps:?})",
            gaps.len()
        );
        medians.push(median(gaps));
    }
    // The fast host is not held to the slow hosts' pace.
    assert!(
        medians[1] < medians[0] / 2.0 && medians[1] < medians[2],
        "median gaps h0, h1, h4: {medians:?}"
    );
    site.stop().await;
}

/// A robots.txt `Crawl-delay` longer than `politeness.max_backoff_secs` (the longest the
/// crawl waits for a host) is not shortened: its host is not crawled — nothing but its
/// robots.txt is requested — and each of its URLs gets a record saying why; the other hosts
/// are crawled, the crawl ends at once, `stats.json` and the summary name the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_delay_above_the_longest_wait_skips_its_host_with_records() {
    let site = TestSite::start(SiteConfig {
        pages: 20,
        hosts: 2,
        extra_links: 3,
        depth: 2,
        crawl_delay: Some(400.0),
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let h0 = site.site().origin(0);
    let h1 = site.site().origin(1);
    let file = dir.path().join("crawler.toml");
    std::fs::write(
        &file,
        "[politeness]\ndelay_ms = 0\nmax_backoff_secs = 300\n\
         [frontier]\nscope = \"domains\"\ndomains = [\"test\"]\n",
    )
    .unwrap();
    let mut cmd = crawler();
    cmd.args(["crawl", "--config", file.to_str().unwrap()])
        .args(["--seed", &format!("{h0}/"), "--seed", &format!("{h1}/")])
        .args([
            "--out",
            out.to_str().unwrap(),
            "--resolve",
            "*.test=127.0.0.1",
        ])
        .env("RUST_LOG", "info");
    let output = crate::util::output(cmd).await;
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    let requested: Vec<String> = site
        .observer()
        .log()
        .iter()
        .filter(|r| r.host == "h0.test")
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(requested, ["/robots.txt"], "h0 got only its robots.txt");
    let pages = read_pages(&out);
    let skipped: Vec<&serde_json::Value> = pages
        .iter()
        .filter(|p| p["url"].as_str().unwrap().starts_with(&h0))
        .collect();
    assert!(!skipped.is_empty());
    for p in &skipped {
        assert!(p["status"].is_null(), "{p}");
        assert_eq!(
            p["error"],
            "robots.txt Crawl-delay 400 s is above politeness.max_backoff_secs (300 s): \
             the host is not crawled",
        );
    }
    let h1_pages = pages
        .iter()
        .filter(|p| p["url"].as_str().unwrap().starts_with(&h1) && p["status"] == 200)
        .count();
    assert!(h1_pages >= 5, "h1 is crawled: {h1_pages} pages");
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("stats.json")).unwrap()).unwrap();
    assert_eq!(stats["crawl_delay_skipped"][h0.as_str()], 400.0, "{stats}");
    assert!(
        err.contains("not crawled for a robots.txt Crawl-delay above"),
        "{err}"
    );
    site.stop().await;
}

/// Twenty host names on one address (`--resolve *.test=127.0.0.1`), each allowed 4 fetches
/// at once and no delay of its own, under `ip_delay_ms = 5` and `max_per_ip = 2`: the server
/// behind them never has more than 2 requests in flight, robots.txt fetches included, their
/// starts are at least 5 ms apart (the span of all arrivals, as above), and the crawl still
/// reaches the site's ground truth.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_names_on_one_address_share_its_budget() {
    let site = TestSite::start(SiteConfig {
        pages: 120,
        hosts: 20,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let (_dir, out) = crawl_site(
        &site,
        "[crawl]\nconcurrency = 16\n[fetch]\nretry_base_ms = 20\n\
         [politeness]\nbackoff_base_ms = 20\ndelay_ms = 0\nmax_per_host = 4\n\
         ip_delay_ms = 5\nmax_per_ip = 2\n",
    )
    .await;
    let pages = read_pages(&out);
    if let Err(e) = site.site().ground_truth().check(pages.iter().map(recorded)) {
        panic!("{e}");
    }
    let observer = site.observer();
    assert!(
        observer.max_concurrent_all() <= 2,
        "{} requests in flight at once to the one address",
        observer.max_concurrent_all()
    );
    let hosts = observer.host_stats().len();
    assert!(hosts >= 15, "{hosts} hosts requested");
    assert_spaced(&observer.log(), 5.0);
    site.stop().await;
}

/// The same budget kept by three processes sharing the crawl in Redis: every request to the
/// one address counts whichever process makes it (robots.txt included), and a process killed mid-crawl gives its share of the address back when
/// its leases expire — the others finish the crawl, nothing lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_on_redis_share_an_addresss_budget() {
    three_share_an_address("").await;
}

/// As above, the crawl split into 6 partitions: the 20 hosts lie in different partitions,
/// and the address' group lives in one of them (its home), which every fetch asks for a turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_share_an_addresss_budget_across_partitions() {
    three_share_an_address("partitions = 6").await;
}

async fn three_share_an_address(frontier: &str) {
    use crate::redis::{finish_all, redis, start_shared_with, union, Process};
    let Some(server) = redis(&[]) else { return };
    let (site, procs, mut children) = start_shared_with(
        &server.url(),
        (300, 20, 20),
        3,
        "delay_ms = 0\nmax_per_host = 4\nip_delay_ms = 5\nmax_per_ip = 2",
        frontier,
    )
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while procs[0].line_count() < 30 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let mut victim = children.remove(0);
    victim.kill().unwrap(); // SIGKILL
    victim.wait().unwrap();
    let errs = finish_all(children).await;
    let (missing, extra, twice) = union(&site, &procs.iter().collect::<Vec<_>>());
    assert!(missing.is_empty(), "lost: {missing:?}\n{errs:?}");
    assert!(extra.is_empty(), "not in the ground truth: {extra:?}");
    // Only what the killed process had leased (its 8 workers) may be fetched again.
    assert!(twice.len() <= 8, "recorded twice: {twice:?}");
    let counts: Vec<usize> = procs.iter().map(Process::line_count).collect();
    assert!(counts.iter().all(|&n| n > 0), "{counts:?}");
    let observer = site.observer();
    assert!(
        observer.max_concurrent_all() <= 2,
        "{} requests in flight at once to the one address",
        observer.max_concurrent_all()
    );
    let log = observer.log();
    for (host, _) in observer.host_stats() {
        let robots = log
            .iter()
            .filter(|r| r.host == host && r.path == "/robots.txt")
            .count();
        // Once for all three; again only where the killed process held the claim.
        assert!(
            (1..=2).contains(&robots),
            "{host}: robots.txt fetched {robots} times"
        );
    }
    assert_spaced(&log, 5.0);
    site.stop().await;
}
