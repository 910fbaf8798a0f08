//! The shared frontier under faults, each injected into real crawler processes and a real,
//! private Redis, and judged by the test site's ground truth:
//! - Redis out of memory mid-crawl (`maxmemory` below what it holds), then given room: the
//!   crawl waits and says so, then finishes with every URL, each once;
//! - a crawler paused (SIGSTOP) for longer than its leases, then continued: the URLs it held
//!   went to the others, and it writes no record for them — no URL twice;
//! - Redis stopped (SIGSTOP) for over twice a lease, then continued, and later shut down for
//!   as long (its AOF written) and started again, one crawler coming back most of a lease
//!   after the other: no lease taken from a live holder — no URL twice;
//! - settings that must agree: a given value that differs from the crawl's is refused (64),
//!   naming it; a default one takes the crawl's;
//! - no room at the start: one exit code (69), with what is needed, and nothing recorded;
//! - Redis refusing for good (a password, a key of another type): the crawl stops with 69;
//! - a process SIGKILLed under a page budget split over partitions: the others fetch the
//!   budget to its end (the dead process's leases give their pages back as they expire).

use std::process::Child;
use std::time::{Duration, Instant};

use crate::redis::{finish_all, redis, start_shared, stats, union, Process};
use crate::util::{crawler, stderr};

/// Waits until `cond` holds (checked every 20 ms), at most `limit`.
async fn until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond()
}

fn signal(child: &Child, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig}");
}

/// `status.json` of a process, if written.
fn status(p: &Process) -> serde_json::Value {
    std::fs::read_to_string(p.out.join("status.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_out_of_memory_pauses_the_crawl_and_loses_nothing() {
    let Some(server) = redis(&["--maxmemory-policy", "noeviction"]) else {
        return;
    };
    let site = testsite::TestSite::start(testsite::SiteConfig {
        pages: 3_000,
        hosts: 10,
        latency_ms: 20,
        ..testsite::SiteConfig::default()
    })
    .await
    .unwrap();
    let seed = site.site().seed_url();
    let procs: Vec<Process> = (0..2)
        .map(|_| Process::new(&server.url(), "delay_ms = 5\nmax_per_host = 4"))
        .collect();
    let children: Vec<Child> = procs
        .iter()
        .map(|p| p.spawn_with(&seed, &[("CRAWLER_CRAWL_STATUS_SECS", "1")]))
        .collect();
    let recorded = || procs.iter().map(Process::line_count).sum::<usize>();
    assert!(until(Duration::from_secs(60), || recorded() >= 300).await);
    // Full: what Redis holds now is more than it may.
    let used: u64 = server
        .command(&["INFO", "memory"])
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let limit = (used / 2).max(1 << 20).to_string();
    assert_eq!(
        server
            .command(&["CONFIG", "SET", "maxmemory", &limit])
            .unwrap(),
        "+OK"
    );
    // Both processes say so, and the crawl stands still.
    assert!(
        until(Duration::from_secs(30), || procs
            .iter()
            .all(|p| status(p)["frontier_error"]
                .as_str()
                .is_some_and(|e| e.starts_with("full:"))))
        .await,
        "status.json does not say the frontier is full: {:?}",
        procs.iter().map(status).collect::<Vec<_>>()
    );
    let stalled = recorded();
    // Longer than two leases (2 s): leases held now must outlive the wait.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = recorded();
    assert!(
        after <= stalled + 16,
        "the crawl went on while Redis was full: {stalled} -> {after} records"
    );
    // Room again: the crawl resumes and finishes.
    assert_eq!(
        server
            .command(&["CONFIG", "SET", "maxmemory", "0"])
            .unwrap(),
        "+OK"
    );
    let errs = finish_all(children).await;
    let (missing, extra, twice) = union(&site, &procs.iter().collect::<Vec<_>>());
    println!("full at {stalled} records; {} in all", recorded());
    assert!(missing.is_empty(), "lost: {missing:?}\n{errs:?}");
    assert!(extra.is_empty(), "not in the ground truth: {extra:?}");
    assert!(twice.is_empty(), "recorded twice: {twice:?}");
    for e in &errs {
        assert_eq!(
            e.matches("the shared frontier is full").count(),
            1,
            "logged once per process: {e}"
        );
    }
    site.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawler_paused_past_its_leases_records_no_url_twice() {
    let Some(server) = redis(&[]) else { return };
    // Pages answer after 200 ms, so the paused process holds leases when it stops.
    let (site, procs, mut children) = start_shared(
        &server.url(),
        (1_500, 10, 200),
        3,
        "delay_ms = 5\nmax_per_host = 4",
    )
    .await;
    assert!(until(Duration::from_secs(60), || procs[0].line_count() >= 50).await);
    signal(&children[0], "-STOP");
    // Two and a half leases: the others take its URLs.
    tokio::time::sleep(Duration::from_secs(5)).await;
    signal(&children[0], "-CONT");
    let paused = children.remove(0);
    let mut errs = finish_all(vec![paused]).await;
    errs.extend(finish_all(children).await);
    let (missing, extra, twice) = union(&site, &procs.iter().collect::<Vec<_>>());
    let lost = stats(&procs[0].out)["frontier"]["leases_lost"]
        .as_u64()
        .unwrap_or(0);
    println!("the paused process lost {lost} leases");
    assert!(missing.is_empty(), "lost: {missing:?}\n{errs:?}");
    assert!(extra.is_empty(), "not in the ground truth: {extra:?}");
    assert!(twice.is_empty(), "recorded twice: {twice:?}");
    assert!(
        lost >= 1,
        "the paused process lost no lease: nothing was tested"
    );
    site.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_stopped_or_restarted_for_two_leases_takes_no_live_lease() {
    let Some(mut server) = redis(&["--appendonly", "yes", "--appendfsync", "always"]) else {
        return;
    };
    let (site, procs, children) = start_shared(
        &server.url(),
        (1_500, 10, 200),
        2,
        "delay_ms = 5\nmax_per_host = 4",
    )
    .await;
    let recorded = || procs.iter().map(Process::line_count).sum::<usize>();
    assert!(until(Duration::from_secs(60), || recorded() >= 100).await);
    server.pause().unwrap();
    // Over twice a lease (2 s), shorter than the client's response timeout (10 s): calls wait.
    tokio::time::sleep(Duration::from_secs(5)).await;
    server.resume().unwrap();
    // Then down for good (its AOF written): calls fail and are retried until it is back. The
    // second process is stopped through the outage and for most of a lease after it: it comes
    // back well after the first, which moves the crawl clock on at once.
    let at = recorded() + 200;
    assert!(until(Duration::from_secs(60), || recorded() >= at).await);
    signal(&children[1], "-STOP");
    tokio::task::block_in_place(|| server.restart(Duration::from_secs(5))).unwrap();
    // The first script after the restart moves the crawl clock on (one step, then real time).
    let clock = |f: &str| {
        server
            .command(&["HGET", "crawl:{shared}:clock", f])
            .unwrap()
    };
    let before = clock("last");
    assert!(until(Duration::from_secs(10), || clock("last") != before).await);
    // Without the grace after an outage, the stopped process' leases (last renewed before
    // the outage) are due 1.5 s (three steps) after that script, and are taken.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    signal(&children[1], "-CONT");
    let errs = finish_all(children).await;
    let (missing, extra, twice) = union(&site, &procs.iter().collect::<Vec<_>>());
    let field = |p: &Process, name: &str| stats(&p.out)["frontier"][name].as_u64().unwrap_or(0);
    // A holder's own count: leases it held and found gone (heartbeat or fence).
    let lost: u64 = procs.iter().map(|p| field(p, "leases_lost")).sum();
    // The crawl's: leases handed back at expiry. A lease whose reply the shutdown cut off (the
    // script ran, its answer never left) is held by no one and expires — at most one per
    // worker.
    let expired = procs.iter().map(|p| field(p, "leases_expired")).max();
    println!("leases lost by their holders: {lost}; expired: {expired:?}");
    assert!(missing.is_empty(), "lost: {missing:?}\n{errs:?}");
    assert!(extra.is_empty(), "not in the ground truth: {extra:?}");
    assert!(twice.is_empty(), "recorded twice: {twice:?}");
    assert_eq!(lost, 0, "a live holder's lease expired over the outage");
    assert!(expired.unwrap_or(0) <= 16, "expired: {expired:?}");
    site.stop().await;
}

/// A crawl config `name` of the shared crawl at `url` with `extra` lines in `[frontier]`.
fn config(dir: &std::path::Path, name: &str, url: &str, extra: &str) -> std::path::PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "[frontier]\nscope = \"domains\"\ndomains = [\"test\"]\nbackend = \"redis\"\n\
             redis_url = \"{url}\"\ncrawl_id = \"rules\"\n{extra}\n"
        ),
    )
    .unwrap();
    path
}

fn run(config: &std::path::Path, seed: &str, out: &std::path::Path) -> std::process::Output {
    crawler()
        .args(["crawl", "--config", config.to_str().unwrap()])
        .args(["--seed", seed, "--out", out.to_str().unwrap()])
        .args(["--resolve", "*.test=127.0.0.1"])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_that_must_agree_are_refused_or_taken_from_the_crawl() {
    let Some(server) = redis(&[]) else { return };
    let site = testsite::TestSite::start(testsite::SiteConfig {
        pages: 60,
        hosts: 2,
        ..testsite::SiteConfig::default()
    })
    .await
    .unwrap();
    let seed = site.site().seed_url();
    let dir = tempfile::tempdir().unwrap();
    let url = server.url();
    // The first process records the crawl's rules.
    let first = config(
        dir.path(),
        "first",
        &url,
        "dedup = \"exact\"\nmax_pages_per_host = 50",
    );
    let out = tokio::task::spawn_blocking({
        let (first, seed, out) = (first.clone(), seed.clone(), dir.path().join("a"));
        move || run(&first, &seed, &out)
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // Given other values: refused, each difference named.
    let other = config(
        dir.path(),
        "other",
        &url,
        "dedup = \"bloom\"\nmax_pages_per_host = 10",
    );
    let out = run(&other, &seed, &dir.path().join("b"));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(64), "{err}");
    assert!(
        err.contains("frontier.dedup = \"bloom\" here, \"exact\" in the crawl")
            && err.contains("frontier.max_pages_per_host = 10 here, 50 in the crawl"),
        "{err}"
    );
    // A politeness flag too.
    let same = config(dir.path(), "same", &url, "");
    let out = crawler()
        .args([
            "crawl",
            "--config",
            same.to_str().unwrap(),
            "--delay-ms",
            "7",
        ])
        .args(["--seed", &seed, "--out"])
        .arg(dir.path().join("c"))
        .args(["--resolve", "*.test=127.0.0.1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    assert!(stderr(&out).contains("politeness.delay_ms = 7 here, 250 in the crawl"));
    // Given none: the crawl's are taken, with a warning naming them.
    let out = run(&same, &seed, &dir.path().join("d"));
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("taken from the shared crawl's rules") && err.contains("frontier.dedup"),
        "{err}"
    );
    // Not a Redis URL: a usage error, not "unreachable".
    let http = config(dir.path(), "http", "http://127.0.0.1:1/", "");
    let out = run(&http, &seed, &dir.path().join("e"));
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is not a Redis URL"),
        "{}",
        stderr(&out)
    );
    site.stop().await;
}

#[test]
fn no_room_at_the_start_is_69_saying_what_is_needed() {
    let Some(server) = redis(&["--maxmemory", "4mb", "--maxmemory-policy", "noeviction"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A visited set of 10^7 URLs at 1% is 12 MB: it cannot fit under 4 MB.
    let big = config(dir.path(), "big", &server.url(), "expected_urls = 10000000");
    let out = run(&big, "http://h0.test:1/", &dir.path().join("a"));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(69), "{err}");
    assert!(
        err.contains("no room for this crawl") && err.contains("visited set needs"),
        "{err}"
    );
    // Refused for want of room, the crawl recorded nothing: the retry the message suggests
    // (a smaller expected_urls) is a new crawl, not a contradiction of recorded rules (64).
    assert_eq!(
        server.command(&["EXISTS", "crawl:{rules}:rules"]).unwrap(),
        ":0"
    );
    let retry = config(dir.path(), "retry", &server.url(), "expected_urls = 1000");
    let out = run(&retry, "http://h0.test:1/", &dir.path().join("r"));
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(64), "{err}");
    assert!(!err.contains("no room for this crawl"), "{err}");
    assert_eq!(
        server.command(&["EXISTS", "crawl:{rules}:rules"]).unwrap(),
        ":1",
        "the retry recorded its rules"
    );
    // Redis already over its limit: the first write is refused, the same code.
    assert_eq!(
        server
            .command(&["CONFIG", "SET", "maxmemory", "1"])
            .unwrap(),
        "+OK"
    );
    let small = config(dir.path(), "small", &server.url(), "expected_urls = 1000");
    let out = run(&small, "http://h0.test:1/", &dir.path().join("b"));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(69), "{err}");
    assert!(err.contains("no room for this crawl"), "{err}");
}

/// Waits (off the runtime) for `child` to end, at most `limit`: its exit code and stderr.
async fn ended(mut child: Child, limit: Duration) -> (Option<i32>, String) {
    tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + limit;
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the crawler did not stop in {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        (out.status.code(), stderr(&out))
    })
    .await
    .unwrap()
}

/// A Redis that refuses the crawl for good — credentials it no longer takes, a key of the
/// crawl holding another program's data — stops the crawl with 69, saying why; it is not
/// retried for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_refusing_for_good_stops_the_crawl_with_69() {
    let Some(server) = redis(&[]) else { return };
    let site = testsite::TestSite::start(testsite::SiteConfig {
        pages: 2_000,
        hosts: 4,
        latency_ms: 20,
        ..testsite::SiteConfig::default()
    })
    .await
    .unwrap();
    let seed = site.site().seed_url();

    // Mid-crawl, the crawl's counters become a string.
    let p = Process::new(&server.url(), "delay_ms = 5\nmax_per_host = 2");
    let child = p.spawn(&seed);
    assert!(until(Duration::from_secs(60), || p.line_count() >= 50).await);
    assert_eq!(
        server.command(&["DEL", "crawl:{shared}:stats"]).unwrap(),
        ":1"
    );
    assert_eq!(
        server
            .command(&["SET", "crawl:{shared}:stats", "not a hash"])
            .unwrap(),
        "+OK"
    );
    let (code, err) = ended(child, Duration::from_secs(60)).await;
    assert_eq!(code, Some(69), "{err}");
    assert!(err.contains("WRONGTYPE"), "{err}");
    assert!(p.line_count() < 2_000, "the crawl stopped before the end");

    // At the start, credentials Redis refuses.
    assert_eq!(
        server
            .command(&["CONFIG", "SET", "requirepass", "a-password-of-ours"])
            .unwrap(),
        "+OK"
    );
    let q = Process::new(&server.url(), "delay_ms = 5");
    let (code, err) = ended(q.spawn(&seed), Duration::from_secs(60)).await;
    assert_eq!(code, Some(69), "{err}");
    assert!(err.to_ascii_lowercase().contains("auth"), "{err}");
    site.stop().await;
}

/// `crawl.max_pages = 600` over 4 partitions, three processes, one SIGKILLed mid-crawl: the
/// other two reach the budget (its shares held by the dead process's leases come back when
/// they expire — none is lost with it), and only what it had in flight (8 workers) may be
/// recorded twice or past the budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_under_a_split_budget_loses_no_page_of_it() {
    use testsite::{SiteConfig, TestSite};
    let Some(server) = redis(&[]) else { return };
    let site = TestSite::start(SiteConfig {
        pages: 3_000,
        hosts: 20,
        latency_ms: 10,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let seed = site.site().seed_url();
    let procs: Vec<Process> = (0..3)
        .map(|_| Process::with_frontier(&server.url(), "delay_ms = 0", "partitions = 4"))
        .collect();
    let env = [("CRAWLER_CRAWL_MAX_PAGES", "600")];
    let mut children: Vec<Child> = procs.iter().map(|p| p.spawn_with(&seed, &env)).collect();
    assert!(until(Duration::from_secs(60), || procs[0].line_count() >= 50).await);
    let mut victim = children.remove(0);
    victim.kill().unwrap(); // SIGKILL
    victim.wait().unwrap();
    let errs = finish_all(children).await;
    let (_, extra, twice) = union(&site, &procs.iter().collect::<Vec<_>>());
    assert!(extra.is_empty(), "not in the ground truth: {extra:?}");
    assert!(twice.len() <= 8, "recorded twice: {twice:?}");
    let unique: std::collections::BTreeSet<String> = procs
        .iter()
        .flat_map(|p| p.lines().into_iter().map(|(url, _)| url))
        .collect();
    println!("{} URLs recorded under a budget of 600", unique.len());
    assert!(
        (600..=608).contains(&unique.len()),
        "{} URLs recorded\n{errs:?}",
        unique.len()
    );
    for p in &procs[1..] {
        assert_eq!(stats(&p.out)["stopped_by"], "max_pages");
    }
}
