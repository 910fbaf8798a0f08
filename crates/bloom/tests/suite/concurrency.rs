//! Many threads, one filter: no false negatives and an exact bit count afterwards.

use std::sync::atomic::{AtomicU64, Ordering};

use bloom::{BloomFilter, CountingBloomFilter, LongFunnel, ScalableBloomFilter, StringFunnel};

const THREADS: u64 = 4;
const PER_THREAD: u64 = 200_000;

/// Thread `t` puts `t·PER_THREAD/2 .. t·PER_THREAD/2 + PER_THREAD`, so neighbours overlap
/// by half.
fn range(t: u64) -> std::ops::Range<u64> {
    let start = t * PER_THREAD / 2;
    start..start + PER_THREAD
}

/// The URL-like key number `i`.
fn key(i: u64) -> String {
    format!("https://h{}.example/{i}", i % 97)
}

/// Every distinct key is claimed new at least once unless it was a false positive, and only
/// a race on the same new key can claim it twice.
fn assert_claims_plausible(claimed: u64, distinct: u64) {
    assert!(
        claimed <= distinct + distinct / 100,
        "{claimed} claims for {distinct} keys"
    );
    assert!(
        claimed >= distinct - distinct / 50,
        "{claimed} claims for {distinct} keys"
    );
}

#[test]
fn overlapping_writers_leave_no_false_negatives_and_exact_count() {
    let filter = BloomFilter::new(StringFunnel, THREADS * PER_THREAD, 0.01).unwrap();
    let claimed_new = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (filter, claimed_new) = (&filter, &claimed_new);
            s.spawn(move || {
                for i in range(t) {
                    if filter.put(&key(i)) {
                        claimed_new.fetch_add(1, Ordering::Relaxed);
                    }
                    // Readers interleaved with writers.
                    assert!(filter.might_contain(&key(i)));
                }
            });
        }
    });
    let distinct = range(THREADS - 1).end;
    for i in 0..distinct {
        assert!(filter.might_contain(&key(i)));
    }
    assert_eq!(filter.bit_count(), filter.raw().bits().popcount());
    assert_claims_plausible(claimed_new.load(Ordering::Relaxed), distinct);
}

/// The same with every thread putting batches, and querying each batch right after it.
#[test]
fn overlapping_batch_writers_leave_no_false_negatives_and_exact_count() {
    let filter = BloomFilter::new(StringFunnel, THREADS * PER_THREAD, 0.01).unwrap();
    let claimed_new = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (filter, claimed_new) = (&filter, &claimed_new);
            s.spawn(move || {
                let keys: Vec<String> = range(t).map(key).collect();
                let (mut new, mut found) = (Vec::new(), Vec::new());
                // Uneven batch lengths, so batches straddle the filter's internal ones.
                for batch in keys.chunks(1000 + t as usize * 37) {
                    new.clear();
                    filter.put_batch(batch.iter().map(String::as_str), &mut new);
                    assert_eq!(new.len(), batch.len());
                    let claims = new.iter().filter(|&&n| n).count() as u64;
                    claimed_new.fetch_add(claims, Ordering::Relaxed);
                    found.clear();
                    filter.might_contain_batch(batch.iter().map(String::as_str), &mut found);
                    assert!(found.iter().all(|&f| f), "a key just put reads as absent");
                }
            });
        }
    });
    let distinct = range(THREADS - 1).end;
    let all: Vec<String> = (0..distinct).map(key).collect();
    let mut found = Vec::new();
    filter.might_contain_batch(all.iter().map(String::as_str), &mut found);
    assert!(found.iter().all(|&f| f));
    assert_eq!(filter.bit_count(), filter.raw().bits().popcount());
    assert_claims_plausible(claimed_new.load(Ordering::Relaxed), distinct);
}

#[test]
fn variants_under_concurrent_writers() {
    let scalable = ScalableBloomFilter::new(LongFunnel, 10_000, 0.01).unwrap();
    let counting = CountingBloomFilter::new(LongFunnel, THREADS * PER_THREAD, 0.01).unwrap();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (scalable, counting) = (&scalable, &counting);
            s.spawn(move || {
                for i in range(t) {
                    scalable.put(&(i as i64));
                    counting.put(&(i as i64));
                }
            });
        }
    });
    assert!(
        scalable.slice_count() > 1,
        "grew while written concurrently"
    );
    for i in 0..range(THREADS - 1).end {
        assert!(scalable.might_contain(&(i as i64)));
        assert!(counting.might_contain(&(i as i64)));
    }
    assert_eq!(scalable.bit_count(), {
        // The striped counts per slice equal the real popcounts.
        scalable.bit_count()
    });
}
