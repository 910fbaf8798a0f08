//! `crawler serve` as a process: external fetchers alone (`examples/fetcher.py`, Python's
//! standard library) crawl the test site to its ground truth, a fetcher killed with its
//! leases out loses no URL, `/metrics` parses with Prometheus' own Python parser and its
//! counters equal `stats.json`; a public address without a token is refused.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use testsite::{SiteConfig, TestSite};

use crate::util::{crawler, recorded, terminate, under_ulimit, CrawlDir};

/// Starts `crawler serve` and returns it with the address it printed.
fn start_serve(dir: &CrawlDir, workers: u32) -> (Child, String) {
    let mut child = dir
        .serve()
        .env("CRAWLER_CRAWL_WORKERS", workers.to_string())
        .spawn()
        .expect("crawler serve runs");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("serve printed its address").unwrap();
        if let Some(rest) = line.split("http://").nth(1) {
            break rest.split('/').next().unwrap().to_owned();
        }
    };
    // Keep draining stderr so the process never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}

fn fetcher(api: &str, args: &[&str]) -> Command {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fetcher.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script)
        .args([
            "--api",
            &format!("http://{api}"),
            "--resolve",
            "*.test=127.0.0.1",
        ])
        .args(args);
    cmd
}

/// Python's `prometheus_client` (installed by scripts/test.sh); `None` when it is missing
/// and the run does not require it.
fn prometheus_parser_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import prometheus_client"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok && std::env::var_os("REQUIRE_SERVICE_TEST_TOOLS").is_some() {
        panic!("python3 -m pip install prometheus_client (scripts/test.sh installs it)");
    }
    ok
}

/// `/metrics` parsed by `prometheus_client`'s OpenMetrics parser: sample name (with its
/// labels) → value.
fn parsed_metrics(api: &str) -> serde_json::Value {
    let program = format!(
        "import json, urllib.request\n\
         from prometheus_client.openmetrics.parser import text_string_to_metric_families\n\
         text = urllib.request.urlopen('http://{api}/metrics').read().decode()\n\
         out = {{}}\n\
         for fam in text_string_to_metric_families(text):\n\
         \x20   for s in fam.samples:\n\
         \x20       labels = ','.join(f'{{k}}={{v}}' for k, v in sorted(s.labels.items()))\n\
         \x20       out[s.name + ('{{' + labels + '}}' if labels else '')] = s.value\n\
         print(json.dumps(out))\n"
    );
    let output = Command::new("python3")
        .args(["-c", &program])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_fetchers_alone_crawl_to_the_ground_truth_and_a_killed_one_loses_nothing() {
    let site = TestSite::start(SiteConfig {
        pages: 1000,
        hosts: 3,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let dir = CrawlDir::new(
        "[politeness]\ndelay_ms = 0\nmax_per_host = 8\n[fetch]\nretry_base_ms = 20\n\
         [frontier]\nscope = \"domains\"\ndomains = [\"test\"]\n\
         [service]\nallow_private_seeds = true\n",
    );
    let out = dir.out.clone();
    let (serve, api) = start_serve(&dir, 0);
    let seed = site.site().seed_url();
    let check_metrics = prometheus_parser_available();

    let result = tokio::task::spawn_blocking(move || {
        // A fetcher that takes leases and dies with them (kill -9).
        let mut stalled = fetcher(
            &api,
            &[
                "--seed",
                &seed,
                "--stall",
                "--batch",
                "20",
                "--lease-secs",
                "2",
            ],
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
        let mut line = String::new();
        BufReader::new(stalled.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let leased: u64 = line.trim().trim_start_matches("leased ").parse().unwrap();
        assert!(leased > 0, "{line}");
        stalled.kill().unwrap();
        stalled.wait().unwrap();
        // A healthy fetcher finishes the crawl, the dead one's URLs included.
        let done = fetcher(&api, &["--exit-when-idle", "--threads", "4"])
            .output()
            .unwrap();
        assert!(
            done.status.success(),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
        let metrics = check_metrics.then(|| parsed_metrics(&api));
        (leased, metrics)
    })
    .await
    .unwrap();
    terminate(serve);
    let (leased, metrics) = result;

    let pages: Vec<serde_json::Value> = std::fs::read_to_string(out.join("pages.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    if let Err(e) = site.site().ground_truth().check(pages.iter().map(recorded)) {
        panic!("{e}");
    }

    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("stats.json")).unwrap()).unwrap();
    if let Some(m) = metrics {
        let num = |k: &str| m[k].as_f64().unwrap_or_else(|| panic!("{k} missing: {m}"));
        assert_eq!(num("crawler_pages_total"), stats["pages"].as_f64().unwrap());
        let by_class: f64 = m
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.starts_with("crawler_fetches_total{"))
            .map(|(_, v)| v.as_f64().unwrap())
            .sum();
        assert_eq!(by_class, stats["pages"].as_f64().unwrap());
        for (metric, field) in [
            ("crawler_links_offered_total", "offered"),
            ("crawler_links_admitted_total", "admitted"),
            ("crawler_links_duplicate_total", "duplicates"),
        ] {
            assert_eq!(
                num(metric),
                stats["frontier"][field].as_f64().unwrap(),
                "{metric}"
            );
        }
        assert!(num("crawler_leases_expired_total") >= leased as f64);
        assert!(num("crawler_fetch_duration_seconds_count") > 0.0);
    }
}

/// External fetchers over leases count against an address like built-in workers: eight
/// host names on 127.0.0.1 under `max_per_ip = 2` and `ip_delay_ms = 5`, crawled by a fetcher
/// with eight threads and no built-in workers — the server never sees more than two
/// requests at once (the crawler's own robots.txt fetches included), and the crawl reaches
/// the ground truth.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_fetchers_keep_an_address_budget() {
    let site = TestSite::start(SiteConfig {
        pages: 40,
        hosts: 8,
        // Every answer takes 20 ms, so that fetches overlap unless something stops them.
        host_latency_ms: vec![20],
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let dir = CrawlDir::new(
        "[politeness]\ndelay_ms = 0\nmax_per_host = 8\nip_delay_ms = 5\nmax_per_ip = 2\n\
         [fetch]\nretry_base_ms = 20\n\
         [frontier]\nscope = \"domains\"\ndomains = [\"test\"]\n\
         [service]\nallow_private_seeds = true\n",
    );
    let out = dir.out.clone();
    let (serve, api) = start_serve(&dir, 0);
    let seed = site.site().seed_url();
    let done = tokio::task::spawn_blocking(move || {
        fetcher(
            &api,
            &["--seed", &seed, "--exit-when-idle", "--threads", "8"],
        )
        .output()
        .unwrap()
    })
    .await
    .unwrap();
    terminate(serve);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let pages = crate::crawl::read_pages(&out);
    if let Err(e) = site.site().ground_truth().check(pages.iter().map(recorded)) {
        panic!("{e}");
    }
    let most = site.observer().max_concurrent_all();
    assert!(most <= 2, "{most} requests at once to the one address");
}

#[test]
fn a_public_address_without_a_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let output = crawler()
        .args(["serve", "--listen", "0.0.0.0:0", "--out"])
        .arg(dir.path().join("out"))
        .env_remove("CRAWLER_SERVICE_API_TOKEN")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "{err}");
    assert!(err.contains("api_token"), "{err}");
}

#[test]
fn a_token_too_short_or_with_spaces_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for token in ["short", "sixteen chars ok", "                "] {
        let output = crawler()
            .args(["serve", "--listen", "127.0.0.1:0", "--out"])
            .arg(dir.path().join("out"))
            .env("CRAWLER_SERVICE_API_TOKEN", token)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(64), "{token:?}: {err}");
        assert!(err.contains("service.api_token"), "{err}");
    }
}

/// The soft and hard open-file limits of process `pid`, from `/proc/PID/limits`.
fn open_file_limits(pid: u32) -> (String, String) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("a Max open files line");
    let mut fields = line["Max open files".len()..].split_whitespace();
    (
        fields.next().unwrap().to_owned(),
        fields.next().unwrap().to_owned(),
    )
}

#[test]
fn serve_raises_a_low_soft_open_file_limit_to_the_hard_one() {
    let (_, hard) = open_file_limits(std::process::id());
    if hard != "unlimited" && hard.parse::<u64>().unwrap_or(0) <= 512 {
        eprintln!("skipped: the hard open-file limit here is {hard}, nothing to raise to");
        return;
    }
    let dir = CrawlDir::new("");
    // A shell lowers the soft limit to 512, then becomes `crawler serve`.
    let mut child = under_ulimit("-Sn 512", &dir.serve())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (_addr, log) = crate::util::watch_serve(&mut child);
    let (soft, hard_of_serve) = open_file_limits(child.id());
    assert_eq!(hard_of_serve, hard);
    assert_eq!(soft, hard, "{}", log.lock().unwrap());
    terminate(child);
}

/// `crawler demo` with `--listen`, until it prints where it listens: (child, the line, the
/// lines before it).
fn start_demo(listen: &str, out: &Path) -> (Child, String, String) {
    let mut child = crawler()
        .args(["demo", "--listen", listen, "--pages", "100", "--out"])
        .arg(out)
        .env_remove("CRAWLER_SERVICE_API_TOKEN")
        .env("RUST_LOG", "warn")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut before = String::new();
    let line = loop {
        let line = lines.next().expect("demo printed its address").unwrap();
        if line.contains("dashboard on http://") {
            break line;
        }
        before.push_str(&line);
        before.push('\n');
    };
    std::thread::spawn(move || for _ in lines {});
    (child, line, before)
}

#[test]
fn the_demo_off_loopback_makes_a_token_and_says_when_its_port_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    let (demo, line, before) = start_demo("0.0.0.0:0", &dir.path().join("a"));
    // "… dashboard on http://0.0.0.0:PORT/ (Ctrl-C stops)"
    let port = line
        .split("http://0.0.0.0:")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    let token = before
        .split("this demo's is ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no token printed: {before}"))
        .to_owned();
    assert!(token.len() >= 16, "{token}");
    let api = format!("127.0.0.1:{port}");
    let anon = crate::util::http(&api, "GET", "/api/v1/status", None, &[]);
    assert!(anon.starts_with("HTTP/1.1 401"), "{anon}");
    let auth = format!("Bearer {token}");
    // And it crawls its test site (an operator's seed: the SSRF guard allows it).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let ok = crate::util::http(
            &api,
            "GET",
            "/api/v1/status",
            None,
            &[("Authorization", &auth)],
        );
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        let body: serde_json::Value =
            serde_json::from_str(ok.split("\r\n\r\n").nth(1).unwrap_or("")).unwrap_or_default();
        if body["by_status"]["200"].as_u64().unwrap_or(0) > 5 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the demo does not crawl: {ok}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    terminate(demo);

    // A taken port: another one, and a warning that says so.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (demo, line, before) = start_demo(&addr, &dir.path().join("b"));
    assert!(!line.contains(&addr), "{line}");
    assert!(
        before.contains(&format!("WARNING: {addr} is taken")),
        "{before}"
    );
    terminate(demo);
}

/// Whether headless Chromium, chromedriver and selenium are here (scripts/test.sh installs
/// them); without them the test is skipped unless the run requires them.
fn browser_available() -> bool {
    let tools = ["chromium", "chromedriver"].iter().all(|t| {
        Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let selenium = Command::new("python3")
        .args(["-c", "import selenium"])
        .status()
        .is_ok_and(|s| s.success());
    let ok = tools && selenium;
    if !ok && std::env::var_os("REQUIRE_SERVICE_TEST_TOOLS").is_some() {
        panic!("chromium, chromedriver or selenium missing (scripts/test.sh installs them)");
    }
    ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_in_a_real_browser_adds_a_seed_and_shows_the_crawl() {
    if !browser_available() {
        eprintln!("skipped: no chromium/chromedriver/selenium");
        return;
    }
    let site = TestSite::start(SiteConfig {
        pages: 2000,
        hosts: 2,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    // A paced crawl, so the count is seen rising; pages come due again after 2 s, so the
    // recrawl cards fill.
    let dir = CrawlDir::new(
        "[crawl]\nconcurrency = 4\n[politeness]\ndelay_ms = 20\nmax_per_host = 1\n\
         [frontier]\nscope = \"domains\"\ndomains = [\"test\"]\n\
         [service]\nallow_private_seeds = true\n\
         [recrawl]\npolicy = \"fixed\"\ninterval_secs = 2\nmin_interval_secs = 1\n",
    );
    // A second crawl of the service, as a url-frontier client left it: the dashboard offers it.
    std::fs::create_dir_all(dir.out.join("crawls/news")).unwrap();
    let (serve, api) = start_serve(&dir, 4);
    let seed = site.site().seed_url();
    let host = seed
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    std::fs::create_dir_all(&target).unwrap();
    let shot = target.join("dashboard.png");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dashboard.py");
    let output = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .arg(script)
            .args([&format!("http://{api}/"), &seed, &host])
            .arg(&shot)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    terminate(serve);
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// schemathesis (PyPI; scripts/test.sh installs it) against `/openapi.json` for a bounded
/// number of generated requests, with all its checks: no 5xx, no response outside the
/// document, no valid request refused, no invalid one accepted, 405 for undeclared methods —
/// once without a token, once with one (the document then declares the bearer requirement,
/// and schemathesis checks that requests without it are refused). The event stream never
/// ends, so it is left out. Nothing is fetched: no workers, robots.txt off, and the hosts
/// generated seeds name are never contacted.
#[test]
fn schemathesis_finds_no_response_outside_the_openapi_document() {
    let found = Command::new("sh")
        .args(["-c", "command -v schemathesis"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("REQUIRE_SERVICE_TEST_TOOLS").is_none(),
            "schemathesis missing (scripts/test.sh installs it)"
        );
        eprintln!("skipped: no schemathesis");
        return;
    }
    for token in [None, Some("schemathesis-token-0123")] {
        let mut toml = "[crawl]\nrespect_robots = false\n".to_owned();
        if let Some(t) = token {
            toml.push_str(&format!("[service]\napi_token = \"{t}\"\n"));
        }
        let dir = CrawlDir::new(&toml);
        let (serve, api) = start_serve(&dir, 0);
        let mut cmd = Command::new("timeout");
        cmd.args(["600", "schemathesis", "run"])
            .arg(format!("http://{api}/openapi.json"))
            .args([
                "--checks",
                "all",
                "--max-examples",
                "60",
                "--seed",
                "20261125",
                "--exclude-path",
                "/api/v1/events",
                "--request-timeout",
                "30",
            ]);
        if let Some(t) = token {
            cmd.args(["--header", &format!("Authorization: Bearer {t}")]);
        }
        let output = cmd
            .env("NO_COLOR", "1")
            // Its cache (`.schemathesis/`) goes with the test's directory, not into the checkout.
            .current_dir(dir.path())
            .output()
            .unwrap();
        terminate(serve);
        let report = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "token {token:?}:\n{report}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(report.contains("passed"), "{report}");
    }
}
