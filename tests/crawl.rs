//! `crawler crawl` end to end against the local test site: the pages fetched equal the site's
//! ground truth exactly, robots.txt is obeyed as seen from the server, and the output is
//! well-formed.

use std::collections::BTreeMap;

use testsite::{Expected, SiteConfig, TestSite};

use crate::util::{crawler, recorded, stderr};

pub(crate) fn read_pages(dir: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("pages.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is a JSON object"))
        .collect()
}

/// Crawls `site` from its seed with `config` (TOML text; the scope is set to every `.test`
/// host and names resolve to 127.0.0.1) and returns the output directory (kept alive by the
/// returned guard). Panics unless the crawler exits 0.
pub(crate) async fn crawl_site(
    site: &TestSite,
    config: &str,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("crawler.toml");
    // The site's domain is the scope unless the test sets its own.
    let scope = if config.contains("[frontier]") {
        ""
    } else {
        "\n[frontier]\nscope = \"domains\"\ndomains = [\"test\"]\n"
    };
    std::fs::write(&file, format!("{config}{scope}")).unwrap();
    let out = dir.path().join("out");
    let mut cmd = crawler();
    cmd.args([
        "crawl",
        "--config",
        file.to_str().unwrap(),
        "--seed",
        &site.site().seed_url(),
    ])
    .args([
        "--out",
        out.to_str().unwrap(),
        "--resolve",
        "*.test=127.0.0.1",
    ])
    .env("RUST_LOG", "warn");
    let output = crate::util::output(cmd).await;
    assert!(output.status.success(), "{}", stderr(&output));
    (dir, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_equals_ground_truth() {
    let site = TestSite::start(SiteConfig {
        pages: 400,
        hosts: 5,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let (_dir, out) = crawl_site(
        &site,
        "[crawl]\nconcurrency = 16\nprogress_secs = 60\n[fetch]\nretry_base_ms = 20\n\
         [politeness]\nbackoff_base_ms = 20\ndelay_ms = 0\nmax_per_host = 4\n",
    )
    .await;

    let pages = read_pages(&out);
    let mut fetched: BTreeMap<String, Option<u64>> = BTreeMap::new();
    for p in &pages {
        let url = p["url"].as_str().unwrap().to_owned();
        let previous = fetched.insert(url.clone(), p["status"].as_u64());
        assert!(previous.is_none(), "{url} fetched twice");
        for key in [
            "final_url",
            "depth",
            "content_type",
            "bytes",
            "links_found",
            "links_new",
            "fetch_ms",
            "fetched_at",
            "error",
        ] {
            assert!(p.get(key).is_some(), "record lacks {key}: {p}");
        }
        // A one-shot crawl (`recrawl.policy = "none"`) writes the records it always wrote:
        // every key is one of these.
        let known = [
            "url",
            "final_url",
            "status",
            "depth",
            "parent",
            "via",
            "sitemap",
            "lastmod",
            "content_type",
            "bytes",
            "links_found",
            "links_new",
            "fetch_ms",
            "fetched_at",
            "attempts",
            "truncated",
            "error",
        ];
        for key in p.as_object().unwrap().keys() {
            assert!(
                known.contains(&key.as_str()),
                "a one-shot record with {key}: {p}"
            );
        }
    }
    let truth = site.site().ground_truth();
    if let Err(e) = truth.check(pages.iter().map(recorded)) {
        panic!("{e}");
    }
    // How each URL was found: the seed, redirect targets, links.
    let via = |path: &str| {
        let url = format!("{}{path}", site.site().origin(0));
        pages.iter().find(|p| p["url"] == url.as_str()).unwrap()["via"].clone()
    };
    assert_eq!(via("/"), "seed");
    assert_eq!(via("/redirect/chain-end"), "redirect");
    assert_eq!(via("/redirect/chain/3"), "link");
    // Sitemaps: a page only they list, with its lastmod; the files' own records.
    let record = |path: &str| {
        let url = format!("{}{path}", site.site().origin(0));
        pages
            .iter()
            .find(|p| p["url"] == url.as_str())
            .unwrap()
            .clone()
    };
    let listed = record("/from-sitemap/0.html");
    assert_eq!(listed["via"], "sitemap", "{listed}");
    assert_eq!(listed["lastmod"], "2026-11-24T10:00:00+00:00", "{listed}");
    assert_eq!(
        record("/from-sitemap/1.html")["lastmod"],
        "2026-11-02",
        "gzip'd"
    );
    let file = record("/sitemaps/pages.xml");
    assert_eq!(file["sitemap"], true, "{file}");
    assert_eq!(file["links_found"], 3, "{file}");
    assert_eq!(
        file["error"], "sitemap: 1 entries not on this sitemap's host ignored",
        "{file}"
    );
    for (url, expected) in &truth.urls {
        if *expected == Expected::RobotsUnavailable {
            let record = pages.iter().find(|p| p["url"] == url.as_str()).unwrap();
            assert_eq!(record["error"], "robots.txt answered 500", "{record}");
        }
    }

    // Seen from the server: nothing disallowed was requested.
    for r in site.observer().log() {
        let private = r.path.starts_with("/private/") && !r.path.starts_with("/private/public/");
        let rules_host = !["h1.test", "h3.test"].contains(&r.host.as_str());
        assert!(
            !(private && rules_host),
            "requested disallowed {} {}",
            r.host,
            r.path
        );
        assert!(
            r.host != "h2.test" || r.path == "/robots.txt",
            "requested {} on the robots-500 host",
            r.path
        );
        assert!(!r.path.starts_with("/orphan/"));
    }
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("stats.json")).unwrap()).unwrap();
    assert_eq!(stats["pages"].as_u64().unwrap() as usize, pages.len());
    assert_eq!(stats["stopped_by"], "finished");
    assert!(stats["robots_disallowed"].as_u64().unwrap() > 0);

    // The heartbeat's last word, and what `crawler health` makes of it.
    let status: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("status.json")).unwrap()).unwrap();
    assert_eq!(status["state"], "finished");
    assert_eq!(status["pages"].as_u64().unwrap() as usize, pages.len());
    assert_eq!(status["queued"], 0);
    let health = crawler()
        .args(["health", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(health.status.success(), "{}", stderr(&health));
    let line = String::from_utf8_lossy(&health.stdout);
    assert!(line.starts_with("ok: crawl ended (finished)"), "{line}");
    let nowhere = crawler()
        .args(["health", "--out", out.join("nowhere").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(nowhere.status.code(), Some(1), "{}", stderr(&nowhere));
    assert!(stderr(&nowhere).contains("unhealthy: no heartbeat"));
    site.stop().await;
}

#[test]
fn config_errors_are_all_reported_with_exit_64() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.toml");
    std::fs::write(
        &config,
        "[crawl]\nconcurrency = \"many\"\nmystery = 1\n[fetch]\nmax_body_bytes = 0\n",
    )
    .unwrap();
    let output = crawler()
        .args([
            "crawl",
            "--config",
            config.to_str().unwrap(),
            "--seed",
            "http://x.test/",
        ])
        .env("CRAWLER_POLITENESS_DELAY_MS", "-1")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(64));
    let err = stderr(&output);
    for key in [
        "crawl.concurrency",
        "crawl.mystery",
        "fetch.max_body_bytes",
        "politeness.delay_ms",
    ] {
        assert!(err.contains(key), "{key} not named in\n{err}");
    }
    assert!(err.contains("bad.toml:2"), "{err}");
    let check = crawler()
        .args(["config", "check", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(64));
}

#[test]
fn default_config_round_trips() {
    let output = crawler().args(["config", "default"]).output().unwrap();
    assert!(output.status.success());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(&file, &output.stdout).unwrap();
    let shipped =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/crawler.toml")).unwrap();
    assert_eq!(String::from_utf8(output.stdout).unwrap(), shipped);
    let check = crawler()
        .args(["config", "check", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", stderr(&check));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_sitemaps_the_crawl_equals_that_ground_truth() {
    let site = TestSite::start(SiteConfig {
        pages: 200,
        hosts: 3,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let (_dir, out) = crawl_site(
        &site,
        "[crawl]\nconcurrency = 8\nsitemaps = false\n[fetch]\nretry_base_ms = 20\n\
         [politeness]\nbackoff_base_ms = 20\ndelay_ms = 0\nmax_per_host = 4\n",
    )
    .await;
    let truth = site
        .site()
        .ground_truth_for(testsite::Crawler { sitemaps: false });
    if let Err(e) = truth.check(read_pages(&out).iter().map(recorded)) {
        panic!("{e}");
    }
    assert!(!site
        .observer()
        .log()
        .iter()
        .any(|r| r.path.contains("sitemap")));
    site.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_pages_are_read_in_pieces_and_keep_every_link() {
    // Pages of 8 MB whose links all come after the filler: the extractor reads them in
    // pieces of 256 KiB as they arrive, and must find the same links as in one piece.
    let site = TestSite::start(SiteConfig {
        pages: 60,
        hosts: 2,
        big_pages: 3,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let (_dir, out) = crawl_site(
        &site,
        "[crawl]\nconcurrency = 8\n[fetch]\nretry_base_ms = 20\n\
         [politeness]\nbackoff_base_ms = 20\ndelay_ms = 0\nmax_per_host = 4\n",
    )
    .await;
    let pages = read_pages(&out);
    if let Err(e) = site.site().ground_truth().check(pages.iter().map(recorded)) {
        panic!("{e}");
    }
    let big: Vec<_> = pages
        .iter()
        .filter(|p| p["bytes"].as_u64() > Some(4_000_000))
        .collect();
    assert_eq!(big.len(), 3);
    assert!(big.iter().all(|p| p["links_found"].as_u64() > Some(0)));
    site.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn politeness_seen_from_the_server() {
    let site = TestSite::start(SiteConfig {
        pages: 20,
        hosts: 2,
        extra_links: 2,
        depth: 2,
        crawl_delay: Some(0.2),
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let (_dir, _out) = crawl_site(
        &site,
        "[crawl]\nconcurrency = 8\n[fetch]\nretry_base_ms = 20\n\
         [politeness]\nbackoff_base_ms = 20\ndelay_ms = 100\nmax_per_host = 1\n",
    )
    .await;
    let log = site.observer().log();
    for (host, stats) in site.observer().host_stats() {
        assert!(stats.max_concurrent <= 1, "{host}: {stats:?}");
        let starts: Vec<f64> = log
            .iter()
            .filter(|r| r.host == host)
            .map(|r| r.at_ms)
            .collect();
        // Host 0 announces Crawl-delay: 0.2 (in its robots.txt, which is fetched first).
        let delay = if host == "h0.test" { 200.0 } else { 100.0 };
        // The first gap is robots.txt → the first page, fetched back to back within one lease;
        // from that page on, each fetch starts at least `delay` after the one before. The
        // server sees arrivals, each a little after its start, so single gaps carry the
        // network's jitter; the span from the first page to the last does not add it up: it
        // is at least (n − 1) delays less the first page's start-to-arrival time, bounded
        // here by one delay. (The frontier's contract suite checks every gap exactly.)
        let pages = &starts[1..];
        assert!(pages.len() >= 4, "{host}: {} requests", starts.len());
        let span = pages[pages.len() - 1] - pages[0];
        let floor = (pages.len() - 2) as f64 * delay;
        assert!(
            span >= floor,
            "{host}: {} page requests in {span:.0} ms, at least {floor:.0} expected",
            pages.len()
        );
    }
    // 503 and 429 with Retry-After: 1 — the retry came at least a second later. No slack:
    // the wait starts when the first answer has come back, after that request arrived.
    for path in ["/busy", "/slow-down"] {
        let times: Vec<f64> = log
            .iter()
            .filter(|r| r.host == "h1.test" && r.path == path)
            .map(|r| r.at_ms)
            .collect();
        assert_eq!(times.len(), 2, "{path}: {times:?}");
        assert!(
            times[1] - times[0] >= 1000.0,
            "{path}: retried after {:.0} ms",
            times[1] - times[0]
        );
    }
    site.stop().await;
}

/// A seed whose host refuses connections: its robots.txt cannot be had, so the seed gets a
/// record saying so, `stats.json` names the host, the summary says why, and with not one
/// seed fetched the exit code is 69 (EX_UNAVAILABLE). With robots.txt ignored the seed's
/// own fetch fails, with the same exit code.
#[test]
fn a_seed_that_refuses_connections_exits_69_and_says_why() {
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let seed = format!("http://127.0.0.1:{port}/");
    for ignore_robots in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut cmd = crawler();
        cmd.args(["crawl", "--seed", &seed, "--out", out.to_str().unwrap()])
            .env("CRAWLER_FETCH_MAX_RETRIES", "0")
            .env("RUST_LOG", "info");
        if ignore_robots {
            cmd.arg("--ignore-robots");
        }
        let output = cmd.output().unwrap();
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(69), "{err}");
        assert!(err.contains("not one seed could be fetched"), "{err}");
        assert!(err.to_lowercase().contains("connection refused"), "{err}");
        let pages = read_pages(&out);
        assert_eq!(pages.len(), 1, "{pages:?}");
        assert_eq!(pages[0]["url"], seed.as_str());
        assert!(pages[0]["status"].is_null());
        let error = pages[0]["error"].as_str().unwrap().to_lowercase();
        assert!(error.contains("connection refused"), "{error}");
        let stats: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("stats.json")).unwrap()).unwrap();
        assert_eq!(stats["seeds_fetched"], 0);
        let origin = format!("http://127.0.0.1:{port}");
        if ignore_robots {
            assert!(stats["robots_unreachable"].as_object().unwrap().is_empty());
        } else {
            assert!(error.starts_with("robots.txt unreachable"), "{error}");
            let why = stats["robots_unreachable"][origin.as_str()]
                .as_str()
                .unwrap();
            assert!(why.to_lowercase().contains("connection refused"), "{stats}");
            assert!(err.contains("robots.txt unreachable on 1 host(s)"), "{err}");
        }
    }
}

/// The README's offline example as written — flags only, no file of settings — crawls all
/// five hosts of the test site to its ground truth, and the last line says how it ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_offline_example_crawls_all_five_hosts() {
    let site = TestSite::start(SiteConfig::default()).await.unwrap();
    assert_eq!(site.site().config().hosts, 5);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl-test");
    let example = |extra: &[&str]| {
        let mut cmd = crawler();
        // In an empty directory: no ./crawler.toml is read.
        cmd.current_dir(dir.path())
            .args(["crawl", "--seed", &site.site().seed_url()])
            .args(["--resolve", "*.test=127.0.0.1"])
            .args(["--scope", "domains", "--domain", "test", "--delay-ms", "0"])
            .args(["--out", out.to_str().unwrap()])
            .args(extra)
            .env_remove("CRAWLER_CONFIG")
            .env("RUST_LOG", "info");
        cmd
    };
    let cmd = example(&[]);
    let output = crate::util::output(cmd).await;
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    assert!(log.contains("crawl finished: "), "{log}");
    let pages = read_pages(&out);
    let hosts: std::collections::BTreeSet<String> = pages
        .iter()
        .filter_map(|p| url::Url::parse(p["url"].as_str()?).ok())
        .filter_map(|u| u.host_str().map(str::to_owned))
        .collect();
    assert_eq!(hosts.len(), 5, "{hosts:?}");
    if let Err(e) = site.site().ground_truth().check(pages.iter().map(recorded)) {
        panic!("{e}");
    }

    // A budget stops it in the words the README gives.
    let cmd = example(&["--fresh", "--max-pages", "10"]);
    let output = crate::util::output(cmd).await;
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    assert!(
        log.contains("crawl page budget reached (crawl.max_pages): 10 pages"),
        "{log}"
    );
}

/// `--max-duration` ends a crawl that would go on far longer as a signal does: what is in
/// flight is recorded, the exit status is 0, the summary says why — and the same command
/// resumes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_duration_stops_a_long_crawl_cleanly_and_a_rerun_resumes() {
    // 2,000 pages answering after 100 ms, one at a time per host: minutes of crawling.
    let site = TestSite::start(SiteConfig {
        pages: 2_000,
        hosts: 2,
        latency_ms: 100,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let dir = crate::util::CrawlDir::new(
        "[crawl]\nconcurrency = 4\n[politeness]\ndelay_ms = 0\nmax_per_host = 1\n\
         [frontier]\nscope = \"domains\"\ndomains = [\"test\"]\n",
    );
    let run = |dir: &crate::util::CrawlDir| {
        let mut cmd = dir.crawl(&site.site().seed_url());
        cmd.args(["--max-duration", "2"]).env("RUST_LOG", "info");
        cmd
    };
    let cmd = run(&dir);
    let first = crate::util::output(cmd).await;
    let log = stderr(&first);
    assert!(first.status.success(), "{log}");
    assert!(
        log.contains("crawl time limit reached (crawl.max_duration_secs)"),
        "{log}"
    );
    let stats = |out: &std::path::Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(out.join("stats.json")).unwrap()).unwrap()
    };
    let s1 = stats(&dir.out);
    assert_eq!(s1["stopped_by"], "max_duration", "{s1}");
    let done = s1["pages_total"].as_u64().unwrap();
    assert!(done > 0 && done < 1_000, "{s1}");
    assert_eq!(read_pages(&dir.out).len() as u64, done);
    // Again: it goes on from where it stopped, with nothing fetched twice.
    let cmd = run(&dir);
    let second = crate::util::output(cmd).await;
    assert!(second.status.success(), "{}", stderr(&second));
    let s2 = stats(&dir.out);
    assert!(s2["pages_total"].as_u64().unwrap() > done, "{s2}");
    let pages = read_pages(&dir.out);
    let urls: std::collections::BTreeSet<&str> =
        pages.iter().filter_map(|p| p["url"].as_str()).collect();
    assert_eq!(urls.len(), pages.len(), "a URL recorded twice");
}
