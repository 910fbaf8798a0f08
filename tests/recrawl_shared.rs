//! `[recrawl]` on the shared frontier: three `crawler crawl` processes on one Redis serve one
//! schedule — every URL refetched by whichever process leases it when it is due, none of them
//! fetching a URL again before its due time, whoever fetched it last.

use crate::crawl::read_pages;
use crate::recrawl::{assert_schedule_kept, by_url, changing_site, unix, INTERVAL, JITTER};
use crate::redis::{finish_all, redis, stats, Process};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_share_one_recrawl_schedule() {
    let Some(server) = redis(&[]) else { return };
    let site = changing_site(60).await;
    let seed = site.site().seed_url();
    let interval = (INTERVAL as u32).to_string();
    let jitter = JITTER.to_string();
    let env = [
        ("CRAWLER_RECRAWL_POLICY", "fixed"),
        ("CRAWLER_RECRAWL_INTERVAL_SECS", interval.as_str()),
        ("CRAWLER_RECRAWL_MIN_INTERVAL_SECS", "1"),
        ("CRAWLER_RECRAWL_MAX_INTERVAL_SECS", "60"),
        ("CRAWLER_RECRAWL_JITTER", jitter.as_str()),
        ("CRAWLER_CRAWL_MAX_DURATION_SECS", "12"),
    ];
    let procs: Vec<Process> = (0..3)
        .map(|_| Process::new(&server.url(), "delay_ms = 10\nmax_per_host = 4"))
        .collect();
    let children = procs.iter().map(|p| p.spawn_with(&seed, &env)).collect();
    let errs = finish_all(children).await;

    let mut pages = Vec::new();
    for (i, p) in procs.iter().enumerate() {
        let mine = read_pages(&p.out);
        let refetches = mine.iter().filter(|r| r["refetch"] == true).count();
        println!("process {i}: {} records, {refetches} refetches", mine.len());
        assert!(
            refetches > 0,
            "process {i} refetched nothing: the schedule is not shared\n{}",
            errs[i]
        );
        assert_eq!(stats(&p.out)["stopped_by"], "max_duration");
        pages.extend(mine);
    }
    // One schedule over the three: by fetch time, each URL's records are a first fetch and
    // refetches at least the interval (less jitter and rounding) apart, whichever process
    // made them.
    pages.sort_by(|a, b| {
        let t = |r: &serde_json::Value| unix(r["fetched_at"].as_str().unwrap());
        t(a).total_cmp(&t(b))
    });
    assert_schedule_kept(&pages);
    let urls = by_url(&pages);
    let truth = site.site().ground_truth();
    let missing: Vec<_> = truth
        .urls
        .keys()
        .filter(|u| !urls.contains_key(*u))
        .collect();
    assert!(missing.is_empty(), "never fetched: {missing:?}");
    let refetched = urls.values().filter(|r| r.len() >= 2).count();
    assert!(
        refetched * 2 >= urls.len(),
        "{refetched} of {} URLs refetched in 12 s at a 3 s interval",
        urls.len()
    );
    site.stop().await;
}
