//! Criterion micro-benchmarks: the two atomic set paths of `BitArray` (Guava's CAS loop vs
//! `fetch_or`), alone and with two threads contending on the same words, and per-operation
//! latency of `put` / `might_contain` on URL keys next to `fastbloom` and `bloomfilter`, and
//! Murmur3 x64-128 as the funnels compute it (`Hash128::of_bytes`) next to the `mur3` crate's
//! general function, on keys of one length and of varying lengths.
//!
//! ```sh
//! cargo bench -p bloom --bench bloom
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use bloom::{BitArray, BloomFilter, Hash128, StringFunnel};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// Distinct pseudo-random indices (a full-period LCG over a power-of-two range).
fn indices(count: u64, bits_log2: u32) -> impl Iterator<Item = u64> {
    let mask = (1u64 << bits_log2) - 1;
    let mut x = 0x2545_F491_4F6C_DD1Du64 & mask;
    (0..count).map(move |_| {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407)
            & mask;
        x
    })
}

/// `threads` threads each set `iters / threads` bits of one array, all walking the same
/// index sequence (maximal contention: most sets race on the same word).
fn time_sets(threads: u64, iters: u64, cas: bool) -> Duration {
    const BITS_LOG2: u32 = 24; // 2 MiB: cache-resident, so the atomics dominate
    let bits = BitArray::with_bits(1 << BITS_LOG2).unwrap();
    let per_thread = iters / threads;
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            let bits = &bits;
            s.spawn(move || {
                for i in indices(per_thread, BITS_LOG2) {
                    black_box(if cas { bits.set_cas(i) } else { bits.set(i) });
                }
            });
        }
    });
    start.elapsed()
}

fn bit_set(c: &mut Criterion) {
    let mut group = c.benchmark_group("bitarray_set");
    group.throughput(Throughput::Elements(1));
    for threads in [1u64, 2] {
        for (name, cas) in [("fetch_or", false), ("cas_loop", true)] {
            group.bench_with_input(BenchmarkId::new(name, threads), &threads, |b, &t| {
                b.iter_custom(|iters| time_sets(t, iters.max(t), cas))
            });
        }
    }
    group.finish();
}

fn url(i: u64) -> String {
    format!(
        "https://host{}.example.com/section/{}/page-{i}.html",
        i % 1024,
        i % 97
    )
}

fn filters(c: &mut Criterion) {
    const N: u64 = 1_000_000;
    let present: Vec<String> = (0..N).map(url).collect();
    let absent: Vec<String> = (N..2 * N).map(url).collect();
    let ours = BloomFilter::new(StringFunnel, N, 0.01).unwrap();
    let fast = fastbloom::AtomicBloomFilter::with_false_pos(0.01).expected_items(N as usize);
    let mut plain = bloomfilter::Bloom::new_for_fp_rate(N as usize, 0.01).unwrap();
    for k in &present {
        ours.put(k);
        fast.insert(k.as_str());
        plain.set(k.as_str());
    }
    let mut group = c.benchmark_group("url_1e6");
    group.throughput(Throughput::Elements(1));
    for (phase, keys) in [("contains_present", &present), ("contains_absent", &absent)] {
        let mut i = 0usize;
        let mut next = move || {
            i = (i + 1) % keys.len();
            keys[i].as_str()
        };
        group.bench_function(BenchmarkId::new("ours", phase), |b| {
            b.iter(|| ours.might_contain(next()))
        });
        group.bench_function(BenchmarkId::new("fastbloom", phase), |b| {
            b.iter(|| fast.contains(next()))
        });
        group.bench_function(BenchmarkId::new("bloomfilter", phase), |b| {
            b.iter(|| plain.check(next()))
        });
    }
    // Duplicate puts: the crawler's common case (a link seen before).
    let mut i = 0usize;
    group.bench_function(BenchmarkId::new("ours", "put_duplicate"), |b| {
        b.iter(|| {
            i = (i + 1) % present.len();
            ours.put(&present[i])
        })
    });
    group.bench_function(BenchmarkId::new("fastbloom", "put_duplicate"), |b| {
        b.iter(|| {
            i = (i + 1) % present.len();
            fast.insert(present[i].as_str())
        })
    });
    group.finish();
}

/// Murmur3 over keys of random bytes taken in turn: all of 55 bytes (a URL of the
/// throughput benches), or of 16–79 bytes, uniformly — a crawl's URLs, whose lengths change
/// from one to the next; 4,096 keys (they stay in the caches) or 10^6 (60 MB: read from
/// memory, as the throughput benches read theirs).
fn murmur3(c: &mut Criterion) {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut group = c.benchmark_group("murmur3");
    group.throughput(Throughput::Elements(1));
    for (count, count_name) in [(4096, "4096_keys"), (1_000_000, "1e6_keys")] {
        for (from, spread, len_name) in [(55, 1, "len_55"), (16, 64, "len_16_79")] {
            let keys: Vec<Vec<u8>> = (0..count)
                .map(|_| {
                    let len = from + (next() % spread) as usize;
                    (0..len).map(|_| next() as u8).collect()
                })
                .collect();
            let name = format!("{count_name}/{len_name}");
            let mut i = 0usize;
            group.bench_function(BenchmarkId::new("of_bytes", &name), |b| {
                b.iter(|| {
                    i = (i + 1) % keys.len();
                    Hash128::of_bytes(&keys[i])
                })
            });
            group.bench_function(BenchmarkId::new("mur3", &name), |b| {
                b.iter(|| {
                    i = (i + 1) % keys.len();
                    mur3::murmurhash3_x64_128(&keys[i], 0)
                })
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = bit_set, filters, murmur3
}
criterion_main!(benches);
