//! The frontier with a journal: exact deduplication confirmed against it, admissions
//! numbered by it, restore from what it kept, and host back-offs journaled and restored.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use frontier::{Admission, FrontierConfig, LocalFrontier, Order, Outcome, Politeness, Resumable};
use tokio::time::Instant;

mod common;
use common::config;

/// An in-memory journal: the exact set and the admissions, as a store would keep them.
#[derive(Debug, Default)]
struct MemJournal {
    seen: Mutex<std::collections::HashSet<u128>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl frontier::Journal for MemJournal {
    fn admitted(&self, fp: u128, _host: &str, entry: &mut frontier::Entry) {
        assert!(
            self.seen.lock().unwrap().insert(fp),
            "{} admitted twice",
            entry.url
        );
        entry.id = 1 + self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn contains(&self, fp: u128) -> bool {
        self.seen.lock().unwrap().contains(&fp)
    }
}

/// A deliberately tiny filter (10 URLs at 50% false positives, growing): bloom mode skips
/// many new URLs; exact mode admits every one of them exactly once, and numbers them.
#[test]
fn exact_dedup_never_drops_a_url_that_bloom_would_skip() {
    let urls: Vec<String> = (0..5000)
        .map(|i| format!("http://h{}.test/p{i}", i % 7))
        .collect();
    let tiny = |dedup| FrontierConfig {
        expected_urls: 10,
        fpp: 0.5,
        dedup,
        ..config(100, Order::BreadthFirst)
    };
    let bloom = LocalFrontier::new(tiny(frontier::Dedup::Bloom), &[]).unwrap();
    let skipped = urls
        .iter()
        .filter(|u| bloom.offer(u, 1, None) == Admission::Duplicate)
        .count();
    assert!(skipped > 100, "bloom mode skipped only {skipped}");

    let journal = Arc::new(MemJournal::default());
    let exact = LocalFrontier::new(tiny(frontier::Dedup::Exact), &[])
        .unwrap()
        .with_journal(journal.clone());
    for u in &urls {
        assert_eq!(exact.offer(u, 1, None), Admission::Admitted, "{u}");
    }
    // Offered again (and from several threads at once): all duplicates now.
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for u in &urls {
                    assert_eq!(exact.offer(u, 1, None), Admission::Duplicate, "{u}");
                }
            });
        }
    });
    let stats = exact.stats();
    assert_eq!(stats.admitted, 5000);
    assert_eq!(journal.seen.lock().unwrap().len(), 5000);
    println!("tiny filter: bloom mode skipped {skipped} of 5000 new URLs, exact mode none");
}

/// Resuming: fingerprints restored into a fresh frontier make those URLs duplicates, and
/// restored entries are served (with their journal ids) without being offered.
#[tokio::test]
async fn restore_rebuilds_the_visited_set_and_the_queue() {
    let cfg = config(2, Order::BreadthFirst);
    let f = LocalFrontier::new(cfg, &[]).unwrap();
    for i in 0..10 {
        f.restore_seen(frontier::fingerprint(&format!("http://a.test/seen{i}")));
    }
    let mut e = frontier::Entry::new("http://a.test/pending".into(), 3, None);
    e.id = 42;
    f.restore_seen(frontier::fingerprint(&e.url));
    f.restore_entry(e);
    assert_eq!(
        f.offer("http://a.test/seen3", 1, None),
        Admission::Duplicate
    );
    assert_eq!(
        f.offer("http://a.test/pending", 1, None),
        Admission::Duplicate
    );
    assert_eq!(f.offer("http://a.test/new", 1, None), Admission::Admitted);
    let first = f.next().await.unwrap();
    assert_eq!(
        (first.entry().url.as_str(), first.entry().id),
        ("http://a.test/pending", 42)
    );
    f.complete(first, Outcome::Done);
    let second = f.next().await.unwrap();
    assert_eq!(second.entry().url, "http://a.test/new");
    f.complete(second, Outcome::Done);
    assert!(f.next().await.is_none());
}

/// Resuming with pages read back from an archive: an admission `hold` takes is journaled
/// (numbered, counted, a duplicate from then on) but never queued; the others are served.
#[tokio::test]
async fn held_admissions_are_journaled_but_not_queued() {
    let journal = Arc::new(MemJournal::default());
    let f = LocalFrontier::new(config(2, Order::BreadthFirst), &[])
        .unwrap()
        .with_journal(journal.clone());
    let links = ["held", "queued", "held-too"]
        .map(|p| frontier::Link::new(url::Url::parse(&format!("http://a.test/{p}")).unwrap(), 1))
        .to_vec();
    let mut held = Vec::new();
    let admitted = f.offer_links_holding(Some("http://a.test/"), links, &mut |e| {
        let hold = e.url.contains("held");
        if hold {
            held.push((e.url.clone(), e.id, e.parent.clone()));
        }
        hold
    });
    assert_eq!(admitted, vec![Admission::Admitted; 3]);
    assert_eq!(held.len(), 2);
    assert!(held
        .iter()
        .all(|(_, id, parent)| *id > 0 && parent.as_deref() == Some("http://a.test/")));
    assert_eq!(journal.seen.lock().unwrap().len(), 3);
    assert_eq!(f.offer("http://a.test/held", 1, None), Admission::Duplicate);
    let lease = f.next().await.unwrap();
    assert_eq!(lease.entry().url, "http://a.test/queued");
    f.complete(lease, Outcome::Done);
    assert!(f.next().await.is_none(), "the held entries are not served");
}

/// A journal that records host backoff changes only.
#[derive(Debug, Default)]
struct BackoffJournal {
    changes: Mutex<Vec<frontier::HostBackoff>>,
}

impl frontier::Journal for BackoffJournal {
    fn admitted(&self, _fp: u128, _host: &str, _entry: &mut frontier::Entry) {}
    fn contains(&self, _fp: u128) -> bool {
        false
    }
    fn host_backoff(&self, change: &frontier::HostBackoff) {
        self.changes.lock().unwrap().push(change.clone());
    }
}

/// Backoff changes reach the journal (growing on errors, zero after a success), and a
/// frontier restored from the last one keeps the host waiting.
#[tokio::test(start_paused = true)]
async fn host_backoff_is_journaled_and_restored() {
    let cfg = || FrontierConfig {
        politeness: Politeness {
            delay: Duration::ZERO,
            max_per_host: 1,
            backoff_base: Duration::from_secs(2),
            max_backoff: Duration::from_secs(60),
            ..Politeness::default()
        },
        ..config(64, Order::BreadthFirst)
    };
    let journal = Arc::new(BackoffJournal::default());
    let f = LocalFrontier::new(cfg(), &[])
        .unwrap()
        .with_journal(journal.clone());
    for i in 0..4 {
        f.offer(&format!("http://a.test/{i}"), 0, None);
    }
    let lease = f.next().await.unwrap();
    f.complete(lease, Outcome::HostError { retry_after: None });
    let lease = f.next().await.unwrap();
    f.complete(
        lease,
        Outcome::HostError {
            retry_after: Some(Duration::from_secs(30)),
        },
    );
    let last = {
        let changes = journal.changes.lock().unwrap();
        let got: Vec<_> = changes.iter().map(|c| (&*c.host, c.backoff)).collect();
        assert_eq!(
            got,
            [
                ("a.test", Duration::from_secs(2)),
                ("a.test", Duration::from_secs(4))
            ]
        );
        changes.last().unwrap().clone()
    };
    assert_eq!(last.wait, Duration::from_secs(30), "Retry-After wins");

    // A new process: restored, the host still waits out its Retry-After.
    let g = LocalFrontier::new(cfg(), &[]).unwrap();
    g.offer("http://a.test/9", 0, None);
    g.restore_backoff(&last.host, last.backoff, last.wait);
    let t0 = Instant::now();
    let lease = g.next().await.unwrap();
    assert!(
        t0.elapsed() >= Duration::from_secs(30),
        "{:?}",
        t0.elapsed()
    );
    g.complete(lease, Outcome::Done);

    // A success resets the backoff, and that too is journaled.
    let lease = f.next().await.unwrap();
    f.complete(lease, Outcome::Done);
    let changes = journal.changes.lock().unwrap();
    assert_eq!(changes.last().unwrap().backoff, Duration::ZERO);
}
