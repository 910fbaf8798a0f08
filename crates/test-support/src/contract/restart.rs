//! A restart: a frontier reopened on the same crawl keeps what was done and serves again what
//! was queued or leased and never completed.

use std::collections::BTreeMap;

use frontier::{Admission, End, FrontierConfig, Next, Outcome};

use super::{base_config, complete, lease, next, offer, Harness};

/// A restart: what was done stays done and seen, what was queued or leased (never
/// completed) is served again, and the page budget counts the pages of before.
pub async fn restore(h: &dyn Harness) {
    let cfg = || FrontierConfig {
        max_pages: Some(5),
        ..base_config()
    };
    let f = h.open(cfg(), &[]);
    let urls: Vec<String> = (0..5).map(|i| format!("http://s.test/{i}")).collect();
    offer(&*f, None, &urls).await;
    let done = lease(&*f).await;
    let lost = lease(&*f).await;
    complete(&*f, done, Outcome::Done).await;
    drop(lost);
    drop(f);
    let Some(g) = h.reopen(cfg(), &[]) else {
        return;
    };
    assert_eq!(
        offer(&*g, None, &urls).await,
        [Admission::Duplicate; 5],
        "the visited set survives"
    );
    let mut served = BTreeMap::new();
    loop {
        match next(&*g).await {
            Next::Lease(l) => {
                *served.entry(l.entry().url.clone()).or_insert(0) += 1;
                complete(&*g, l, Outcome::Done).await;
            }
            Next::End(e) => {
                assert_eq!(e, End::Budget, "1 page before + 4 now");
                break;
            }
        }
    }
    // The leased-but-lost URL and the three queued ones, each once; the done one not.
    let want: BTreeMap<String, u32> = urls[1..].iter().map(|u| (u.clone(), 1)).collect();
    assert_eq!(served, want);
    assert_eq!(g.stats().await.unwrap().pages, 5);
}

/// A restart without a page budget, the URLs on many hosts: what was done stays done and
/// seen, what was queued or leased (never completed) is served again, each once, and the
/// crawl then ends.
pub async fn a_restart_serves_what_was_not_done(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    let urls: Vec<String> = (0..12).map(|i| format!("http://r{i}.test/")).collect();
    offer(&*f, None, &urls).await;
    let done = lease(&*f).await;
    let lost = lease(&*f).await;
    let done_url = done.entry().url.clone();
    complete(&*f, done, Outcome::Done).await;
    drop(lost);
    drop(f);
    let Some(g) = h.reopen(base_config(), &[]) else {
        return;
    };
    assert_eq!(
        offer(&*g, None, &urls).await,
        [Admission::Duplicate; 12],
        "the visited set survives"
    );
    let mut served = BTreeMap::new();
    loop {
        match next(&*g).await {
            Next::Lease(l) => {
                *served.entry(l.entry().url.clone()).or_insert(0) += 1;
                complete(&*g, l, Outcome::Done).await;
            }
            Next::End(e) => {
                assert_eq!(e, End::Finished);
                break;
            }
        }
    }
    let want: BTreeMap<String, u32> = urls
        .iter()
        .filter(|u| **u != done_url)
        .map(|u| (u.clone(), 1))
        .collect();
    assert_eq!(
        served, want,
        "the lost lease and the queued URLs, each once"
    );
    let stats = g.stats().await.unwrap();
    assert_eq!((stats.pages, stats.queued, stats.in_flight), (12, 0, 0));
}
