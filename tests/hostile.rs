//! `crawler crawl` against every hostile mode of the test site at once: each ends in a clear
//! record, and the crawl's peak memory stays bounded.

use testsite::{SiteConfig, TestSite};

use crate::crawl::{crawl_site, read_pages};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hostile_mode_ends_in_a_clear_record() {
    let site = TestSite::start(SiteConfig {
        pages: 100,
        hosts: 2,
        hostile: testsite::Hostile::all(),
        slow_secs: 30,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    // The timeouts leave a busy test machine ample time for the honest pages (and for the
    // server to render its 7 MB page) while the slow ones (30 s to the first byte, one byte
    // per 500 ms for 10 minutes) still hit them.
    // A crawl that hung on a hostile page would be stopped by `max_duration_secs` (far beyond
    // what the timeouts allow) and say so in `stopped_by`: no assertion on the machine's speed.
    // Any scope, so the redirect into 169.254.169.254 meets the SSRF guard (on, as by default).
    let (_dir, out) = crawl_site(&site, "[crawl]\nconcurrency = 16\nmax_depth = 20\ndrain_secs = 5\nmax_duration_secs = 900\n\
         [fetch]\nfirst_byte_timeout_ms = 6000\ntotal_timeout_ms = 12000\nmax_body_bytes = 2000000\n\
         max_retries = 1\nretry_base_ms = 100\nmax_redirects = 5\n\
         [politeness]\ndelay_ms = 0\nmax_per_host = 8\nbackoff_base_ms = 100\nmax_backoff_secs = 2\n\
         [frontier]\nscope = \"any\"\n").await;
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("stats.json")).unwrap()).unwrap();
    assert_eq!(stats["stopped_by"], "finished", "{stats}");
    let pages = read_pages(&out);
    let mut by_url = std::collections::HashMap::new();
    for p in &pages {
        let url = p["url"].as_str().unwrap().to_owned();
        assert!(by_url.insert(url, p.clone()).is_none(), "twice: {p}");
    }
    let record_of = |url: &str| {
        by_url
            .get(url)
            .unwrap_or_else(|| panic!("no record for {url}"))
            .clone()
    };
    let record = |path: &str| record_of(&format!("{}{path}", site.site().origin(0)));
    for path in [
        "/hostile/slow-first-byte",
        "/hostile/drip",
        "/hostile/huge-headers",
    ] {
        let r = record(path);
        assert!(
            r["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{path}: {r}"
        );
    }
    for path in ["/hostile/endless", "/hostile/huge"] {
        let r = record(path);
        assert_eq!(r["truncated"], true, "{path}: {r}");
        assert!(r["bytes"].as_u64().unwrap() <= 2_000_000, "{path}: {r}");
    }
    // The bomb is cut at the cap once inflating, or (when the server is still compressing
    // its gigabyte) times out waiting for headers: either way a clear record, bounded memory.
    let bomb = record("/hostile/gzip-bomb");
    assert!(
        bomb["truncated"] == true || bomb["error"].is_string(),
        "{bomb}"
    );
    assert!(bomb["bytes"].as_u64().unwrap() <= 2_000_000, "{bomb}");
    // 100,000 links in 7 MB: the first 2 MB are read and their ~29,000 links parsed.
    let many = record("/hostile/many-links");
    assert_eq!(many["truncated"], true, "{many}");
    assert!(many["links_found"].as_u64().unwrap() > 10_000, "{many}");
    assert_eq!(
        record("/hostile/nested-target")["status"],
        200,
        "found under 100,000 tags"
    );
    let trap = pages
        .iter()
        .filter(|p| p["url"].as_str().unwrap().contains("/hostile/trap/"))
        .count();
    assert!(
        (1..=5).contains(&trap),
        "the trap guard stops the ever-growing path: {trap}"
    );

    // A redirect chain into the cloud metadata address: followed to its last hop, which the
    // SSRF guard refuses (never requested: nothing listens there, and the record says why).
    assert_eq!(record("/hostile/redirect-private")["status"], 302);
    let metadata = "http://169.254.169.254/latest/meta-data/";
    assert_eq!(
        record("/hostile/redirect-private/next")["final_url"],
        metadata
    );
    let blocked = record_of(metadata);
    assert!(blocked["status"].is_null(), "{blocked}");
    assert_eq!(
        blocked["error"],
        "blocked address 169.254.169.254:80 (fetch.allow_private)"
    );
    // A loop across hosts: each hop recorded once, the loop ends at the first repeat.
    for h in [0, 1] {
        let r = record_of(&format!("{}/hostile/redirect-loop", site.site().origin(h)));
        assert_eq!(r["status"], 302, "{r}");
    }
    // A spiral of new URLs across the two hosts: max_redirects (5) hops are followed, and the
    // last record says why the chain ends there.
    let spiral: Vec<_> = pages
        .iter()
        .filter(|p| {
            p["url"]
                .as_str()
                .unwrap()
                .contains("/hostile/redirect-spiral")
        })
        .collect();
    assert_eq!(spiral.len(), 6, "{spiral:?}");
    let last = record_of(&format!(
        "{}/hostile/redirect-spiral/5",
        site.site().origin(1)
    ));
    assert_eq!(
        last["error"], "redirect not followed: more than 5 redirects (fetch.max_redirects)",
        "{last}"
    );
    // 10,000 hosts from one page: each gets its robots.txt asked for and its record (404).
    for i in 0..testsite::MANY_HOSTS {
        let url = format!("http://h{}.test:{}/", 2 + i, site.addr().port());
        assert_eq!(record_of(&url)["status"], 404, "{url}");
    }
    assert!(
        stats["frontier"]["hosts"].as_u64().unwrap() >= 2 + u64::from(testsite::MANY_HOSTS),
        "{stats}"
    );
    // A 100 MB robots.txt: its first 500 KiB are read and obeyed; the `Disallow: /` at its
    // end is not, so host 0's root page (the seed) was fetched.
    assert_eq!(record("/")["status"], 200);
    // A Retry-After of a year is not waited for, with retries left.
    let year = record("/hostile/retry-after-year");
    assert_eq!(year["status"], 503, "{year}");
    assert_eq!(year["attempts"], 1, "{year}");
    assert_eq!(
        year["error"],
        "Retry-After of 31536000 s is beyond politeness.max_backoff_secs (2 s): not retried"
    );
    // A 304 nobody asked for is recorded as what it is, and its Location is not followed:
    // the orphan it names is never fetched.
    let not_modified = record("/hostile/not-modified");
    assert_eq!(not_modified["status"], 304, "{not_modified}");
    assert_eq!(
        not_modified["error"], "304 Not Modified to a request without validators",
        "{not_modified}"
    );
    let orphan = format!("{}/orphan/0", site.site().origin(0));
    assert!(!by_url.contains_key(&orphan), "followed a 304's Location");
    // A reset mid-body is a network failure: retried, then recorded with the error.
    let reset = record("/hostile/reset");
    assert_eq!(reset["attempts"], 2, "{reset}");
    assert!(
        reset["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("body: ")),
        "{reset}"
    );
    // Hostile sitemaps: each file's record says what was not read, and the crawl goes on.
    let sitemap = |name: &str| record(&format!("{}{name}", testsite::HOSTILE_SITEMAPS));
    let error = |r: &serde_json::Value| r["error"].as_str().unwrap_or_default().to_owned();
    let bomb = sitemap("bomb.xml.gz");
    assert_eq!(
        error(&bomb),
        "sitemap larger than 52428800 bytes uncompressed",
        "{bomb}"
    );
    let huge = sitemap("huge.xml");
    assert_eq!(
        error(&huge),
        "sitemap: more than 50000 entries; the rest are not read; \
         sitemap: 50000 entries not on this sitemap's host ignored",
        "{huge}"
    );
    let broken = sitemap("broken.xml");
    assert!(
        error(&broken).starts_with("sitemap: malformed XML at byte "),
        "{broken}"
    );
    // Mismatched end tags are tolerated: both entries before the damage are kept.
    assert_eq!(broken["links_found"], 2, "{broken}");
    let nested = record_of(&format!(
        "{}{}nest/2.xml",
        site.site().origin(1),
        testsite::HOSTILE_SITEMAPS
    ));
    assert_eq!(
        error(&nested),
        "sitemap index nested more than 2 deep: its 1 sitemaps are not read"
    );
    assert!(!by_url.contains_key(&format!(
        "{}{}nest/3.xml",
        site.site().origin(1),
        testsite::HOSTILE_SITEMAPS
    )));
    let many = sitemap("many.xml");
    assert!(
        error(&many).ends_with("sitemaps beyond 1000 per host are not read"),
        "{many}"
    );
    let files_of_host_0 = pages
        .iter()
        .filter(|p| {
            p["sitemap"] == true
                && p["url"]
                    .as_str()
                    .unwrap()
                    .starts_with(&site.site().origin(0))
        })
        .count();
    assert_eq!(files_of_host_0, 1000, "the per-host limit");
    // With every hostile mode on, memory stays bounded.
    let rss = stats["peak_rss_bytes"]
        .as_u64()
        .expect("Linux reports VmHWM");
    assert!(rss <= 200 << 20, "peak RSS {} MB", rss >> 20);
    site.stop().await;
}
