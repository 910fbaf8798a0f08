//! Property tests: the invariants no input may break.

use bloom::{
    BitArray, BloomFilter, CountingBloomFilter, Hash128, RawFilter, ScalableBloomFilter, Strategy,
    StringFunnel,
};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever was put is always reported as possibly present.
    #[test]
    fn no_false_negatives(keys in prop::collection::vec(".{0,40}", 0..400), n in 1u64..500, p in 0.001f64..0.5) {
        let filter = BloomFilter::new(StringFunnel, n, p).unwrap();
        for k in &keys {
            filter.put(k);
        }
        for k in &keys {
            prop_assert!(filter.might_contain(k));
        }
        prop_assert_eq!(filter.bit_count(), filter.raw().bits().popcount());
    }

    /// `put` says "changed" exactly when `might_contain` said "absent" just before.
    #[test]
    fn put_return_agrees_with_might_contain(keys in prop::collection::vec("[a-z]{0,6}", 0..300)) {
        let filter = BloomFilter::new(StringFunnel, 50, 0.05).unwrap();
        for k in &keys {
            let before = filter.might_contain(k);
            prop_assert_eq!(filter.put(k), !before);
            prop_assert!(filter.might_contain(k));
        }
    }

    /// The batch operations answer exactly as the one-at-a-time ones, item by item in order,
    /// and leave the same bits: with duplicates inside a batch (a small alphabet), batches
    /// longer than the internal batch, both strategies, and more hash functions than the fast
    /// path keeps on the stack (a tiny fpp).
    #[test]
    fn batches_answer_as_one_at_a_time(
        keys in prop::collection::vec("[a-f]{0,4}", 0..200),
        probes in prop::collection::vec("[a-h]{0,4}", 0..100),
        n in 1u64..300,
        p in prop::sample::select(vec![0.3, 0.01, 1e-6]),
        mitz32 in any::<bool>(),
    ) {
        let strategy = if mitz32 { Strategy::Murmur128Mitz32 } else { Strategy::Murmur128Mitz64 };
        let single = BloomFilter::with_strategy(StringFunnel, n, p, strategy).unwrap();
        let batched = BloomFilter::with_strategy(StringFunnel, n, p, strategy).unwrap();
        let expected_new: Vec<bool> = keys.iter().map(|k| single.put(k)).collect();
        let mut new = Vec::new();
        batched.put_batch(keys.iter().map(String::as_str), &mut new);
        prop_assert_eq!(new, expected_new);
        prop_assert_eq!(batched.to_bytes(), single.to_bytes());
        prop_assert_eq!(batched.bit_count(), batched.raw().bits().popcount());
        let expected_found: Vec<bool> = probes.iter().chain(&keys).map(|k| single.might_contain(k)).collect();
        let mut found = vec![true]; // answers are appended
        batched.might_contain_batch(probes.iter().chain(&keys).map(String::as_str), &mut found);
        prop_assert_eq!(&found[1..], &expected_found[..]);
    }

    /// Serialising and reading back preserves every answer.
    #[test]
    fn serialization_round_trips(keys in prop::collection::vec(any::<String>(), 0..200), probes in prop::collection::vec(any::<String>(), 0..200)) {
        let filter = BloomFilter::new(StringFunnel, 100, 0.01).unwrap();
        for k in &keys {
            filter.put(k);
        }
        let back = BloomFilter::from_slice(&filter.to_bytes(), StringFunnel).unwrap();
        for k in keys.iter().chain(&probes) {
            prop_assert_eq!(back.might_contain(k), filter.might_contain(k));
        }
    }

    /// Arbitrary bytes never panic the reader.
    #[test]
    fn hostile_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = BloomFilter::from_slice(&bytes, StringFunnel);
        let _ = BloomFilter::read_from(&bytes[..], StringFunnel);
    }

    /// The variants keep the no-false-negative promise too (counting: for items not removed).
    #[test]
    fn variants_have_no_false_negatives(keys in prop::collection::vec("[a-z0-9]{1,12}", 1..300), removed in prop::collection::vec(any::<prop::sample::Index>(), 0..50)) {
        let scalable = ScalableBloomFilter::new(StringFunnel, 16, 0.01).unwrap();
        let counting = CountingBloomFilter::new(StringFunnel, 64, 0.01).unwrap();
        for k in &keys {
            scalable.put(k);
            counting.put(k);
        }
        let mut gone = std::collections::HashSet::new();
        for idx in &removed {
            let k = idx.get(&keys);
            if gone.insert(k.clone()) {
                // Remove every insertion of `k`.
                for _ in keys.iter().filter(|x| *x == k) {
                    prop_assert!(counting.remove(k));
                }
            }
        }
        for k in &keys {
            prop_assert!(scalable.might_contain(k));
            if !gone.contains(k) {
                prop_assert!(counting.might_contain(k), "false negative for {}", k);
            }
        }
    }
}

/// On arrays big enough for the batch operations to prefetch and pipeline (≥ 2 MiB; this one
/// is 4.8 MB) they still answer as one call per item does and leave the same bits — across
/// calls of every length around the internal batch and pipeline sizes, with repeats inside a
/// batch and across batches.
#[test]
fn pipelined_batches_on_a_big_filter_answer_as_one_at_a_time() {
    let single = BloomFilter::new(StringFunnel, 4_000_000, 0.01).unwrap();
    let batched = BloomFilter::new(StringFunnel, 4_000_000, 0.01).unwrap();
    assert!(single.raw().bits().word_count() * 8 > 4 << 20);
    // Key i repeats key i - 3 every seventh step and key i - 40 every eleventh.
    let keys: Vec<String> = (0..30_000u32)
        .map(|i| match i {
            _ if i % 7 == 6 => i - 3,
            _ if i % 11 == 10 && i >= 40 => i - 40,
            _ => i,
        })
        .map(|i| format!("https://host{}.example/p/{i}", i % 13))
        .collect();
    let lengths = [1, 15, 16, 17, 31, 32, 33, 47, 48, 49, 255, 256, 257, 1000];
    let mut rest = &keys[..];
    let mut new = Vec::new();
    for len in lengths.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (now, later) = rest.split_at((*len).min(rest.len()));
        batched.put_batch(now.iter().map(String::as_str), &mut new);
        rest = later;
    }
    let expected_new: Vec<bool> = keys.iter().map(|k| single.put(k)).collect();
    assert_eq!(new, expected_new);
    assert!(new.iter().any(|n| !n), "the repeats read as present");
    assert_eq!(batched.to_bytes(), single.to_bytes());
    assert_eq!(batched.bit_count(), batched.raw().bits().popcount());

    let probes: Vec<String> = (0..20_000u32)
        .map(|i| format!("https://host{}.example/p/{}", i % 13, i * 3))
        .collect();
    let expected_found: Vec<bool> = probes.iter().map(|k| single.might_contain(k)).collect();
    assert!(expected_found.iter().any(|f| *f) && expected_found.iter().any(|f| !f));
    let mut found = Vec::new();
    let mut rest = &probes[..];
    for len in lengths.iter().rev().cycle() {
        if rest.is_empty() {
            break;
        }
        let (now, later) = rest.split_at((*len).min(rest.len()));
        batched.might_contain_batch(now.iter().map(String::as_str), &mut found);
        rest = later;
    }
    assert_eq!(found, expected_found);
}

/// A xorshift64 generator: reproducible pseudo-random words for the array tests.
fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// The same on a half-full big array (random words, 4 MiB, k = 7): there every item's probes
/// meet set and clear bits in every mix, so each stage of the query pipeline decides answers
/// (an item whose last probe alone is clear, say), and `put` flips anything from none to all
/// of its bits.
#[test]
fn pipelined_batches_on_a_half_full_array_answer_as_one_at_a_time() {
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
    let words: Vec<u64> = (0..(4 << 20) / 8).map(|_| next()).collect();
    let hashes: Vec<Hash128> = (0..50_000)
        .map(|_| Hash128 {
            h1: next(),
            h2: next(),
        })
        .collect();
    let filter = RawFilter::from_parts(
        BitArray::from_words(words.clone()).unwrap(),
        7,
        Strategy::default(),
    )
    .unwrap();
    let expected: Vec<bool> = hashes
        .iter()
        .map(|h| filter.might_contain_hash(*h))
        .collect();
    let hits = expected.iter().filter(|f| **f).count();
    assert!(
        (100..2_000).contains(&hits),
        "about 0.5^7 of random items: {hits}"
    );
    let mut found = vec![false; hashes.len()];
    for (hashes, found) in hashes.chunks(1_000).zip(found.chunks_mut(1_000)) {
        filter.might_contain_hashes(hashes, found);
    }
    assert_eq!(found, expected);

    let single = RawFilter::from_parts(
        BitArray::from_words(words.clone()).unwrap(),
        7,
        Strategy::default(),
    )
    .unwrap();
    let batched =
        RawFilter::from_parts(BitArray::from_words(words).unwrap(), 7, Strategy::default())
            .unwrap();
    let repeated: Vec<Hash128> = hashes.iter().chain(&hashes[..5_000]).copied().collect();
    let expected_new: Vec<bool> = repeated.iter().map(|h| single.put_hash(*h)).collect();
    let mut new = vec![false; repeated.len()];
    batched.put_hashes(&repeated, &mut new);
    assert_eq!(new, expected_new);
    assert_eq!(batched.bits().to_words(), single.bits().to_words());
    assert_eq!(batched.bits().bit_count(), batched.bits().popcount());
}

/// Every hash count from 1 to 16 has its own copy of the fast paths, and counts above run
/// them with the count read at run time. Each of them — single and batch, query and `put`,
/// on an array small enough for the staged queries and on one big enough for the
/// prefetching ones (≥ 2 MiB) — answers and sets bits exactly as Guava's index sequence
/// ([`Strategy::indices`], hardware `%`) says, on a half-full array.
///
/// The items come in batches of 16 ([`bloom::BATCH`]). In two batches of three every item
/// passes its first probe, which hands the rest of a batch query to the plan for known
/// keys; the third batch is random items, some of them planted (all their bits set) and
/// some repeated from earlier, so that batch holds items found, items that stop at the
/// first probe and items that stop later. The random batches are also queried alone.
#[test]
fn every_hash_count_follows_guavas_index_sequence() {
    assert_eq!(bloom::BATCH, 16);
    let mut next = xorshift(0x2545_F491_4F6C_DD1D);
    for len in [1_001usize, (5 << 20) / 16] {
        let half_full: Vec<u64> = (0..len).map(|_| next()).collect();
        let bit_size = len as u64 * 64;
        for k in 1..=20u32 {
            let indices = |h: &Hash128| Strategy::Murmur128Mitz64.indices(*h, k, bit_size);
            let bit = |words: &[u64], i: u64| words[(i / 64) as usize] >> (i % 64) & 1 != 0;
            let mut words = half_full.clone();
            let mut hashes: Vec<Hash128> = Vec::new();
            for i in 0..600 {
                let random = (i / 16) % 3 == 2;
                let hash = if random && i % 4 == 3 {
                    hashes[i / 2]
                } else {
                    loop {
                        let hash = Hash128 {
                            h1: next(),
                            h2: next(),
                        };
                        if random || bit(&words, indices(&hash).next().unwrap()) {
                            break hash;
                        }
                    }
                };
                if random && i % 4 == 1 {
                    for index in indices(&hash) {
                        words[(index / 64) as usize] |= 1 << (index % 64);
                    }
                }
                hashes.push(hash);
            }
            let make = || {
                RawFilter::from_parts(
                    BitArray::from_words(words.clone()).unwrap(),
                    k,
                    Strategy::default(),
                )
                .unwrap()
            };

            let filter = make();
            let expected: Vec<bool> = hashes
                .iter()
                .map(|h| indices(h).all(|i| bit(&words, i)))
                .collect();
            let first_clear = hashes
                .iter()
                .filter(|h| !bit(&words, indices(h).next().unwrap()))
                .count();
            let found = expected.iter().filter(|f| **f).count();
            // Items found, items stopped by the first probe, and (for k > 1) by a later one.
            assert!(first_clear > 0 && found > 0);
            assert!(k == 1 || first_clear + found < hashes.len());
            let single: Vec<bool> = hashes
                .iter()
                .map(|h| filter.might_contain_hash(*h))
                .collect();
            assert_eq!(single, expected, "might_contain_hash, k = {k}, {len} words");
            let mut found = vec![false; hashes.len()];
            filter.might_contain_hashes(&hashes, &mut found);
            assert_eq!(
                found, expected,
                "might_contain_hashes, k = {k}, {len} words"
            );
            // The random batches alone: no batch passes whole, so no plan for known keys.
            let (random, random_expected): (Vec<Hash128>, Vec<bool>) = hashes
                .chunks(16)
                .zip(expected.chunks(16))
                .skip(2)
                .step_by(3)
                .flat_map(|(h, e)| h.iter().copied().zip(e.iter().copied()))
                .unzip();
            let mut found = vec![false; random.len()];
            filter.might_contain_hashes(&random, &mut found);
            assert_eq!(
                found, random_expected,
                "random batches, k = {k}, {len} words"
            );

            let mut model = words.clone();
            let expected_new: Vec<bool> = hashes
                .iter()
                .map(|h| {
                    let mut changed = false;
                    for i in indices(h) {
                        changed |= !bit(&model, i);
                        model[(i / 64) as usize] |= 1 << (i % 64);
                    }
                    changed
                })
                .collect();
            assert!(expected_new.iter().any(|n| *n) && expected_new.iter().any(|n| !n));
            let single: Vec<bool> = hashes.iter().map(|h| filter.put_hash(*h)).collect();
            assert_eq!(single, expected_new, "put_hash, k = {k}, {len} words");
            assert_eq!(filter.bits().to_words(), model, "put_hash bits, k = {k}");
            let batched = make();
            let mut new = vec![false; hashes.len()];
            batched.put_hashes(&hashes, &mut new);
            assert_eq!(new, expected_new, "put_hashes, k = {k}, {len} words");
            assert_eq!(batched.bits().to_words(), model, "put_hashes bits, k = {k}");
            assert_eq!(batched.bits().bit_count(), batched.bits().popcount());
        }
    }
}
