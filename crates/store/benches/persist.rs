//! What durable state costs the frontier: `offer` of new and duplicate URLs and `next` +
//! `complete` (+ `done`), in memory only, with the state in bloom mode, and with the state in
//! exact mode (a "maybe seen" confirmed against the stored fingerprints), same URLs, same run.
//!
//! ```sh
//! cargo bench -p store --bench persist -- --n 1000000 --threads "1 2"
//! cargo bench -p store --bench persist -- --n 10000000 --modes exact --index-mb 64
//! ```
//!
//! `--index-mb`: memory for exact mode's in-memory index (default 256); a budget smaller than
//! the set measures lookups that fall through to the database. The last phase, `reopen`, is
//! a resume: the state opened again (exact mode rebuilds its index from the log).
//!
//! Mode `recrawl` is bloom mode under a fixed daily schedule: each completion carries a
//! fetch's history (nginx's validators, a digest) and the URL sleeps until due, its entry
//! kept in the state — `state_mb` against bloom mode's is what schedules cost on disk, and
//! `peak_rss_mb` what they cost in memory (`--modes "bloom recrawl"`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use frontier::{Dedup, FrontierConfig, HostScope, LocalFrontier, Politeness, ScopeConfig};
use store::Store;

#[path = "../../frontier/benches/common/mod.rs"]
mod common;
use common::{fetched, parallel, peak_rss, timed_drain, timed_offers};

fn main() {
    let mut ns = vec![1_000_000u64];
    let mut threads = vec![1u64];
    let mut modes = vec!["memory".to_owned(), "bloom".into(), "exact".into()];
    let mut index_bytes = store::DEFAULT_INDEX_BYTES;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut v = || args.next().expect("value");
        match a.as_str() {
            "--n" => ns = v().split_whitespace().map(|x| x.parse().unwrap()).collect(),
            "--threads" => threads = v().split_whitespace().map(|x| x.parse().unwrap()).collect(),
            "--modes" => modes = v().split_whitespace().map(str::to_owned).collect(),
            "--index-mb" => index_bytes = v().parse::<usize>().unwrap() << 20,
            _ => {}
        }
    }
    println!(
        "n\tthreads\tmode\tphase\tops\tseconds\tops_per_s\tpeak_rss_mb\tcheckpoints\tstate_mb\tindexed"
    );
    for &n in &ns {
        for &t in &threads {
            for mode in &modes {
                run(n, t, mode, index_bytes);
            }
        }
    }
}

fn run(n: u64, t: u64, mode: &str, index_bytes: usize) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = FrontierConfig {
        scope: ScopeConfig {
            hosts: HostScope::Any,
            ..ScopeConfig::default()
        },
        expected_urls: n,
        fpp: 0.01,
        memory_capacity: 10_000,
        recrawl: if mode == "recrawl" {
            recrawl::Policy {
                schedule: recrawl::Schedule::Fixed,
                interval_secs: 86_400,
                ..recrawl::Policy::default()
            }
        } else {
            recrawl::Policy::default()
        },
        dedup: if mode == "exact" {
            Dedup::Exact
        } else {
            Dedup::Bloom
        },
        politeness: Politeness {
            delay: Duration::ZERO,
            max_per_host: u32::MAX,
            ..Politeness::default()
        },
        ..FrontierConfig::default()
    };
    let mut f = LocalFrontier::new(cfg, &[]).unwrap();
    let open = || {
        let settings = BTreeMap::from([("mode".to_owned(), mode.to_owned())]);
        let dedup = if mode == "exact" {
            store::Dedup::Exact { index_bytes }
        } else {
            store::Dedup::Bloom
        };
        Store::open(dir.path(), &settings, dedup, false, Duration::from_secs(1)).unwrap()
    };
    let store = (mode != "memory").then(|| Arc::new(open()));
    if let Some(s) = &store {
        f = f.with_journal(s.journal());
    }
    let report = |phase: &str, ops: u64, secs: f64, store: Option<&Store>| {
        let bytes = std::fs::metadata(dir.path().join(store::FILE_NAME)).map_or(0, |m| m.len());
        println!(
            "{n}\t{t}\t{mode}\t{phase}\t{ops}\t{secs:.3}\t{:.0}\t{:.1}\t{}\t{:.1}\t{}",
            ops as f64 / secs,
            peak_rss() as f64 / 1e6,
            store.map_or(0, |s| s.stats().checkpoints),
            bytes as f64 / 1e6,
            store.map_or(0, |s| s.stats().indexed)
        );
    };
    report("offer_new", n, timed_offers(&f, t, n), store.as_deref());
    report(
        "offer_duplicate",
        n,
        timed_offers(&f, t, n),
        store.as_deref(),
    );
    if mode == "recrawl" {
        // Every URL fetched once and asleep until due: `next` would wait for them.
        let t0 = Instant::now();
        parallel(t, n, |_, _| {
            while let Some(mut lease) = f.try_lease() {
                lease.set_visited(fetched(lease.entry().id));
                f.complete(lease, frontier::Outcome::Done);
            }
        });
        let scheduled = f.stats().extra("scheduled");
        report(
            "reschedule",
            scheduled,
            t0.elapsed().as_secs_f64(),
            store.as_deref(),
        );
    } else {
        let drained = timed_drain(&f, t, n, |lease| {
            if let Some(s) = &store {
                s.done(lease.entry().id, true);
            }
        });
        report("next_complete", n, drained, store.as_deref());
    }
    if let Some(s) = &store {
        let t0 = Instant::now();
        s.close().unwrap();
        report("final_checkpoint", 1, t0.elapsed().as_secs_f64(), Some(s));
    }
    drop(f);
    if let Some(s) = store {
        // A resume: open again (exact mode rebuilds its index from the admission log).
        drop(s);
        let t0 = Instant::now();
        let again = open();
        report("reopen", 1, t0.elapsed().as_secs_f64(), Some(&again));
    }
}
