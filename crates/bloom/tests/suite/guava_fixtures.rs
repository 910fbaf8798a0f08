//! Cross-checks against filters written by the real Guava 31.1.
//!
//! `crates/bloom/java/gen-fixtures.sh` runs Guava and writes, per case, the filter in Guava's
//! format (`.bin`), the keys it put (`.keys`), probe keys with Guava's `mightContain` answers
//! (`.probes`) and Guava's own statistics (`.meta`). The fixtures are committed, so this test
//! needs no Java. Each case asserts that our filter, given the same inserts, is byte-identical
//! to Guava's, that our statistics equal Guava's, and that reading Guava's bytes answers every
//! probe as Guava did.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::path::PathBuf;

use bloom::{
    optimal_num_of_bits, optimal_num_of_hash_functions, BloomFilter, ByteArrayFunnel, Funnel,
    IntegerFunnel, LongFunnel, Strategy, StringFunnel, UnencodedCharsFunnel,
};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/guava")
}

fn read(name: &str) -> String {
    std::fs::read_to_string(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn lines(name: &str) -> Vec<String> {
    read(name).lines().map(str::to_owned).collect()
}

struct Case {
    name: &'static str,
    meta: HashMap<String, String>,
}

impl Case {
    fn load(name: &'static str) -> Self {
        let meta = read(&format!("{name}.meta"))
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Self { name, meta }
    }

    fn get(&self, key: &str) -> &str {
        self.meta
            .get(key)
            .unwrap_or_else(|| panic!("{}.meta has no {key}", self.name))
    }

    fn num(&self, key: &str) -> u64 {
        self.get(key).parse().unwrap()
    }

    fn double(&self, key: &str) -> f64 {
        f64::from_bits(u64::from_str_radix(self.get(key), 16).unwrap())
    }

    fn strategy(&self) -> Strategy {
        match self.get("strategy") {
            "MURMUR128_MITZ_64" => Strategy::Murmur128Mitz64,
            "MURMUR128_MITZ_32" => Strategy::Murmur128Mitz32,
            other => panic!("unknown strategy {other}"),
        }
    }

    fn bin(&self) -> Vec<u8> {
        std::fs::read(dir().join(format!("{}.bin", self.name))).unwrap()
    }
}

/// Builds our filter from the case's keys and checks it against Guava's, then reads Guava's
/// bytes and checks every probe.
fn check<T, K, F>(case: &Case, funnel: F, parse: fn(&str) -> K)
where
    T: ?Sized,
    K: Borrow<T>,
    F: Funnel<T> + Copy,
{
    let ours = BloomFilter::with_strategy(
        funnel,
        case.num("expected_insertions"),
        case.double("fpp_bits"),
        case.strategy(),
    )
    .unwrap();
    assert_eq!(
        ours.bit_size(),
        case.num("bit_size"),
        "{}: bit size",
        case.name
    );
    assert_eq!(
        u64::from(ours.num_hash_functions()),
        case.num("hashes"),
        "{}: hash count",
        case.name
    );

    let keys: Vec<K> = lines(&format!("{}.keys", case.name))
        .iter()
        .map(|l| parse(l))
        .collect();
    assert_eq!(keys.len() as u64, case.num("inserted"), "{}", case.name);
    let put_true = keys.iter().filter(|k| ours.put((*k).borrow())).count() as u64;
    assert_eq!(
        put_true,
        case.num("put_true"),
        "{}: put() results",
        case.name
    );

    assert_stats_match(case, &ours);
    assert!(
        ours.to_bytes() == case.bin(),
        "{}: our bytes differ from Guava's",
        case.name
    );

    // The batch operation gives the same answers and the same bytes.
    let batched = BloomFilter::with_strategy(
        funnel,
        case.num("expected_insertions"),
        case.double("fpp_bits"),
        case.strategy(),
    )
    .unwrap();
    let mut new = Vec::new();
    batched.put_batch(keys.iter().map(|k| k.borrow()), &mut new);
    assert_eq!(
        new.iter().filter(|&&n| n).count() as u64,
        case.num("put_true"),
        "{}: put_batch() results",
        case.name
    );
    assert!(
        batched.to_bytes() == case.bin(),
        "{}: batch-built bytes differ from Guava's",
        case.name
    );

    let theirs = BloomFilter::from_slice(&case.bin(), funnel).unwrap();
    check_probes(case, &theirs, parse);
}

fn assert_stats_match<T: ?Sized, F>(case: &Case, filter: &BloomFilter<T, F>) {
    assert_eq!(filter.bit_count(), case.num("bit_count"), "{}", case.name);
    match case.get("approximate_element_count") {
        // Guava throws for a completely full filter; we saturate.
        "ERR" => assert_eq!(filter.approximate_element_count(), u64::MAX),
        n => assert_eq!(
            filter.approximate_element_count(),
            n.parse::<u64>().unwrap(),
            "{}",
            case.name
        ),
    }
    assert_eq!(
        filter.expected_fpp().to_bits(),
        case.double("expected_fpp_bits").to_bits(),
        "{}: expected_fpp {} vs Guava {}",
        case.name,
        filter.expected_fpp(),
        case.double("expected_fpp_bits")
    );
}

fn check_probes<T, K, F>(case: &Case, filter: &BloomFilter<T, F>, parse: fn(&str) -> K)
where
    T: ?Sized,
    K: Borrow<T>,
    F: Funnel<T>,
{
    let mut disagreements = Vec::new();
    let probes = lines(&format!("{}.probes", case.name));
    assert!(!probes.is_empty());
    let keys: Vec<K> = probes
        .iter()
        .map(|line| parse(line.rsplit_once('\t').unwrap().0))
        .collect();
    let mut batch_answers = Vec::new();
    filter.might_contain_batch(keys.iter().map(|k| k.borrow()), &mut batch_answers);
    for ((line, key), batch_answer) in probes.iter().zip(&keys).zip(batch_answers) {
        let (key_text, answer) = line.rsplit_once('\t').unwrap();
        let ours = filter.might_contain(key.borrow());
        if ours != (answer == "1") || batch_answer != ours {
            disagreements.push(key_text.to_owned());
        }
    }
    assert!(
        disagreements.is_empty(),
        "{}: {} of {} probes answered differently, e.g. {:?}",
        case.name,
        disagreements.len(),
        probes.len(),
        &disagreements[..disagreements.len().min(5)]
    );
}

fn string(s: &str) -> String {
    s.to_owned()
}

fn bytes(s: &str) -> Vec<u8> {
    if s == "-" {
        return Vec::new();
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn int(s: &str) -> i32 {
    s.parse().unwrap()
}

fn long(s: &str) -> i64 {
    s.parse().unwrap()
}

#[test]
fn sizing_equals_guava_for_every_row() {
    let table = read("sizing.tsv");
    let mut rows = 0;
    for line in table.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let n: u64 = cols[0].parse().unwrap();
        let p = f64::from_bits(u64::from_str_radix(cols[4], 16).unwrap());
        let bits: u64 = cols[2].parse().unwrap();
        let hashes: u32 = cols[3].parse().unwrap();
        assert_eq!(optimal_num_of_bits(n, p), bits, "bits for n={n} p={p}");
        assert_eq!(
            optimal_num_of_hash_functions(n, bits),
            hashes,
            "hashes for n={n} m={bits}"
        );
        rows += 1;
    }
    assert!(rows >= 100, "only {rows} rows");
}

#[test]
fn string_utf8() {
    check::<str, _, _>(&Case::load("string_utf8"), StringFunnel, string);
}

#[test]
fn string_utf8_overfull() {
    check::<str, _, _>(&Case::load("string_utf8_overfull"), StringFunnel, string);
    check::<str, _, _>(
        &Case::load("string_utf8_overfull_300"),
        StringFunnel,
        string,
    );
}

#[test]
fn unencoded_chars() {
    check::<str, _, _>(&Case::load("unencoded_chars"), UnencodedCharsFunnel, string);
}

#[test]
fn byte_arrays() {
    check::<[u8], _, _>(&Case::load("bytes"), ByteArrayFunnel, bytes);
}

#[test]
fn integers() {
    check(&Case::load("integer"), IntegerFunnel, int);
}

#[test]
fn longs() {
    check(&Case::load("long"), LongFunnel, long);
}

#[test]
fn mitz32_strategy() {
    check::<str, _, _>(&Case::load("mitz32_string"), StringFunnel, string);
    check(&Case::load("mitz32_long"), LongFunnel, long);
}

#[test]
fn empty_filter() {
    check::<str, _, _>(&Case::load("empty"), StringFunnel, string);
}

#[test]
fn tiny_fpp_many_hashes() {
    let case = Case::load("fpp_tiny");
    assert_eq!(case.num("hashes"), 40);
    check::<str, _, _>(&case, StringFunnel, string);
}

#[test]
fn put_all_equals_guava_put_all() {
    let a_case = Case::load("putall_a");
    let b_case = Case::load("putall_b");
    check::<str, _, _>(&a_case, StringFunnel, string);
    check::<str, _, _>(&b_case, StringFunnel, string);
    let a = BloomFilter::from_slice(&a_case.bin(), StringFunnel).unwrap();
    let b = BloomFilter::from_slice(&b_case.bin(), StringFunnel).unwrap();
    a.put_all(&b).unwrap();
    let merged = Case::load("putall_merged");
    assert!(a.to_bytes() == merged.bin(), "merged bytes differ");
    assert_stats_match(&merged, &a);
    check_probes::<str, _, _>(&merged, &a, string);
}

#[test]
fn integer_100k_false_positives_equal_guava() {
    let case = Case::load("integer_100k");
    let ours = BloomFilter::new(IntegerFunnel, 100_000, case.double("fpp_bits")).unwrap();
    for i in 0..100_000 {
        ours.put(&i);
    }
    assert!(ours.to_bytes() == case.bin(), "bytes differ");
    assert_stats_match(&case, &ours);
    let expected: Vec<i32> = lines("integer_100k.fp").iter().map(|l| int(l)).collect();
    let found: Vec<i32> = (100_000..200_000)
        .filter(|i| ours.might_contain(i))
        .collect();
    assert_eq!(found.len() as u64, case.num("false_positives"));
    assert_eq!(found, expected);
}
