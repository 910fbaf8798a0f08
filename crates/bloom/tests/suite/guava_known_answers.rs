//! Guava's own `BloomFilterTest` known-answer checks, reproduced: the same inserts must give
//! the same false positives, counts and sizes as in Guava's test suite.

use std::collections::BTreeSet;

use bloom::{
    optimal_num_of_bits, optimal_num_of_hash_functions, BitArray, BloomFilter, Error, Funnel,
    IntegerFunnel, Strategy, StringFunnel, UnencodedCharsFunnel,
};

/// Guava's `checkKnownFalsePositives`-style test: put `i.to_string()` for even `i` below
/// 2·10^6 into a filter for 10^6 items at 3%, then probe the odd numbers.
fn known_false_positives<F: Funnel<str> + Copy>(
    funnel: F,
    strategy: Strategy,
    expected_below_900: &[u32],
    expected_total: usize,
    expected_bit_count: u64,
) {
    let n = 1_000_000u32;
    let filter = BloomFilter::with_strategy(funnel, u64::from(n), 0.03, strategy).unwrap();
    assert_eq!(filter.bit_size(), 7_298_496);
    assert_eq!(filter.num_hash_functions(), 5);
    for i in (0..2 * n).step_by(2) {
        filter.put(&i.to_string());
    }
    for i in (0..2 * n).step_by(2) {
        assert!(filter.might_contain(&i.to_string()), "false negative {i}");
    }
    let below_900: BTreeSet<u32> = (1..900)
        .step_by(2)
        .filter(|i| filter.might_contain(&i.to_string()))
        .collect();
    assert_eq!(
        below_900,
        expected_below_900.iter().copied().collect::<BTreeSet<_>>()
    );
    let total = (1..2 * n)
        .step_by(2)
        .filter(|i| filter.might_contain(&i.to_string()))
        .count();
    assert_eq!(total, expected_total);
    assert_eq!(filter.bit_count(), expected_bit_count);
    let actual_fpp = expected_total as f64 / f64::from(n);
    assert!((filter.expected_fpp() - actual_fpp).abs() < 0.00033);
    let estimate = filter.approximate_element_count();
    assert!((990_000..=1_010_000).contains(&estimate), "{estimate}");
}

#[test]
fn known_false_positives_mitz32_unencoded_chars() {
    known_false_positives(
        UnencodedCharsFunnel,
        Strategy::Murmur128Mitz32,
        &[
            49, 51, 59, 163, 199, 321, 325, 363, 367, 469, 545, 561, 727, 769, 773, 781,
        ],
        29_824,
        3_618_540,
    );
}

#[test]
fn known_false_positives_mitz64_unencoded_chars() {
    known_false_positives(
        UnencodedCharsFunnel,
        Strategy::Murmur128Mitz64,
        &[15, 25, 287, 319, 381, 399, 421, 465, 529, 697, 767, 857],
        30_104,
        3_619_118,
    );
}

#[test]
fn known_false_positives_mitz64_utf8() {
    known_false_positives(
        StringFunnel,
        Strategy::Murmur128Mitz64,
        &[129, 471, 723, 89, 751, 835, 871],
        29_763,
        3_619_915,
    );
}

/// The articles' reference run: 10^7 integers at 1%, probing the next 10^7, gives exactly
/// 100,075 false positives in Guava.
#[test]
fn reference_run_ten_million_integers() {
    let filter = BloomFilter::new(IntegerFunnel, 10_000_000, 0.01).unwrap();
    for i in 0..10_000_000 {
        filter.put(&i);
    }
    let false_positives = (10_000_000..20_000_000)
        .filter(|i| filter.might_contain(i))
        .count();
    assert_eq!(false_positives, 100_075);
}

#[test]
fn optimal_size_matches_guava() {
    assert_eq!(
        optimal_num_of_bits(i32::MAX as u64, f64::from_bits(1)),
        3_327_428_144_502
    );
    // Guava: "Could not create BloomFilter of 3327428144502 bits".
    assert_eq!(
        BloomFilter::new(StringFunnel, i32::MAX as u64, f64::from_bits(1)).unwrap_err(),
        Error::TooLarge {
            bits: 3_327_428_144_502
        }
    );
    for n in 1..1000u64 {
        let mut p = f64::from_bits(1);
        while p < 1.0 {
            // Guava asserts >= 0; we also know it stays finite and monotone in n.
            assert!(optimal_num_of_bits(n, p) >= optimal_num_of_bits(n - 1, p));
            p += 0.001;
        }
    }
}

#[test]
fn optimal_hashes_match_guava() {
    assert_eq!(optimal_num_of_hash_functions(319, 3072), 7);
    for n in 1..1000 {
        for m in 0..1000 {
            assert!(optimal_num_of_hash_functions(n, m) > 0);
        }
    }
}

#[test]
fn bit_size_is_rounded_up_to_words() {
    for i in 1..10_000u64 {
        let filter = BloomFilter::new(StringFunnel, i, 0.03).unwrap();
        assert_eq!(
            filter.bit_size(),
            optimal_num_of_bits(i, 0.03).div_ceil(64) * 64
        );
    }
}

#[test]
fn more_than_255_hash_functions_is_an_error() {
    assert!(matches!(
        BloomFilter::new(StringFunnel, 1000, 1e-80),
        Err(Error::InvalidHashFunctionCount(266))
    ));
}

#[test]
fn large_bit_array_does_not_overflow() {
    let bits = BitArray::with_bits(i32::MAX as u64 + 1).unwrap();
    assert_eq!(bits.bit_size(), 1 << 31);
    assert!(bits.set((1 << 31) - 1));
    assert!(bits.get((1 << 31) - 1));
}

#[test]
fn expected_fpp_grows_exactly_when_put_changes_bits() {
    let filter = BloomFilter::new(IntegerFunnel, 10, 0.03).unwrap();
    assert_eq!(filter.expected_fpp(), 0.0);
    let mut i = 0;
    while filter.expected_fpp() != 1.0 {
        let before = filter.expected_fpp();
        if filter.put(&i) {
            assert!(filter.expected_fpp() > before);
        } else {
            assert_eq!(filter.expected_fpp(), before);
        }
        i += 1;
    }
}

#[test]
fn approximate_element_count_matches_guava() {
    let filter = BloomFilter::new(IntegerFunnel, 1000, 0.03).unwrap();
    filter.put(&-1);
    for i in 0..1000 {
        filter.put(&i);
    }
    assert_eq!(filter.bit_size(), 7360);
    assert_eq!(filter.bit_count(), 3618);
    assert_eq!(filter.approximate_element_count(), 996);
}
