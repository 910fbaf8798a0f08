//! Frontier throughput: `offer` of duplicates (the common case) and of new URLs (including
//! the disk spill), and `next` + `complete`, over realistic URLs on ~1,000 hosts, with 1 and
//! 2 threads; plus the process's peak RSS, to see that memory stays flat while the queue
//! holds millions of URLs. URL strings are formatted outside the timed loops.
//!
//! ```sh
//! cargo bench -p frontier --bench offer -- --n 1000000 --threads "1 2" --capacity 10000
//! ```

use frontier::{FrontierConfig, HostScope, LocalFrontier, Politeness, ScopeConfig};

#[path = "common/mod.rs"]
mod common;
use common::{peak_rss, timed_drain, timed_offers};

fn main() {
    let mut ns = vec![1_000_000u64];
    let mut threads = vec![1u64, 2];
    let mut capacity = 10_000usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut v = || args.next().expect("value");
        match a.as_str() {
            "--n" => ns = v().split_whitespace().map(|x| x.parse().unwrap()).collect(),
            "--threads" => threads = v().split_whitespace().map(|x| x.parse().unwrap()).collect(),
            "--capacity" => capacity = v().parse().unwrap(),
            _ => {}
        }
    }
    println!("n\tthreads\tphase\tops\tseconds\tops_per_s\tpeak_rss_mb\tfilter_mb\tqueued_disk");
    for &n in &ns {
        for &t in &threads {
            let cfg = FrontierConfig {
                scope: ScopeConfig {
                    hosts: HostScope::Any,
                    ..ScopeConfig::default()
                },
                expected_urls: n,
                memory_capacity: capacity,
                politeness: Politeness {
                    delay: std::time::Duration::ZERO,
                    max_per_host: u32::MAX,
                    ..Politeness::default()
                },
                ..FrontierConfig::default()
            };
            let f = LocalFrontier::new(cfg, &[]).unwrap();
            let report = |phase: &str, ops: u64, secs: f64| {
                let s = f.stats();
                println!(
                    "{n}\t{t}\t{phase}\t{ops}\t{secs:.3}\t{:.0}\t{:.1}\t{:.1}\t{}",
                    ops as f64 / secs,
                    peak_rss() as f64 / 1e6,
                    s.extra("filter_bytes") as f64 / 1e6,
                    s.extra("queued_disk")
                );
            };
            report("offer_new", n, timed_offers(&f, t, n));
            report("offer_duplicate", n, timed_offers(&f, t, n));
            report("next_complete", n, timed_drain(&f, t, n, |_| {}));
        }
    }
}
