//! Durable state: resume after `kill -9` with no URL lost, graceful stops that fetch nothing
//! twice, settings that must not change, exact versus Bloom deduplication, and `forget`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use testsite::{Expected, SiteConfig, TestSite};

use crate::util::{crawler, stderr, CrawlDir};

/// A crawl directory (`crawler.toml` plus `out/`: pages, stats, and the state in out/state)
/// and the seed it crawls.
struct Crawl {
    dir: CrawlDir,
    out: PathBuf,
    seed: String,
}

impl Crawl {
    fn new(site: &TestSite, extra: &str) -> Self {
        let dir = CrawlDir::new(&format!(
            "[crawl]\nconcurrency = 8\nprogress_secs = 60\ncheckpoint_ms = 200\n\
             [fetch]\nretry_base_ms = 20\n[politeness]\nbackoff_base_ms = 20\ndelay_ms = 10\nmax_per_host = 2\n\
             [frontier]\nscope = \"domains\"\ndomains = [\"test\"]\n{extra}"
        ));
        Self {
            out: dir.out.clone(),
            dir,
            seed: site.site().seed_url(),
        }
    }

    fn command(&self, more: &[&str]) -> std::process::Command {
        let mut cmd = self.dir.crawl(&self.seed);
        cmd.args(more);
        cmd
    }

    fn spawn(&self) -> Child {
        self.command(&[])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    async fn run(&self, more: &[&str]) -> std::process::Output {
        let cmd = self.command(more);
        crate::util::output(cmd).await
    }

    /// Every line of pages.jsonl as (url, status); a partial line fails the test.
    fn lines(&self) -> Vec<(String, Option<u64>)> {
        read_lines(&self.out.join("pages.jsonl"))
    }

    /// Whole lines so far. Right after a `kill -9` the last line may be partial (the kernel
    /// may cut a `write` short for a fatal signal); the next run cuts it before appending.
    fn whole_lines(&self) -> usize {
        let text = std::fs::read(self.out.join("pages.jsonl")).unwrap_or_default();
        text.iter().filter(|&&b| b == b'\n').count()
    }

    /// Waits (up to a minute) until pages.jsonl holds `lines` whole lines; false if the
    /// crawl exited first.
    async fn progress(&self, child: &mut Child, lines: usize) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.whole_lines() < lines && Instant::now() < deadline {
            if child.try_wait().unwrap().is_some() {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        child.try_wait().unwrap().is_none()
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.out.join("stats.json")).unwrap())
            .unwrap()
    }
}

fn read_lines(path: &Path) -> Vec<(String, Option<u64>)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "a partial line at the end"
    );
    text.lines()
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}"));
            (v["url"].as_str().unwrap().to_owned(), v["status"].as_u64())
        })
        .collect()
}

/// Fetched URLs (with how often) against the ground truth: (missing, extra, refetched).
fn compare(
    site: &TestSite,
    lines: &[(String, Option<u64>)],
) -> (Vec<String>, Vec<String>, BTreeMap<String, u32>) {
    let truth = site.site().ground_truth();
    let mut times: BTreeMap<String, u32> = BTreeMap::new();
    for (url, status) in lines {
        *times.entry(url.clone()).or_default() += 1;
        if let Some(Expected::Status(s)) = truth.urls.get(url) {
            assert_eq!(*status, Some(u64::from(*s)), "{url}");
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
    let refetched = times.into_iter().filter(|(_, n)| *n > 1).collect();
    (missing, extra, refetched)
}

fn site_config() -> SiteConfig {
    SiteConfig {
        pages: 1500,
        hosts: 5,
        ..SiteConfig::default()
    }
}

/// A site of `pages` numeric pages on `hosts` hosts, otherwise the defaults.
async fn small_site(pages: u64, hosts: u32) -> TestSite {
    TestSite::start(SiteConfig {
        pages,
        hosts,
        ..SiteConfig::default()
    })
    .await
    .unwrap()
}

/// A small xorshift generator: reproducible kill points from a printed seed.
fn rng(seed: u64) -> impl FnMut(u64, u64) -> u64 {
    let mut x = seed | 1;
    move |lo, hi| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        lo + x % (hi - lo)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_at_random_moments_loses_nothing_and_records_each_url_once() {
    let site = TestSite::start(site_config()).await.unwrap();
    // Archiving on: each URL once in pages.jsonl and once in the WARC files.
    let crawl = Crawl::new(&site, "[output]\nwarc = true\nwarc_max_mb = 1\n");
    let seed = std::env::var("KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let mut between = rng(seed);
    let mut kills = 0;
    let mut report = Vec::new();
    while kills < 5 {
        let before = crawl.whole_lines();
        let mut child = crawl.spawn();
        let started = Instant::now();
        // Kill after a random amount of progress rather than a random time, so that five kills
        // fit in the site however fast this machine crawls it: at most 5 × 200 of its ~1,430
        // pages go by before the last run. The moment within a fetch is still arbitrary.
        let target = between(20, 200) as usize;
        if !crawl.progress(&mut child, before + target).await {
            // It finished before the kill (the assertion below reports it).
            break;
        }
        let wait = started.elapsed();
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        kills += 1;
        report.push(format!(
            "kill {kills} after {wait:?} (target {target}): {} lines",
            crawl.whole_lines() as i64 - before as i64
        ));
    }
    let last = crawl.run(&[]).await;
    assert!(last.status.success(), "{}", stderr(&last));
    let lines = crawl.lines();
    let (missing, extra, refetched) = compare(&site, &lines);
    println!(
        "seed {seed}: {} | {kills} kills, {} lines, {} missing, {} extra, {} twice",
        report.join(", "),
        lines.len(),
        missing.len(),
        extra.len(),
        refetched.len()
    );
    assert!(
        kills >= 5,
        "the crawl finished before 5 kills (seed {seed})"
    );
    assert!(missing.is_empty(), "lost: {missing:?} (seed {seed})");
    assert!(extra.is_empty(), "not in the ground truth: {extra:?}");
    assert!(
        refetched.is_empty(),
        "recorded twice (seed {seed}): {refetched:?}"
    );
    let stats = crawl.stats();
    assert_eq!(stats["stopped_by"], "finished");
    assert_eq!(stats["state"]["resumed"], true);
    crate::warc::each_fetched_url_archived_once(&crawl.out);
    // Pages fetched after a run's last checkpoint are read back from the archive, so the
    // only pages the site served twice are those in flight at a kill: at most `concurrency`
    // (8) a kill. (A server error is retried by design; robots.txt and sitemaps are not
    // pages.)
    let mut served: BTreeMap<(String, String), u32> = BTreeMap::new();
    for r in site.observer().log() {
        let page = !(r.path == "/robots.txt" || r.path.contains("sitemap"));
        if page && r.status != 429 && r.status < 500 {
            *served.entry((r.host, r.path)).or_default() += 1;
        }
    }
    let repeats: u32 = served.values().map(|n| n - 1).sum();
    println!(
        "seed {seed}: {repeats} pages served again; the last resume read {} back",
        stats["state"]["output_tail"]["replayed"]
    );
    assert!(
        repeats <= 8 * kills,
        "{repeats} pages served again after {kills} kills (seed {seed}): {:?}",
        served.iter().filter(|(_, &n)| n > 1).collect::<Vec<_>>()
    );
    site.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_then_resume_fetches_nothing_twice() {
    let site = TestSite::start(site_config()).await.unwrap();
    let crawl = Crawl::new(&site, "");
    // Stop once early (20 pages in) and once later (200 more): by progress, not by time, so
    // that the signal never comes before the handler is installed or after the crawl ended.
    for more in [20, 200] {
        let mut child = crawl.spawn();
        let before = crawl.whole_lines();
        assert!(
            crawl.progress(&mut child, before + more).await,
            "ended early"
        );
        let pid = child.id().to_string();
        assert!(crawler_kill("-TERM", &pid));
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(crawl.stats()["stopped_by"], "shutdown");
    }
    let last = crawl.run(&[]).await;
    assert!(last.status.success(), "{}", stderr(&last));
    let (missing, extra, refetched) = compare(&site, &crawl.lines());
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{missing:?} {extra:?}"
    );
    assert!(refetched.is_empty(), "fetched twice: {refetched:?}");

    // Resuming a finished crawl fetches nothing, says so, and keeps the crawl's totals:
    // stats.json and status.json count every line of every run, and `crawler health`
    // reports them; --fresh starts over.
    let lines = crawl.lines().len() as u64;
    assert_eq!(crawl.stats()["pages_total"], lines);
    let again = crawl.run(&[]).await;
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(crawl.stats()["pages"], 0);
    assert_eq!(crawl.stats()["pages_total"], lines);
    assert!(
        stderr(&again).contains(&format!("fetched already ({lines} pages")),
        "{}",
        stderr(&again)
    );
    let health = crate::util::crawler()
        .args(["health", "--out"])
        .arg(&crawl.out)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&health.stdout);
    assert!(
        said.contains(&format!(
            "crawl ended (finished): {lines} pages (0 by this run)"
        )),
        "{said}"
    );
    let fresh = crawl.run(&["--fresh"]).await;
    assert!(fresh.status.success(), "{}", stderr(&fresh));
    let (missing, _, refetched) = compare(&site, &crawl.lines());
    assert!(
        missing.is_empty() && refetched.is_empty(),
        "{missing:?} {refetched:?}"
    );
    site.stop().await;
}

fn crawler_kill(signal: &str, pid: &str) -> bool {
    std::process::Command::new("kill")
        .args([signal, pid])
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_with_changed_settings_is_refused_by_name() {
    let site = small_site(50, 2).await;
    let crawl = Crawl::new(&site, "");
    let first = crawl.run(&[]).await;
    assert!(first.status.success(), "{}", stderr(&first));
    let text = std::fs::read_to_string(&crawl.dir.config).unwrap();
    std::fs::write(&crawl.dir.config, format!("{text}fpp = 0.001\n")).unwrap();
    let refused = crawl.run(&[]).await;
    assert_eq!(refused.status.code(), Some(64), "{}", stderr(&refused));
    let msg = stderr(&refused);
    assert!(
        msg.contains("frontier.fpp was 0.01 and is now 0.001"),
        "{msg}"
    );
    assert!(msg.contains("--fresh"), "{msg}");
    site.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_dedup_fetches_everything_a_tiny_filter_would_skip() {
    let site = small_site(600, 3).await;
    let truth = site.site().ground_truth().urls.len();
    let tiny = "expected_urls = 20\nfpp = 0.5\n";
    let bloom = Crawl::new(&site, &format!("{tiny}dedup = \"bloom\"\n"));
    let out = bloom.run(&["--delay-ms", "0"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (bloom_missing, _, _) = compare(&site, &bloom.lines());

    assert!(
        bloom_missing.len() > 10,
        "bloom mode skipped only {}",
        bloom_missing.len()
    );
    // The exact set in memory (the default), and with no in-memory index at all: every
    // "maybe seen" is then confirmed in the state database.
    for (index, complete) in [("", true), ("exact_index_mb = 0\n", false)] {
        let exact = Crawl::new(&site, &format!("{tiny}{index}dedup = \"exact\"\n"));
        let out = exact.run(&["--delay-ms", "0"]).await;
        assert!(out.status.success(), "{}", stderr(&out));
        let (missing, extra, refetched) = compare(&site, &exact.lines());
        println!(
            "tiny filter ({tiny:?}, {index:?}): ground truth {truth}; bloom mode skipped {}, \
             exact mode {}",
            bloom_missing.len(),
            missing.len()
        );
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{missing:?} {extra:?}"
        );
        assert!(refetched.is_empty(), "{refetched:?}");
        let stats = exact.stats();
        let index = &stats["state"]["exact_index"];
        assert_eq!(index["complete"], complete, "{stats}");
        let admitted = stats["frontier"]["admitted"].as_u64();
        let indexed = index["fingerprints"].as_u64();
        assert_eq!(indexed == admitted, complete, "{stats}");
    }
    site.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgotten_urls_are_fetched_again_on_the_next_run() {
    let site = small_site(50, 2).await;
    let crawl = Crawl::new(&site, "");
    let first = crawl.run(&[]).await;
    assert!(first.status.success(), "{}", stderr(&first));
    let before = crawl.lines();
    let target = before[before.len() / 2].0.clone();
    let forget = crawler()
        .args(["forget", "--config", crawl.dir.config.to_str().unwrap()])
        .args(["--out", crawl.out.to_str().unwrap()])
        .args([target.as_str(), "http://h0.test:1/never-seen"])
        .output()
        .unwrap();
    assert!(forget.status.success(), "{}", stderr(&forget));
    let said = String::from_utf8_lossy(&forget.stdout);
    assert!(said.contains(&format!("requeued\t{target}")), "{said}");
    assert!(
        said.contains("unknown\thttp://h0.test:1/never-seen"),
        "{said}"
    );
    let second = crawl.run(&[]).await;
    assert!(second.status.success(), "{}", stderr(&second));
    let after = crawl.lines();
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(after.last().unwrap().0, target);
    // robots.txt verdicts are part of the state: the second run fetched none again.
    assert_eq!(crawl.stats()["state"]["restored_robots"], 2);
    let mut robots: BTreeMap<String, u32> = BTreeMap::new();
    for r in site.observer().log() {
        if r.path == "/robots.txt" {
            *robots.entry(r.host).or_default() += 1;
        }
    }
    assert_eq!(robots.len(), 2, "{robots:?}");
    assert!(robots.values().all(|&n| n == 1), "{robots:?}");
    site.stop().await;
}
