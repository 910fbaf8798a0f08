//! Several `crawler crawl` processes sharing one frontier in a real, private Redis: together
//! they crawl the test site to its ground truth with every URL recorded once, politeness
//! holds over all of them together, and neither a `kill -9` of one process nor a restart of
//! Redis (AOF on) loses a URL.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use test_support::redis_server::RedisServer;
use testsite::{SiteConfig, TestSite};

use crate::util::{crawler, stderr, CrawlDir};

/// A private Redis (see [`RedisServer::for_test`]).
pub(crate) fn redis(extra: &[&str]) -> Option<RedisServer> {
    RedisServer::for_test(extra)
}

/// One crawler process of a shared crawl: its own directory and output.
pub(crate) struct Process {
    dir: CrawlDir,
    pub(crate) out: PathBuf,
}

impl Process {
    /// `politeness`: lines of the `[politeness]` section.
    pub(crate) fn new(redis_url: &str, politeness: &str) -> Self {
        Self::with_frontier(redis_url, politeness, "")
    }

    /// As [`new`](Self::new), with more lines of the `[frontier]` section.
    pub(crate) fn with_frontier(redis_url: &str, politeness: &str, frontier: &str) -> Self {
        let dir = CrawlDir::new(&format!(
            "[crawl]\nconcurrency = 8\nprogress_secs = 60\n\
             [fetch]\nretry_base_ms = 20\n[politeness]\nbackoff_base_ms = 20\n{politeness}\n\
             [frontier]\nscope = \"domains\"\ndomains = [\"test\"]\n\
             backend = \"redis\"\nredis_url = \"{redis_url}\"\ncrawl_id = \"shared\"\n\
             lease_secs = 2\n{frontier}\n"
        ));
        Self {
            out: dir.out.clone(),
            dir,
        }
    }

    pub(crate) fn spawn(&self, seed: &str) -> Child {
        self.spawn_with(seed, &[])
    }

    /// As [`spawn`](Self::spawn), with more environment (`CRAWLER_*` settings).
    pub(crate) fn spawn_with(&self, seed: &str, env: &[(&str, &str)]) -> Child {
        self.dir
            .crawl(seed)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    pub(crate) fn lines(&self) -> Vec<(String, Option<u64>)> {
        let text = std::fs::read_to_string(self.out.join("pages.jsonl")).unwrap_or_default();
        whole_lines(&text)
    }

    pub(crate) fn line_count(&self) -> usize {
        std::fs::read(self.out.join("pages.jsonl"))
            .unwrap_or_default()
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
    }
}

/// The whole lines of a `pages.jsonl` as (url, status); a partial last line (a process killed
/// while writing it) is not a record.
fn whole_lines(text: &str) -> Vec<(String, Option<u64>)> {
    let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    whole
        .lines()
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}"));
            (v["url"].as_str().unwrap().to_owned(), v["status"].as_u64())
        })
        .collect()
}

/// Waits for a process to end (at most `limit`), returning its stderr; panics on a failure.
fn finish(mut child: Child, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("a crawler did not finish in {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{:?}: {err}", out.status);
    err
}

/// Kills every child and returns what each wrote to stderr (a test's diagnosis when a crawl
/// stalls).
pub(crate) fn kill_all(children: Vec<Child>) -> Vec<String> {
    children
        .into_iter()
        .map(|mut c| {
            let _ = c.kill();
            c.wait_with_output().map(|o| stderr(&o)).unwrap_or_default()
        })
        .collect()
}

/// A test site of `pages` pages on `hosts` hosts, answering each page after `latency_ms`,
/// and `n` crawler processes sharing the crawl in `redis_url` (`politeness`: their
/// `[politeness]` lines), started.
pub(crate) async fn start_shared(
    redis_url: &str,
    (pages, hosts, latency_ms): (u64, u32, u64),
    n: usize,
    politeness: &str,
) -> (TestSite, Vec<Process>, Vec<Child>) {
    start_shared_with(redis_url, (pages, hosts, latency_ms), n, politeness, "").await
}

/// As [`start_shared`], with more lines of the processes' `[frontier]` section.
pub(crate) async fn start_shared_with(
    redis_url: &str,
    (pages, hosts, latency_ms): (u64, u32, u64),
    n: usize,
    politeness: &str,
    frontier: &str,
) -> (TestSite, Vec<Process>, Vec<Child>) {
    let site = TestSite::start(SiteConfig {
        pages,
        hosts,
        latency_ms,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let seed = site.site().seed_url();
    let procs: Vec<Process> = (0..n)
        .map(|_| Process::with_frontier(redis_url, politeness, frontier))
        .collect();
    let children = procs.iter().map(|p| p.spawn(&seed)).collect();
    (site, procs, children)
}

/// Waits (off the runtime) for every process to end successfully: their stderr.
pub(crate) async fn finish_all(children: Vec<Child>) -> Vec<String> {
    tokio::task::spawn_blocking(move || {
        children
            .into_iter()
            .map(|c| finish(c, Duration::from_secs(300)))
            .collect()
    })
    .await
    .unwrap()
}

/// The union of the processes' records against the ground truth: (missing, extra, twice).
pub(crate) fn union(
    site: &TestSite,
    processes: &[&Process],
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let truth = site.site().ground_truth();
    let mut times: BTreeMap<String, u32> = BTreeMap::new();
    for p in processes {
        for (url, status) in p.lines() {
            if let Some(testsite::Expected::Status(s)) = truth.urls.get(&url) {
                assert_eq!(status, Some(u64::from(*s)), "{url}");
            }
            *times.entry(url).or_default() += 1;
        }
    }
    let missing = truth
        .urls
        .keys()
        .filter(|u| !times.contains_key(*u))
        .cloned()
        .collect();
    let extra = times
        .keys()
        .filter(|u| !truth.urls.contains_key(*u))
        .cloned()
        .collect();
    let twice = times
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(u, _)| u)
        .collect();
    (missing, extra, twice)
}

/// The union of the processes' records is the ground truth (none missing, none outside it;
/// `errs`: their stderr, shown on a failure): the URLs recorded twice.
pub(crate) fn assert_whole(site: &TestSite, procs: &[Process], errs: &[String]) -> Vec<String> {
    let (missing, extra_urls, twice) = union(site, &procs.iter().collect::<Vec<_>>());
    assert!(missing.is_empty(), "lost: {missing:?}\n{errs:?}");
    assert!(
        extra_urls.is_empty(),
        "not in the ground truth: {extra_urls:?}"
    );
    twice
}

/// A `crawler crawl` of the shared frontier at `redis_url` that cannot start: its exit code
/// and stderr.
pub(crate) fn refused_start(redis_url: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = crawler()
        .args([
            "crawl",
            "--seed",
            "http://a.test/",
            "--frontier-redis",
            redis_url,
        ])
        .args(["--out", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    (out.status.code(), stderr(&out))
}

/// Redis out of reach at the start: exit 69 (EX_UNAVAILABLE), naming the URL (not its
/// password) and the error; a crawl id that cannot be a key prefix, and `--fresh`, are usage
/// errors (64).
#[test]
fn an_unreachable_redis_is_69_naming_it() {
    // A loopback port nothing listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redis://user:secret@127.0.0.1:{port}/0");
    let run = |more: &[&str]| {
        crawler()
            .args([
                "crawl",
                "--seed",
                "http://a.test/",
                "--frontier-redis",
                &url,
            ])
            .args(["--out", dir.path().to_str().unwrap()])
            .args(more)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(69), "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(!err.contains("secret"), "the password is shown: {err}");
    let config = dir.path().join("crawler.toml");
    std::fs::write(&config, "[frontier]\ncrawl_id = \"a{b}\"\n").unwrap();
    let out = run(&["--config", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    // --fresh cannot start a shared crawl over (it lives in Redis for every process): 64.
    let out = run(&["--fresh"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(64), "{err}");
    assert!(err.contains("crawl_id"), "{err}");
}

/// `crawler bloom export` writes the shared visited set byte for byte as `crawler bloom build`
/// writes a local filter of the same shape from the same URLs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bloom_export_equals_the_local_filter_of_the_same_urls() {
    let Some(server) = redis(&[]) else { return };
    let urls: Vec<String> = (0..3000)
        .map(|i| format!("http://h{}.test/p/{i}", i % 7))
        .collect();
    admitted(&server, "exported", 0, &urls).await;
    let dir = tempfile::tempdir().unwrap();
    let (exported, built) = (dir.path().join("exported"), dir.path().join("built"));
    let out = crawler()
        .args([
            "bloom",
            "export",
            "--redis",
            &server.url(),
            "--crawl-id",
            "exported",
        ])
        .args(["--out", exported.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let keys = urls.join("\n") + "\n";
    let out = crate::util::run(
        &[
            "bloom",
            "build",
            "--expected",
            "5000",
            "--fpp",
            "0.01",
            "--out",
            built.to_str().unwrap(),
        ],
        keys.as_bytes(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (a, b) = (
        std::fs::read(&exported).unwrap(),
        std::fs::read(&built).unwrap(),
    );
    assert_eq!(a.len(), b.len());
    assert!(a == b, "the exported filter differs from the local one");
    // Another crawl id is no crawl: 66.
    let out = crawler()
        .args([
            "bloom",
            "export",
            "--redis",
            &server.url(),
            "--crawl-id",
            "none",
        ])
        .args(["--out", exported.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(66), "{}", stderr(&out));
}

/// Crawl `id` in `partitions` partitions (0: one), sized for 5,000 URLs at 1%, with `urls`
/// admitted in pages of 100.
async fn admitted(server: &RedisServer, id: &str, partitions: u32, urls: &[String]) {
    use frontier::{Frontier, FrontierConfig, Link};
    let cfg = FrontierConfig {
        expected_urls: 5000,
        fpp: 0.01,
        ..test_support::contract::base_config()
    };
    let settings = redis_frontier::RedisConfig {
        url: server.url(),
        crawl_id: id.into(),
        lease: Duration::from_secs(30),
        holder: None,
        partitions,
    };
    let f = redis_frontier::RedisFrontier::connect(cfg, settings, &[])
        .await
        .unwrap();
    for page in urls.chunks(100) {
        let links = page
            .iter()
            .map(|u| Link::new(url::Url::parse(u).unwrap(), 1))
            .collect();
        f.offer(None, links).await.unwrap();
    }
}

/// A crawl of 4 partitions: `bloom export --merged` writes one Guava filter in which every
/// URL of every partition is found, and refuses (65) a merge whose fill is above --max-fpp.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merged_export_finds_every_partitions_urls() {
    let Some(server) = redis(&[]) else { return };
    let urls: Vec<String> = (0..600)
        .map(|i| format!("http://h{}.test/p/{i}", i % 12))
        .collect();
    admitted(&server, "merged", 4, &urls).await;
    let dir = tempfile::tempdir().unwrap();
    let merged = dir.path().join("merged");
    let export = |extra: &[&str]| {
        crawler()
            .args(["bloom", "export", "--redis", &server.url()])
            .args(["--crawl-id", "merged", "--merged"])
            .args(["--out", merged.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = export(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!dir.path().join("merged.0").exists(), "one file");
    let keys = urls.join("\n") + "\n";
    let out = crate::util::run(
        &["bloom", "query", merged.to_str().unwrap()],
        keys.as_bytes(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let answers = String::from_utf8(out.stdout).unwrap();
    assert_eq!(answers.lines().count(), urls.len());
    assert!(answers.lines().all(|a| a == "1"), "a URL missing");
    let out = export(&["--max-fpp", "1e-12"]);
    assert_eq!(out.status.code(), Some(65), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("without --merged"),
        "{}",
        stderr(&out)
    );
}

pub(crate) fn stats(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("stats.json")).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_crawl_the_site_once_and_politely_together() {
    let Some(server) = redis(&[]) else { return };
    three_crawl_once_and_politely(&server.url(), "").await;
}

/// Three processes on the shared frontier at `redis_url` crawl the 10^4-page, 20-host site to
/// its ground truth: each URL once, each process a share, every one finished, and politeness
/// held over the three together.
/// `frontier`: more lines of the processes' `[frontier]` section.
pub(crate) async fn three_crawl_once_and_politely(redis_url: &str, frontier: &str) {
    let delay = 20.0;
    let (site, procs, children) = start_shared_with(
        redis_url,
        (10_000, 20, 0),
        3,
        "delay_ms = 20\nmax_per_host = 2",
        frontier,
    )
    .await;
    let errs = finish_all(children).await;
    let twice = assert_whole(&site, &procs, &errs);
    let counts: Vec<usize> = procs.iter().map(Process::line_count).collect();
    println!("records per process: {counts:?}");
    assert!(twice.is_empty(), "recorded twice: {twice:?}");
    assert!(
        counts.iter().all(|&n| n > 500),
        "each process took a share: {counts:?}"
    );
    for p in &procs {
        assert_eq!(stats(&p.out)["stopped_by"], "finished");
    }
    // Politeness over the three together, as the server saw it: never more than
    // max_per_host (2) requests of a host at once, and page fetches of a host at least the
    // delay apart over the whole crawl (each process' robots.txt fetch comes back to back
    // with its first page, within one lease; see crawl.rs' politeness test for why the span
    // rather than single gaps).
    let log = site.observer().log();
    for (host, s) in site.observer().host_stats() {
        assert!(s.max_concurrent <= 2, "{host}: {s:?}");
        // The verdict is shared: one process fetched each host's robots.txt.
        let robots = log
            .iter()
            .filter(|r| r.host == host && r.path == "/robots.txt")
            .count();
        assert_eq!(robots, 1, "{host}: robots.txt fetched {robots} times");
        let pages: Vec<f64> = log
            .iter()
            .filter(|r| r.host == host && r.path != "/robots.txt")
            .map(|r| r.at_ms)
            .collect();
        if pages.len() < 3 {
            continue;
        }
        let span = pages[pages.len() - 1] - pages[0];
        let floor = (pages.len() - 2) as f64 * delay;
        assert!(
            span >= floor,
            "{host}: {} pages in {span:.0} ms, at least {floor:.0} expected",
            pages.len()
        );
    }
    site.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_process_loses_no_url_its_leases_go_to_the_others() {
    let Some(server) = redis(&[]) else { return };
    killed_process_loses_no_url(&server.url(), "").await;
}

/// Three processes on the crawl at `redis_url` (`frontier`: more lines of their `[frontier]`
/// section), the first SIGKILLed after 200 records: none lost, only what it had in flight
/// recorded twice, and its leases expired and went to the others.
pub(crate) async fn killed_process_loses_no_url(redis_url: &str, frontier: &str) {
    // Pages answer after 100 ms: 24 workers for 40 host slots, so every worker of the victim
    // holds a lease when it is killed.
    let (site, procs, mut children) = start_shared_with(
        redis_url,
        (2_000, 10, 100),
        3,
        "delay_ms = 5\nmax_per_host = 4",
        frontier,
    )
    .await;
    // Kill the first once it has recorded some pages.
    let deadline = Instant::now() + Duration::from_secs(60);
    while procs[0].line_count() < 200 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Not right after a line appeared but a while later, with lines written since: a line
    // whose URL the frontier already counts done must be in the file when the kill comes
    // (lines held in a buffer for a later write were lost here, and their URLs with them).
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut victim = children.remove(0);
    victim.kill().unwrap(); // SIGKILL
    victim.wait().unwrap();
    let killed_at = procs[0].lines().len();
    assert!(
        killed_at >= 200,
        "the first process recorded {killed_at} pages"
    );
    let errs = finish_all(children).await;
    let twice = assert_whole(&site, &procs, &errs);
    println!(
        "killed after {killed_at} records; {} recorded twice",
        twice.len()
    );
    // Only what the killed process had in flight (its 8 workers) may be fetched again by the
    // others once its leases expired: a page whose record it wrote but whose completion it
    // never sent.
    assert!(twice.len() <= 8, "recorded twice: {twice:?}");
    // The killed process' leases expired and were handed to the others.
    let expired: Vec<u64> = procs[1..]
        .iter()
        .map(|p| {
            stats(&p.out)["frontier"]["leases_expired"]
                .as_u64()
                .unwrap()
        })
        .collect();
    println!("leases expired: {expired:?}");
    assert!(expired.iter().all(|&n| n >= 1), "{expired:?}");
    site.stop().await;
}

/// Redis with `appendonly yes` and `appendfsync everysec` restarted twice mid-crawl: once
/// gracefully (it writes its AOF), once killed (the last second of acknowledged writes may be
/// lost). The processes retry their calls meanwhile and carry on; no URL is lost — what the
/// lost second did (leases, offers, completions) is redone, since every state the AOF can
/// hold is a prefix of the scripts run, and in every prefix each URL is queued, leased or done
/// with its links offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restart_with_aof_loses_no_url() {
    let Some(mut server) = redis(&["--appendonly", "yes", "--appendfsync", "everysec"]) else {
        return;
    };
    let (site, procs, children) = start_shared(
        &server.url(),
        (3_000, 10, 0),
        2,
        "delay_ms = 5\nmax_per_host = 4",
    )
    .await;
    let recorded = || procs.iter().map(Process::line_count).sum::<usize>();
    for (at, crash) in [(500, false), (1500, true)] {
        let deadline = Instant::now() + Duration::from_secs(120);
        while recorded() < at && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(recorded() >= at, "{} records", recorded());
        let down = Duration::from_secs(1);
        if crash {
            server.crash_and_restart(down).unwrap();
        } else {
            server.restart(down).unwrap();
        }
    }
    let errs = finish_all(children).await;
    let twice = assert_whole(&site, &procs, &errs);
    println!("{} recorded twice", twice.len());
    assert!(
        errs.iter()
            .all(|e| e.contains("frontier unavailable") && e.contains("frontier reachable again")),
        "a process did not notice the outage: {errs:?}"
    );
    site.stop().await;
}
