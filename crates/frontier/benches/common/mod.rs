//! Helpers shared by the offer benchmarks of `crates/frontier` and `crates/store` (included
//! with `#[path]`): realistic URLs, peak RSS, and offers timed without URL formatting.

#![allow(dead_code)]

use std::time::Instant;

use frontier::LocalFrontier;

/// The `i`-th URL: ~1,000 hosts, realistic paths and a query.
pub fn url(i: u64) -> String {
    format!(
        "https://host{}.example.com/section/{}/page-{i}.html?ref={}",
        i % 1000,
        i % 97,
        i % 13
    )
}

/// Peak resident set size of this process, from /proc (kB → bytes).
pub fn peak_rss() -> u64 {
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

pub fn parallel(threads: u64, n: u64, f: impl Fn(u64, u64) + Sync) {
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
pub fn timed_offers(f: &LocalFrontier, threads: u64, n: u64) -> f64 {
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

/// Drains the queue with `threads` consumers (`next`, then `on_lease`, then `complete`),
/// each on its own current-thread runtime; returns the seconds taken.
pub fn timed_drain(
    f: &LocalFrontier,
    threads: u64,
    n: u64,
    on_lease: impl Fn(&frontier::Lease) + Sync,
) -> f64 {
    let t0 = Instant::now();
    parallel(threads, n, |_, _| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            while let Some(lease) = f.next().await {
                on_lease(&lease);
                f.complete(lease, frontier::Outcome::Done);
            }
        })
    });
    t0.elapsed().as_secs_f64()
}

/// What a fetch of URL `i` left just now: nginx's validators and a digest.
pub fn fetched(i: u64) -> frontier::Visited {
    let r = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as u32);
    frontier::Visited {
        history: recrawl::History {
            status: 200,
            last_fetch: now,
            last_modified: Some(1_790_000_000 + (r % 1_000_000) as u32),
            captured_at: (1_795_000_000, (r % 1000) as u16),
            digest: r.to_le_bytes(),
            body_bytes: (r % 200_000) as u32,
            fetches: 1,
            etag: recrawl::Etag::from_header(&format!(
                "\"{:x}-{:x}\"",
                0x5c00_0000 + (r & 0xff_ffff),
                r >> 52
            )),
            ..recrawl::History::default()
        },
        seen: recrawl::Observation::Changed,
    }
}
