//! The memory governor (`crawl.max_memory_mb`) seen from outside: a crawl of big pages under a
//! budget below its own unthrottled peak stays within 10% of the budget and still reaches
//! its ground truth.

use testsite::{SiteConfig, TestSite};

use crate::crawl::crawl_site;
use crate::util::recorded;

/// Many fetches of 8 MB pages at once (what makes memory peak), under a budget of `mb` MiB
/// (0: none).
fn settings(mb: u64) -> String {
    format!(
        "[crawl]\nconcurrency = 128\npersist = false\nprogress_secs = 60\nmax_memory_mb = {mb}\n\
         [fetch]\nretry_base_ms = 20\n\
         [politeness]\nbackoff_base_ms = 20\ndelay_ms = 0\nmax_per_host = 16\nmax_per_ip = 0\n"
    )
}

fn stats(out: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("stats.json")).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_below_the_peak_holds_and_the_crawl_completes() {
    let site = TestSite::start(SiteConfig {
        pages: 240,
        hosts: 16,
        big_pages: 120,
        ..SiteConfig::default()
    })
    .await
    .unwrap();
    let truth = site.site().ground_truth();

    // The crawl's own peak, ungoverned: the budget is set below it, so the test does not
    // depend on this machine's allocator or build.
    let (_dir, out) = crawl_site(&site, &settings(0)).await;
    let unthrottled = stats(&out)["peak_rss_bytes"]
        .as_u64()
        .expect("Linux reports VmHWM");
    assert!(
        stats(&out).get("memory_throttled_secs").is_none(),
        "off by default"
    );

    let budget_mb = (unthrottled * 8 / 10) >> 20;
    let (_dir, out) = crawl_site(&site, &settings(budget_mb)).await;
    let governed = stats(&out);
    let peak = governed["peak_rss_bytes"].as_u64().unwrap();
    let budget = budget_mb << 20;
    eprintln!(
        "ungoverned peak {} MB; budget {budget_mb} MB: peak {} MB, throttled {} s",
        unthrottled >> 20,
        peak >> 20,
        governed["memory_throttled_secs"]
    );
    assert!(
        peak <= budget + budget / 10,
        "peak RSS {} MB over the budget of {budget_mb} MB (+10%); ungoverned {} MB",
        peak >> 20,
        unthrottled >> 20
    );
    assert!(
        governed["memory_throttled_secs"].as_f64().unwrap() > 0.0,
        "the governor held back: {governed}"
    );
    let pages = crate::crawl::read_pages(&out);
    if let Err(e) = truth.check(pages.iter().map(recorded)) {
        panic!("{e}");
    }
    site.stop().await;
}
