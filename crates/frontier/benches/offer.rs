//! Frontier throughput: `offer` of duplicates (the common case) and of new URLs (including
//! the disk spill), and `next` + `complete`, over realistic URLs on ~1,000 hosts, with 1 and
//! 2 threads; plus the process's peak RSS, to see that memory stays flat while the queue
//! holds millions of URLs. URL strings are formatted outside the timed loops.
//!
//! ```sh
//! cargo bench -p frontier --bench offer -- --n 1000000 --threads "1 2" --capacity 10000
//! ```

use std::time::Instant;

use frontier::{FrontierConfig, HostScope, LocalFrontier, Outcome, Politeness, ScopeConfig};

fn url(i: u64) -> String {
    format!(
        "https://host{}.example.com/section/{}/page-{i}.html?ref={}",
        i % 1000,
        i % 97,
        i % 13
    )
}

/// Peak resident set size of this process, from /proc (kB → bytes).
fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
            })
        })
        .map_or(0, |kb| kb * 1024)
}

fn parallel(threads: u64, n: u64, f: impl Fn(u64, u64) + Sync) {
    std::thread::scope(|s| {
        for t in 0..threads {
            let f = &f;
            s.spawn(move || f(n * t / threads, n * (t + 1) / threads));
        }
    });
}

/// Offers URLs `0..n` from `threads` threads and returns the wall time spent offering: each
/// thread formats its URLs 10,000 at a time *outside* the timed part (a crawler gets them
/// from its parser), so the figure is the frontier's own cost.
fn timed_offers(f: &LocalFrontier, threads: u64, n: u64) -> f64 {
    let slowest = std::sync::Mutex::new(0f64);
    parallel(threads, n, |from, to| {
        let mut spent = std::time::Duration::ZERO;
        let mut batch = Vec::with_capacity(10_000);
        let mut i = from;
        while i < to {
            batch.clear();
            batch.extend((i..to.min(i + 10_000)).map(url));
            let t0 = Instant::now();
            for u in &batch {
                f.offer(u, 1, None);
            }
            spent += t0.elapsed();
            i += batch.len() as u64;
        }
        let mut s = slowest.lock().unwrap();
        *s = s.max(spent.as_secs_f64());
    });
    slowest.into_inner().unwrap()
}

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
                    s.filter_bytes as f64 / 1e6,
                    s.queued_disk
                );
            };
            report("offer_new", n, timed_offers(&f, t, n));
            report("offer_duplicate", n, timed_offers(&f, t, n));
            let t0 = Instant::now();
            parallel(t, n, |_, _| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    while let Some(lease) = f.next().await {
                        f.complete(lease, Outcome::Done);
                    }
                })
            });
            report("next_complete", n, t0.elapsed().as_secs_f64());
        }
    }
}
