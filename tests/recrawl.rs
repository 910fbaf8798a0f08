//! `[recrawl]`: a crawl that keeps going — fetched URLs due again on a schedule, refetched with
//! conditional GETs, unchanged pages known by a 304 or by their digest and archived as WARC
//! revisit records, changed pages' new links crawled — and a `kill -9` in the middle of it
//! that loses no schedule and fetches nothing before it is due.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use testsite::{Changing, SiteConfig, TestSite};

use crate::crawl::read_pages;
use crate::util::{http, stderr, watch_serve, CrawlDir};
use crate::warc::{warc_files, warcio};

/// Seconds between fetches of a URL, and the share of it a due time may move either way.
pub(crate) const INTERVAL: f64 = 3.0;
pub(crate) const JITTER: f64 = 0.1;
/// What a due time may be early against the interval less its jitter: due times are the
/// fetch's whole second plus a rounded interval (a second and a half).
const ROUNDING: f64 = 1.5;
/// The least time between two recorded fetches of one URL.
const LEAST_GAP: f64 = INTERVAL * (1.0 - JITTER) - ROUNDING;

/// A changing site of `pages` pages: a "day" of 10 s, each page changing 0.05 to 5 times a day.
pub(crate) async fn changing_site(pages: u64) -> TestSite {
    TestSite::start(SiteConfig {
        pages,
        changing: Some(Changing {
            day_secs: 10.0,
            min_per_day: 0.05,
            max_per_day: 5.0,
        }),
        ..SiteConfig::default()
    })
    .await
    .unwrap()
}

/// A crawl of the changing site, fetching a host at a time every `delay_ms`.
fn crawl_dir(delay_ms: u32, checkpoint_ms: u32) -> CrawlDir {
    CrawlDir::new(&format!(
        "[crawl]\nconcurrency = 8\nprogress_secs = 60\ncheckpoint_ms = {checkpoint_ms}\n\
         [politeness]\ndelay_ms = {delay_ms}\nmax_per_host = 4\n\
         [frontier]\nscope = \"domains\"\ndomains = [\"test\"]\n\
         [output]\nwarc = true\n\
         [recrawl]\npolicy = \"fixed\"\ninterval_secs = {}\nmin_interval_secs = 1\n\
         max_interval_secs = 60\njitter = {JITTER}\n",
        INTERVAL as u32
    ))
}

/// Unix seconds (with fractions) of a record's `fetched_at`.
pub(crate) fn unix(text: &str) -> f64 {
    let at = warc::Utc::parse_rfc3339(text).unwrap_or_else(|| panic!("not RFC 3339: {text}"));
    at.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

/// Each URL's records, in order.
pub(crate) fn by_url(pages: &[serde_json::Value]) -> BTreeMap<String, Vec<serde_json::Value>> {
    let mut out: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
    for p in pages {
        out.entry(p["url"].as_str().unwrap().to_owned())
            .or_default()
            .push(p.clone());
    }
    out
}

/// Every URL's records are a first fetch and then refetches, each at least [`LEAST_GAP`]
/// after the one before; every 200 carries its digest.
pub(crate) fn assert_schedule_kept(pages: &[serde_json::Value]) {
    for (url, records) in by_url(pages) {
        assert!(
            records[0].get("refetch").is_none(),
            "{url}: the first record is no refetch: {}",
            records[0]
        );
        for pair in records.windows(2) {
            let gap = unix(pair[1]["fetched_at"].as_str().unwrap())
                - unix(pair[0]["fetched_at"].as_str().unwrap());
            assert!(
                gap >= LEAST_GAP,
                "{url} fetched again {gap:.2} s after the last time:\n{}\n{}",
                pair[0],
                pair[1]
            );
            assert_eq!(pair[1]["refetch"], true, "{}", pair[1]);
        }
        // Sitemap files are read for their entries, not measured.
        for r in records.iter().filter(|r| r.get("sitemap").is_none()) {
            if r["status"] == 200 {
                let digest = r["digest"].as_str().unwrap_or_default();
                assert!(digest.starts_with("sha1:") && digest.len() == 37, "{r}");
            }
        }
    }
}

/// Reads every revisit record of the crawl's WARC files with warcio and checks what its
/// tester asks (profile, payload digest required or prohibited) and that each refers to the
/// date of its URL's latest full response before it. Returns the profiles seen, by count.
/// `None` when warcio is not installed (and not required).
fn revisits_pass_warcio(out: &Path) -> Option<BTreeMap<String, usize>> {
    const SCRIPT: &str = r#"
import json, sys
from warcio.archiveiterator import ArchiveIterator
latest, out = {}, []
for name in sys.argv[1:]:
    with open(name, "rb") as f:
        for r in ArchiveIterator(f):
            h = r.rec_headers
            uri = h.get_header("WARC-Target-URI")
            if r.rec_type == "response":
                latest[uri] = h.get_header("WARC-Date")
            if r.rec_type == "revisit":
                r.content_stream().read()
                out.append({
                    "uri": uri,
                    "profile": h.get_header("WARC-Profile"),
                    "payload_digest": h.get_header("WARC-Payload-Digest"),
                    "refers_to_uri": h.get_header("WARC-Refers-To-Target-URI"),
                    "refers_to_date": h.get_header("WARC-Refers-To-Date"),
                    "latest_response": latest.get(uri),
                    "status": r.http_headers.get_statuscode() if r.http_headers else None,
                })
print(json.dumps(out))
"#;
    let files = warc_files(out);
    let mut check = warcio()?;
    let envs: Vec<_> = check
        .get_envs()
        .map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned)))
        .collect();
    for file in &files {
        let run = check.args(["check"]).arg(file).output().unwrap();
        assert!(run.status.success(), "warcio check {file:?}: {run:?}");
        check = warcio()?;
    }
    let mut python = Command::new("python3");
    for (k, v) in envs {
        if let Some(v) = v {
            python.env(k, v);
        }
    }
    let run = python.args(["-c", SCRIPT]).args(&files).output().unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let revisits: Vec<serde_json::Value> = serde_json::from_slice(&run.stdout).unwrap();
    let mut profiles = BTreeMap::new();
    for r in &revisits {
        let profile = r["profile"].as_str().unwrap().to_owned();
        assert_eq!(r["refers_to_uri"], r["uri"], "{r}");
        assert_eq!(r["refers_to_date"], r["latest_response"], "{r}");
        if profile.ends_with("/server-not-modified") {
            assert_eq!(r["payload_digest"], serde_json::Value::Null, "{r}");
            assert_eq!(r["status"], "304", "{r}");
        } else {
            assert!(profile.ends_with("/identical-payload-digest"), "{r}");
            assert!(r["payload_digest"].as_str().unwrap().starts_with("sha1:"));
            assert_eq!(r["status"], "200", "{r}");
        }
        *profiles.entry(profile).or_default() += 1;
    }
    Some(profiles)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_schedule_refetches_conditionally_and_archives_what_did_not_change() {
    let site = changing_site(60).await;
    let dir = crawl_dir(10, 200);
    let mut cmd = dir.crawl(&site.site().seed_url());
    cmd.args(["--max-duration", "11"]);
    let out = crate::util::output(cmd).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.out.join("stats.json")).unwrap()).unwrap();
    assert_eq!(stats["stopped_by"], "max_duration", "{stats}");

    let pages = read_pages(&dir.out);
    assert_schedule_kept(&pages);
    let urls = by_url(&pages);
    let refetched = urls.values().filter(|r| r.len() >= 2).count();
    assert!(
        refetched * 2 >= urls.len(),
        "{refetched} of {} URLs refetched in 11 s at a 3 s interval",
        urls.len()
    );
    // A page that is gone keeps its schedule, backing off: each interval twice the last.
    let mut gone = 0;
    for records in urls.values() {
        if !records
            .iter()
            .all(|r| r["status"] == 404 || r["status"] == 410)
        {
            continue;
        }
        for (i, pair) in records.windows(2).enumerate() {
            let gap = unix(pair[1]["fetched_at"].as_str().unwrap())
                - unix(pair[0]["fetched_at"].as_str().unwrap());
            let least = INTERVAL * f64::from(1 << i) * (1.0 - JITTER) - ROUNDING;
            assert!(gap >= least, "gap {i} of {gap:.2} s < {least}: {records:?}");
        }
        gone += usize::from(records.len() >= 3);
    }
    assert!(gone > 0, "no gone page fetched three times");
    // A 304 reads no body and says the page did not change.
    let not_modified: Vec<_> = pages.iter().filter(|p| p["status"] == 304).collect();
    assert!(!not_modified.is_empty(), "no 304 at all");
    for p in &not_modified {
        assert_eq!(
            (p["changed"].clone(), p["bytes"].clone()),
            (false.into(), 0.into()),
            "{p}"
        );
        assert!(p["error"].is_null(), "{p}");
    }
    // Pages without validators are told apart by their digest; pages that changed bring their
    // new leaf link, which is crawled.
    let unchanged_200 = pages
        .iter()
        .filter(|p| p["status"] == 200 && p["changed"] == false)
        .count();
    assert!(unchanged_200 > 0, "no unchanged 200 found by its digest");
    let changed = pages.iter().filter(|p| p["changed"] == true).count();
    assert!(changed > 0, "no page changed in 11 s");
    assert!(
        urls.keys().any(|u| u.contains("/c/p")),
        "no new link of a changed page was crawled"
    );
    // The site agrees: each refetch of a changing page that got a 200 says `changed` exactly
    // when the site served another version than at the last 200. (A 304 is the server's word:
    // a Last-Modified only page that changed twice within its second is not seen changed.)
    let mut served: BTreeMap<(String, String), Vec<(u16, u64)>> = BTreeMap::new();
    for r in site.observer().log() {
        if let (Some(v), 200 | 304) = (r.version, r.status) {
            served
                .entry((r.host, r.path))
                .or_default()
                .push((r.status, v));
        }
    }
    let mut compared = 0;
    for ((host, path), versions) in &served {
        let records: Vec<_> = urls
            .iter()
            .find(|(u, _)| u.contains(&format!("{host}:")) && u.ends_with(path.as_str()))
            .map(|(_, r)| {
                r.iter()
                    .filter(|r| r["status"] == 200 || r["status"] == 304)
            })
            .expect("a recorded URL for every page served")
            .collect();
        assert_eq!(records.len(), versions.len(), "{host}{path}: {records:?}");
        let mut full = versions[0].1;
        for (r, &(status, v)) in records.iter().zip(versions).skip(1) {
            assert_eq!(r["status"], status, "{host}{path}: {r}");
            let changed = status == 200 && v != full;
            assert_eq!(r["changed"], changed, "{host}{path} {versions:?}: {r}");
            if status == 200 {
                full = v;
            }
            compared += 1;
        }
    }
    assert!(compared > 20, "{compared} refetches of changing pages");
    if let Some(profiles) = revisits_pass_warcio(&dir.out) {
        assert_eq!(profiles.len(), 2, "both revisit profiles: {profiles:?}");
    }
    // status.json of a crawl that ended.
    let status: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.out.join("status.json")).unwrap()).unwrap();
    assert_eq!(status["state"], "max_duration", "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_mid_recrawl_loses_no_schedule_and_records_no_visit_early() {
    let site = changing_site(60).await;
    // Slow enough (about 50 pages a second over 5 hosts) that refetches of the first pages
    // mix with the first fetches of the last: the kill lands while both are in flight, with
    // up to a second of records after the last checkpoint.
    let dir = crawl_dir(100, 1_000);
    let seed = site.site().seed_url();
    let mut child = dir
        .crawl(&seed)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pages = dir.out.join("pages.jsonl");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&pages).is_ok_and(|t| t.contains("\"refetch\":true")) {
        assert!(std::time::Instant::now() < deadline, "no refetch in 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    let status: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.out.join("status.json")).unwrap()).unwrap();
    assert!(
        ["running", "waiting"].contains(&status["state"].as_str().unwrap()),
        "{status}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let killed_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let before = by_url(&read_pages(&dir.out));

    // The resumed run at the first test's pace, so that every URL comes due within it.
    let mut cmd = dir.crawl(&seed);
    cmd.args(["--max-duration", "8"])
        .env("CRAWLER_POLITENESS_DELAY_MS", "10");
    let out = crate::util::output(cmd).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.out.join("stats.json")).unwrap()).unwrap();
    eprintln!("after the kill: {}", stats["state"]);
    let pages = read_pages(&dir.out);
    // The records, across the kill: on schedule, each visit once.
    assert_schedule_kept(&pages);
    let after = by_url(&pages);
    // No schedule lost: every URL the first run recorded is fetched again after the resume.
    for url in before.keys() {
        let last = after[url].last().unwrap();
        assert!(
            unix(last["fetched_at"].as_str().unwrap()) > killed_at,
            "{url} not fetched again after the resume (last: {last})"
        );
    }
    if let Some(profiles) = revisits_pass_warcio(&dir.out) {
        assert!(!profiles.is_empty());
    }
}

#[test]
fn a_policy_that_cannot_be_kept_is_refused_before_anything_starts() {
    let dir = CrawlDir::new(
        "[recrawl]\npolicy = \"adaptive\"\ninterval_secs = 10\nmin_interval_secs = 60\n",
    );
    let out = dir.crawl("http://a.test/").output().unwrap();
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("recrawl.interval_secs"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.out.join("pages.jsonl").exists());
}

/// The JSON body of an HTTP answer from [`http`], with its status code.
fn api(addr: &str, method: &str, path: &str, body: Option<&str>) -> (u16, serde_json::Value) {
    let text = http(addr, method, path, body, &[]);
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    let json = text
        .split_once("\r\n\r\n")
        .and_then(|(_, b)| serde_json::from_str(b).ok())
        .unwrap_or(serde_json::Value::Null);
    (status, json)
}

/// Records of `url` in `pages.jsonl` so far.
fn records_of(out: &Path, url: &str) -> usize {
    std::fs::read_to_string(out.join("pages.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&format!("\"url\":\"{url}\"")))
        .count()
}

/// Waits (up to 30 s) until `done` holds.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "30 s and not {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_waits_for_due_urls_and_an_operator_moves_a_schedule() {
    let site = changing_site(20).await;
    let seed = site.site().seed_url();
    let dir = CrawlDir::new(&format!(
        "[crawl]\nseeds = [\"{seed}\"]\nconcurrency = 8\ncheckpoint_ms = 200\n\
         [politeness]\ndelay_ms = 10\nmax_per_host = 4\n\
         [frontier]\nscope = \"domains\"\ndomains = [\"test\"]\n\
         [recrawl]\npolicy = \"fixed\"\ninterval_secs = 120\nmin_interval_secs = 1\n\
         max_interval_secs = 600\n"
    ));
    let mut child = dir.serve().spawn().unwrap();
    let (addr, _log) = watch_serve(&mut child);
    // Everything fetched once, nothing due for two minutes: waiting, and saying until when.
    let mut status = serde_json::Value::Null;
    eventually("waiting", || {
        status = api(&addr, "GET", "/api/v1/status", None).1;
        status["state"] == "waiting"
    })
    .await;
    assert!(status["scheduled"].as_u64().unwrap() > 20, "{status}");
    assert!(
        status["next_due"]
            .as_str()
            .is_some_and(|d| d.ends_with('Z')),
        "{status}"
    );
    assert_eq!(records_of(&dir.out, &seed), 1);

    // An operator's refetch: the seed now, whatever its schedule says.
    let body = format!("{{\"urls\": [\"{seed}\", \"http://never.test/x\", \"ftp://a.test/\"]}}");
    let (code, answer) = api(&addr, "POST", "/api/v1/recrawl", Some(&body));
    assert_eq!(code, 200, "{answer}");
    let results: Vec<_> = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["result"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(results, ["scheduled", "never_seen", "invalid"], "{answer}");
    eventually("the seed fetched again", || {
        records_of(&dir.out, &seed) == 2
    })
    .await;
    let (code, _) = api(
        &addr,
        "POST",
        "/api/v1/recrawl",
        Some("{\"urls\": [], \"at\": 5000000000}"),
    );
    assert_eq!(code, 400, "an `at` after 2100");

    // A host's own interval, from each URL's next completion: the seed, refetched now, comes
    // back 2 s later, and again.
    let host = seed.trim_start_matches("http://").trim_end_matches('/');
    let put = |body: &str| api(&addr, "PUT", &format!("/api/v1/hosts/{host}"), Some(body));
    assert_eq!(put("{\"recrawl_secs\": 40000000}").0, 400, "beyond a year");
    assert_eq!(put("{\"recrawl_secs\": 2}").0, 200);
    let (code, _) = api(
        &addr,
        "POST",
        "/api/v1/recrawl",
        Some(&format!("{{\"urls\": [\"{seed}\"]}}")),
    );
    assert_eq!(code, 200);
    eventually("the seed fetched on its host's interval", || {
        records_of(&dir.out, &seed) >= 5
    })
    .await;
    let metrics = http(&addr, "GET", "/metrics", None, &[]);
    for name in [
        "crawler_refetches_total{changed=\"false\"}",
        "crawler_not_modified_total",
        "crawler_scheduled ",
        "crawler_due_next_hour ",
        "crawler_next_due_timestamp_seconds ",
    ] {
        assert!(metrics.contains(name), "{name} missing:\n{metrics}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_crawl_without_a_schedule_refuses_recrawl_requests() {
    let dir = CrawlDir::new("");
    let mut child = dir.serve().spawn().unwrap();
    let (addr, _log) = watch_serve(&mut child);
    let (code, answer) = api(
        &addr,
        "POST",
        "/api/v1/recrawl",
        Some("{\"urls\": [\"http://a.test/\"]}"),
    );
    assert_eq!(code, 409, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("recrawl.policy"),
        "{answer}"
    );
    let body = Some("{\"recrawl_secs\": 60}");
    let (code, answer) = api(&addr, "PUT", "/api/v1/hosts/a.test", body);
    assert_eq!(code, 409, "{answer}");
    child.kill().unwrap();
    child.wait().unwrap();
}
