//! Unit tests of the crawl state: journaling, checkpoints, resume, exact mode, forget.

use std::collections::HashSet;
use std::time::Instant;

use redb::Database;

use super::*;
use crate::batch::FLUSH_AT;
use crate::writer::unix_ms;

fn settings(fpp: &str) -> BTreeMap<String, String> {
    [("frontier.fpp", fpp), ("frontier.scope", "domains")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn admit(j: &dyn Journal, url: &str, depth: u32) -> u64 {
    let mut e = Entry::new(url.to_owned(), depth, Some("http://a.test/".into()));
    let host = frontier::host_key(&url::Url::parse(url).unwrap()).to_owned();
    j.admitted(frontier::fingerprint(url), &host, &mut e);
    e.id
}

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn robots_and_backoffs_survive_a_restart_and_fresh_clears_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &settings("0.01"), Dedup::Bloom, false, HOUR).unwrap();
    let j = store.journal();
    store.put_robots("http://a.test", b"old".to_vec());
    store.put_robots("http://a.test", b"new".to_vec());
    store.put_robots("http://b.test:81", Vec::new());
    let change = |host: &str, backoff: u64, wait: u64| frontier::HostBackoff {
        host: host.into(),
        backoff: Duration::from_secs(backoff),
        wait: Duration::from_secs(wait),
    };
    let before = unix_ms();
    j.host_backoff(&change("a.test", 2, 30));
    let after = unix_ms();
    j.host_backoff(&change("b.test:81", 4, 4));
    store.checkpoint().unwrap();
    j.host_backoff(&change("b.test:81", 0, 0)); // healthy again: forgotten
    store.close().unwrap();
    drop((store, j));

    let store = Store::open(dir.path(), &settings("0.01"), Dedup::Bloom, false, HOUR).unwrap();
    let mut robots = store.robots().unwrap();
    robots.sort();
    assert_eq!(
        robots,
        [
            ("http://a.test".to_owned(), b"new".to_vec()),
            ("http://b.test:81".to_owned(), Vec::new())
        ]
    );
    let backoffs = store.backoffs().unwrap();
    assert_eq!(backoffs.len(), 1, "{backoffs:?}");
    assert_eq!(backoffs[0].host, "a.test");
    assert_eq!(backoffs[0].backoff, Duration::from_secs(2));
    let until = backoffs[0].not_before_unix_ms;
    assert!(
        (before + 30_000..=after + 30_000).contains(&until),
        "{until} {before} {after}"
    );
    drop(store);

    let store = Store::open(dir.path(), &settings("0.01"), Dedup::Bloom, true, HOUR).unwrap();
    assert!(store.robots().unwrap().is_empty());
    assert!(store.backoffs().unwrap().is_empty());
}

#[test]
fn a_closed_store_resumes_with_its_queue_and_visited_set() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
    assert!(!store.resumed());
    let j = store.journal();
    let a = admit(&*j, "http://a.test/1", 1);
    let b = admit(&*j, "http://b.test:8080/2", 2);
    let _c = admit(&*j, "http://a.test/3", 2);
    assert!(
        j.contains(frontier::fingerprint("http://a.test/1")),
        "pending counts"
    );
    assert!(!j.contains(frontier::fingerprint("http://a.test/9")));
    store.done(a, true);
    store.checkpoint().unwrap();
    assert!(
        j.contains(frontier::fingerprint("http://a.test/1")),
        "committed counts"
    );
    store.done(b, false);
    store.close().unwrap();
    drop((store, j)); // the last handles: the database closes

    let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
    assert!(store.resumed());
    let mut pending = Vec::new();
    store
        .for_each_pending(|e| pending.push((e.url, e.depth, e.id)))
        .unwrap();
    assert_eq!(pending, vec![("http://a.test/3".to_owned(), 2, 3)]);
    let mut seen = HashSet::new();
    assert_eq!(
        store
            .for_each_seen(|fp| {
                seen.insert(fp);
            })
            .unwrap(),
        3
    );
    assert!(seen.contains(&frontier::fingerprint("http://b.test:8080/2")));
    let mut hosts = store.hosts().unwrap();
    hosts.sort();
    assert_eq!(hosts, vec![("a.test".into(), 2), ("b.test:8080".into(), 1)]);
    assert_eq!(store.pages_before().unwrap(), 1);
    // Admission numbers continue.
    assert_eq!(admit(&*store.journal(), "http://a.test/4", 1), 4);
}

#[test]
fn exact_answers_do_not_depend_on_the_index_budget() {
    // The whole set in memory, a budget that fills up part way, no index at all, and a
    // resume with a budget other than the first run's: the same answers, before and after
    // a checkpoint and after the resume.
    const ALL: usize = DEFAULT_INDEX_BYTES;
    const PART: usize = 256 << 10; // 256 shards × 64 slots: about 14,000 fingerprints
    for (first, then) in [(ALL, ALL), (PART, PART), (0, 0), (ALL, PART), (PART, ALL)] {
        let dir = tempfile::tempdir().unwrap();
        let url = |i: u32| format!("http://h{}.test/p/{i}", i % 7);
        let fp = |i: u32| frontier::fingerprint(&url(i));
        let check = |j: &dyn Journal, admitted: u32| {
            for i in 0..admitted {
                assert!(j.contains(fp(i)), "{first}/{then}: {} seen", url(i));
            }
            for i in 20_000..22_000 {
                assert!(!j.contains(fp(i)), "{first}/{then}: {} new", url(i));
            }
        };
        let open = |index_bytes| {
            let dedup = Dedup::Exact { index_bytes };
            Store::open(dir.path(), &settings("0.01"), dedup, false, HOUR).unwrap()
        };
        let store = open(first);
        let j = store.journal();
        for i in 0..10_000 {
            admit(&*j, &url(i), 1);
        }
        check(&*j, 10_000);
        store.checkpoint().unwrap();
        for i in 10_000..20_000 {
            admit(&*j, &url(i), 1);
        }
        check(&*j, 20_000);
        store.close().unwrap();
        let stats = store.stats();
        assert_eq!(stats.index_complete, first == ALL, "{first}");
        assert_eq!(stats.indexed == 20_000, first == ALL, "{first}");
        assert!(stats.index_bytes <= first as u64);
        drop((store, j));

        let store = open(then);
        check(&*store.journal(), 20_000);
        assert_eq!(store.stats().index_complete, then == ALL, "{then}");
    }
}

/// Polls `done` every millisecond; fails the test after 30 s, naming `what`.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "no {what} in 30 s");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn concurrent_exact_offers_admit_each_url_once_whatever_the_index() {
    // A filter far too small (most offers of new URLs are "maybe seen"), checkpoints every
    // 2 ms, and four threads offering the same URLs in different orders: every URL is
    // admitted exactly once, with the whole set in memory, part of it, or none.
    use frontier::{Admission, FrontierConfig, HostScope, LocalFrontier, ScopeConfig};
    const N: usize = 6_007; // prime: every stride below visits every URL
    for index_bytes in [DEFAULT_INDEX_BYTES, 256 << 10, 0] {
        let dir = tempfile::tempdir().unwrap();
        let dedup = Dedup::Exact { index_bytes };
        let every = Duration::from_millis(2);
        let store = Store::open(dir.path(), &settings("0.5"), dedup, false, every).unwrap();
        let cfg = FrontierConfig {
            scope: ScopeConfig {
                hosts: HostScope::Any,
                ..ScopeConfig::default()
            },
            expected_urls: 50,
            fpp: 0.5,
            dedup: frontier::Dedup::Exact,
            ..FrontierConfig::default()
        };
        let f = LocalFrontier::new(cfg, &[])
            .unwrap()
            .with_journal(store.journal());
        let urls: Vec<String> = (0..N)
            .map(|i| format!("http://h{}.test/p/{i}", i % 13))
            .collect();
        let admitted = AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..4 {
                let (f, urls, admitted, store) = (&f, &urls, &admitted, &store);
                s.spawn(move || {
                    for i in 0..N {
                        if t == 0 && i == N / 2 {
                            // Half way, wait for a checkpoint to commit what was admitted
                            // so far: the rest of the offers then run against the store's
                            // snapshot as well as its pending fingerprints, however fast
                            // the offers were.
                            wait_until("a checkpoint", || store.stats().checkpoints > 0);
                        }
                        let url = &urls[(i * (2 * t + 1) + t * 1_999) % N];
                        if f.offer(url, 1, None) == Admission::Admitted {
                            admitted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(admitted.into_inner(), N as u64, "index {index_bytes} B");
        store.close().unwrap();
    }
}

#[test]
fn what_the_last_checkpoint_did_not_commit_is_lost_like_in_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
    let j = store.journal();
    let a = admit(&*j, "http://a.test/1", 1);
    store.checkpoint().unwrap();
    admit(&*j, "http://a.test/2", 1);
    store.done(a, true);
    drop((store, j)); // no close: no final checkpoint
    let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
    let mut pending = Vec::new();
    store.for_each_pending(|e| pending.push(e.url)).unwrap();
    assert_eq!(
        pending,
        vec!["http://a.test/1".to_owned()],
        "served again, not lost"
    );
}

#[test]
fn changed_settings_are_refused_by_name_and_fresh_starts_over() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
    admit(&*store.journal(), "http://a.test/1", 0);
    store.close().unwrap();
    drop(store);
    let err = Store::open(dir.path(), &settings("0.001"), Dedup::EXACT, false, HOUR).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("frontier.fpp was 0.01 and is now 0.001"),
        "{text}"
    );
    assert!(text.contains("--fresh"), "{text}");
    let store = Store::open(dir.path(), &settings("0.001"), Dedup::EXACT, true, HOUR).unwrap();
    assert!(!store.resumed());
    assert_eq!(store.for_each_seen(|_| {}).unwrap(), 0);
}

#[test]
fn a_second_process_is_told_the_state_is_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let _store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
    let err = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap_err();
    assert!(matches!(err, StoreError::InUse(_)), "{err}");
}

#[test]
fn fresh_never_deletes_a_running_crawls_state_and_recovers_a_corrupt_one() {
    let dir = tempfile::tempdir().unwrap();
    let live = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
    admit(&*live.journal(), "http://a.test/1", 0);
    live.checkpoint().unwrap();
    let err = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, true, HOUR).unwrap_err();
    assert!(matches!(err, StoreError::InUse(_)), "{err}");
    let mut n = 0;
    live.for_each_seen(|_| n += 1).unwrap();
    assert_eq!(n, 1, "the running crawl's state is intact");
    drop(live);

    std::fs::write(
        dir.path().join(FILE_NAME),
        b"not a database, just garbage bytes",
    )
    .unwrap();
    let err = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap_err();
    assert!(matches!(err, StoreError::Db { .. }), "{err}");
    let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, true, HOUR).unwrap();
    assert!(!store.resumed());
}

#[test]
fn forget_requeues_done_urls_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
    let j = store.journal();
    let a = admit(&*j, "http://a.test/done", 3);
    admit(&*j, "http://a.test/queued", 1);
    store.done(a, true);
    store.close().unwrap();
    drop((store, j));
    let urls: Vec<(String, u128)> = [
        "http://a.test/done",
        "http://a.test/queued",
        "http://a.test/never",
    ]
    .iter()
    .map(|u| (u.to_string(), frontier::fingerprint(u)))
    .collect();
    let got = Store::forget(dir.path(), &urls).unwrap();
    assert_eq!(
        got,
        vec![Forgot::Requeued, Forgot::AlreadyQueued, Forgot::NeverSeen]
    );
    let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
    let mut pending = Vec::new();
    store
        .for_each_pending(|e| pending.push((e.url, e.depth)))
        .unwrap();
    assert_eq!(
        pending,
        vec![
            ("http://a.test/queued".into(), 1),
            ("http://a.test/done".into(), 3)
        ]
    );
}

#[test]
fn the_hook_runs_before_each_commit_and_a_failing_hook_keeps_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
    let calls = Arc::new(AtomicU64::new(0));
    let c = Arc::clone(&calls);
    store.set_before_commit(move || {
        if c.fetch_add(1, Ordering::SeqCst) == 0 {
            Err(std::io::Error::other("disk full"))
        } else {
            Ok(())
        }
    });
    admit(&*store.journal(), "http://a.test/1", 0);
    assert!(store.checkpoint().is_err());
    assert_eq!(store.stats().pending_events, 1);
    assert!(store.stats().last_error.unwrap().contains("disk full"));
    store.checkpoint().unwrap();
    assert_eq!(store.stats().pending_events, 0);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(store.stats().checkpoints, 1);
}

#[test]
fn a_failing_disk_is_retried_with_backoff_even_with_a_full_batch() {
    let dir = tempfile::tempdir().unwrap();
    let every = Duration::from_millis(20);
    let store = Store::open(dir.path(), &settings("0.01"), Dedup::Bloom, false, every).unwrap();
    let calls: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let c = Arc::clone(&calls);
    store.set_before_commit(move || {
        lock(&c).push(Instant::now());
        Err(std::io::Error::other("disk full"))
    });
    for id in 1..=FLUSH_AT as u64 {
        store.done(id, true);
    }
    wait_until("4 attempts", || lock(&calls).len() >= 4);
    // Each retry waits twice as long as the last (40, 80, 160 ms): a failing disk is not
    // hammered in a loop, although the batch stays full.
    let calls = lock(&calls).clone();
    for (i, w) in calls.windows(2).take(3).enumerate() {
        let gap = w[1] - w[0];
        assert!(gap >= every * (2u32 << i), "retry {i} after {gap:?}");
    }
    assert_eq!(store.backlog(), FLUSH_AT as u64, "the batch is kept");
}

/// A state written before queue rows had a format byte is migrated when it is opened:
/// its queued URLs are served as they were, and every row then has the byte.
#[test]
fn a_queue_without_format_bytes_is_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let urls = ["http://a.test/1", "http://a.test/2", "http://b.test:8080/3"];
    {
        let store = Store::open(dir.path(), &settings("0.01"), Dedup::Bloom, false, HOUR).unwrap();
        let j = store.journal();
        for u in urls {
            admit(&*j, u, 1);
        }
        store.close().unwrap();
    }
    // Back to the old layout: rows without the byte (entry format 1: without the 7 bytes of
    // via, sitemap level, an absent lastmod and visit), no `queue_format` in `meta`.
    {
        let db = Database::open(dir.path().join(FILE_NAME)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut queue = txn.open_table(QUEUE).unwrap();
            let rows: Vec<(u64, Vec<u8>)> = queue
                .iter()
                .unwrap()
                .map(|r| {
                    let (k, v) = r.unwrap();
                    let v = v.value();
                    (k.value(), v[1..v.len() - 7].to_vec())
                })
                .collect();
            assert_eq!(rows.len(), 3);
            for (k, v) in rows {
                queue.insert(k, v.as_slice()).unwrap();
            }
            let mut meta = txn.open_table(META).unwrap();
            meta.remove(queue_record::META_KEY).unwrap();
        }
        txn.commit().unwrap();
    }
    let store = Store::open(dir.path(), &settings("0.01"), Dedup::Bloom, false, HOUR).unwrap();
    let mut pending = Vec::new();
    store.for_each_pending(|e| pending.push(e.url)).unwrap();
    assert_eq!(pending, urls);
    store.close().unwrap();
    drop(store);
    let db = Database::open(dir.path().join(FILE_NAME)).unwrap();
    let read = db.begin_read().unwrap();
    let queue = read.open_table(QUEUE).unwrap();
    for row in queue.iter().unwrap() {
        assert_eq!(row.unwrap().1.value()[0], queue_record::FORMAT);
    }
}

/// A state whose queue a newer crawler wrote (a format this build does not know) is refused
/// with a clear error, and left as it was: its format mark is not rewritten.
#[test]
fn a_state_of_a_newer_format_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path(), &settings("0.01"), Dedup::Bloom, false, HOUR).unwrap();
        admit(&*store.journal(), "http://a.test/1", 1);
        store.close().unwrap();
    }
    let newer = queue_record::FORMAT + 1;
    let mark = |db: &Database| {
        let read = db.begin_read().unwrap();
        let meta = read.open_table(META).unwrap();
        let v = meta.get(queue_record::META_KEY).unwrap().unwrap();
        v.value().to_vec()
    };
    {
        let db = Database::open(dir.path().join(FILE_NAME)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut meta = txn.open_table(META).unwrap();
            meta.insert(queue_record::META_KEY, [newer].as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let e = Store::open(dir.path(), &settings("0.01"), Dedup::Bloom, false, HOUR).unwrap_err();
    assert!(
        matches!(e, StoreError::Newer { written, reads, .. } if written == newer && reads == queue_record::FORMAT),
        "{e}"
    );
    assert!(e.to_string().contains("newer crawler"), "{e}");
    let url = "http://a.test/1".to_owned();
    let fp = frontier::fingerprint(&url);
    let e = Store::forget(dir.path(), &[(url, fp)]).unwrap_err();
    assert!(matches!(e, StoreError::Newer { .. }), "forget too: {e}");
    let db = Database::open(dir.path().join(FILE_NAME)).unwrap();
    assert_eq!(mark(&db), [newer]);
}
