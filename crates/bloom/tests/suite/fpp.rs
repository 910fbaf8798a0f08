//! Measured false-positive rates against the formula `(1 - e^(-kn/m))^k`.

use bloom::{BloomFilter, CountingBloomFilter, IntegerFunnel, ScalableBloomFilter};

fn formula(n: u64, m: u64, k: u32) -> f64 {
    (1.0 - (-(f64::from(k)) * n as f64 / m as f64).exp()).powi(k as i32)
}

fn assert_within_3_percent(measured: f64, expected: f64, what: &str) {
    let relative = (measured - expected).abs() / expected;
    assert!(
        relative <= 0.03,
        "{what}: measured FPP {measured:.6} vs formula {expected:.6} ({:.2}% off)",
        relative * 100.0
    );
}

/// Puts `0..n`, probes `n..n + probes`; returns the measured FPP.
fn measure(filter: &BloomFilter<i32, IntegerFunnel>, n: i32, probes: i32) -> f64 {
    for i in 0..n {
        filter.put(&i);
    }
    let fp = (n..n + probes).filter(|i| filter.might_contain(i)).count();
    fp as f64 / f64::from(probes)
}

#[test]
fn one_million_at_one_percent() {
    let filter = BloomFilter::new(IntegerFunnel, 1_000_000, 0.01).unwrap();
    let measured = measure(&filter, 1_000_000, 10_000_000);
    let expected = formula(1_000_000, filter.bit_size(), filter.num_hash_functions());
    assert_within_3_percent(measured, expected, "n = 10^6");
}

#[test]
fn ten_million_at_one_percent() {
    let filter = BloomFilter::new(IntegerFunnel, 10_000_000, 0.01).unwrap();
    let measured = measure(&filter, 10_000_000, 10_000_000);
    let expected = formula(10_000_000, filter.bit_size(), filter.num_hash_functions());
    assert_within_3_percent(measured, expected, "n = 10^7");
}

#[test]
fn counting_filter_keeps_its_fpp() {
    let n = 1_000_000;
    let filter = CountingBloomFilter::new(IntegerFunnel, n as u64, 0.01).unwrap();
    for i in 0..n {
        filter.put(&i);
    }
    let fp = (n..n + 5_000_000)
        .filter(|i| filter.might_contain(i))
        .count();
    let measured = fp as f64 / 5_000_000.0;
    let expected = formula(n as u64, filter.num_counters(), filter.num_hash_functions());
    assert_within_3_percent(measured, expected, "counting, n = 10^6");
}

#[test]
fn scalable_filter_stays_below_target_after_ten_fold_growth() {
    let filter = ScalableBloomFilter::new(IntegerFunnel, 100_000, 0.01).unwrap();
    for i in 0..1_000_000 {
        filter.put(&i);
    }
    assert!(filter.slice_count() >= 4);
    let fp = (1_000_000..6_000_000)
        .filter(|i| filter.might_contain(i))
        .count();
    let measured = fp as f64 / 5_000_000.0;
    assert!(
        measured <= 0.01,
        "measured FPP {measured} above the 1% target"
    );
    assert!(filter.expected_fpp() <= 0.01, "{}", filter.expected_fpp());
    // A plain filter sized for the same 10^5 would be useless at 10^6.
    let plain = BloomFilter::new(IntegerFunnel, 100_000, 0.01).unwrap();
    let plain_fpp = measure(&plain, 1_000_000, 1_000_000);
    assert!(plain_fpp > 0.5, "{plain_fpp}");
}
