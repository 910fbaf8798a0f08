//! A crawl-wide page budget over many hosts: whatever holds the hosts' queues (one
//! scheduler, or partitions each counting their own), leases out and pages together never
//! pass the budget, a skip gives its page back wherever the next URL waits, and a spent
//! budget ends the crawl with `End::Budget`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use frontier::{End, Frontier, FrontierConfig, Lease, Next, Outcome};
use tokio::task::JoinHandle;

use super::{base_config, complete, lease, next, offer, Harness, HANG};

/// 16 hosts, 2 URLs each, a budget of 7 pages: 7 leases out and an eighth waits; 3 skipped,
/// 3 more come (from any host); all done, the crawl ends on its budget with 7 pages.
pub async fn a_budget_spans_every_host(h: &dyn Harness) {
    let cfg = FrontierConfig {
        max_pages: Some(7),
        ..base_config()
    };
    let f = h.open(cfg, &[]);
    let urls: Vec<String> = (0..16)
        .flat_map(|i| (0..2).map(move |j| format!("http://h{i}.test/{j}")))
        .collect();
    offer(&*f, None, &urls).await;
    let mut out: Vec<Lease> = Vec::new();
    for _ in 0..7 {
        out.push(lease(&*f).await);
    }
    let waiting = held_next(&f).await;
    for l in out.drain(..3) {
        complete(&*f, l, Outcome::Skipped).await;
    }
    match tokio::time::timeout(HANG, waiting).await.unwrap().unwrap() {
        Next::Lease(l) => out.push(l),
        other => panic!("a skip gives its page back: {other:?}"),
    }
    out.push(lease(&*f).await);
    out.push(lease(&*f).await);
    let urls: BTreeSet<_> = out.iter().map(|l| l.entry().url.clone()).collect();
    assert_eq!(urls.len(), 7, "seven different URLs out");
    let waiting = held_next(&f).await;
    for l in out {
        complete(&*f, l, Outcome::Done).await;
    }
    let end = tokio::time::timeout(HANG, waiting).await.unwrap().unwrap();
    assert_eq!(end, Next::End(End::Budget));
    let s = f.stats().await.unwrap();
    assert_eq!((s.pages, s.in_flight, s.queued), (7, 0, 22));
}

/// A `next` still waiting after 200 ms: the budget holds it.
async fn held_next(f: &Arc<dyn Frontier>) -> JoinHandle<Next> {
    let waiting = {
        let f = Arc::clone(f);
        tokio::spawn(async move { next(&*f).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !waiting.is_finished(),
        "an eighth lease within a budget of 7"
    );
    waiting
}
