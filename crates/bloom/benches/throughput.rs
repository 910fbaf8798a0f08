//! Throughput of `put` and `might_contain` at crawl sizes, against `fastbloom` and `bloomfilter`,
//! printed as the same TSV as the Guava harness (`crates/bloom/java/bench-guava.sh`) so the
//! rows line up for ratios. Keys and phases are the same as Guava's harness:
//! - int keys `0..N` (present) and `N..2N` (absent); url keys
//!   `https://host{i%1024}.example.com/section/{i%97}/page-{i}.html`;
//! - phases `put` (N keys), `contains_present` (N keys), `contains_absent` (N keys, counting
//!   false positives), each split over T threads in contiguous slices;
//! - url keys are generated before timing when they fit (N ≤ 10^7), inside the timed loop
//!   otherwise — as the Guava harness does.
//!
//! ```sh
//! cargo bench -p bloom --bench throughput -- --n "1000000 10000000" --keys "int url" --threads "1 2"
//! ```
//! Each configuration runs `--repeat` times (default 3) on a fresh filter; the median of each
//! phase is printed. `bloomfilter::Bloom` needs `&mut self` to insert, so it runs with one
//! thread only.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Instant;

use bloom::{BloomFilter, IntegerFunnel, StringFunnel};

fn url_key(i: u64, buf: &mut String) {
    buf.clear();
    let _ = write!(
        buf,
        "https://host{}.example.com/section/{}/page-{}.html",
        i % 1024,
        i % 97,
        i
    );
}

/// Keys `base..base+count`, generated up front or on the fly.
enum Keys {
    Int { base: u64 },
    Url { base: u64, pre: Option<Vec<String>> },
}

impl Keys {
    fn new(kind: &str, base: u64, count: u64, pregenerate: bool) -> Self {
        match kind {
            "int" => Keys::Int { base },
            _ => Keys::Url {
                base,
                pre: pregenerate.then(|| {
                    let mut buf = String::new();
                    (base..base + count)
                        .map(|i| {
                            url_key(i, &mut buf);
                            buf.clone()
                        })
                        .collect()
                }),
            },
        }
    }

    /// Calls `f` with key `i` (0-based within this key set), as an int or a string.
    #[inline]
    fn with<R>(&self, i: u64, buf: &mut String, f: impl FnOnce(Key<'_>) -> R) -> R {
        match self {
            Keys::Int { base } => f(Key::Int((base + i) as i32)),
            Keys::Url { pre: Some(v), .. } => f(Key::Str(&v[i as usize])),
            Keys::Url { base, pre: None } => {
                url_key(base + i, buf);
                f(Key::Str(buf))
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Key<'a> {
    Int(i32),
    Str(&'a str),
}

enum Filter {
    OursInt(BloomFilter<i32, IntegerFunnel>),
    OursStr(BloomFilter<str, StringFunnel>),
    /// This crate through `put_batch` / `might_contain_batch` (implementation `ours-batch`).
    BatchInt(BloomFilter<i32, IntegerFunnel>),
    BatchStr(BloomFilter<str, StringFunnel>),
    Fast(fastbloom::AtomicBloomFilter),
    Plain(bloomfilter::Bloom<[u8]>),
}

impl Filter {
    fn new(name: &str, kind: &str, n: u64, fpp: f64) -> Self {
        match (name, kind) {
            ("ours", "int") => Filter::OursInt(BloomFilter::new(IntegerFunnel, n, fpp).unwrap()),
            ("ours", _) => Filter::OursStr(BloomFilter::new(StringFunnel, n, fpp).unwrap()),
            ("ours-batch", "int") => {
                Filter::BatchInt(BloomFilter::new(IntegerFunnel, n, fpp).unwrap())
            }
            ("ours-batch", _) => Filter::BatchStr(BloomFilter::new(StringFunnel, n, fpp).unwrap()),
            ("fastbloom", _) => Filter::Fast(
                fastbloom::AtomicBloomFilter::with_false_pos(fpp).expected_items(n as usize),
            ),
            ("bloomfilter", _) => {
                Filter::Plain(bloomfilter::Bloom::new_for_fp_rate(n as usize, fpp).unwrap())
            }
            _ => panic!("unknown implementation {name}"),
        }
    }

    #[inline]
    fn put(&self, key: Key<'_>) -> bool {
        match (self, key) {
            (Filter::OursInt(f), Key::Int(i)) => f.put(&i),
            (Filter::OursStr(f), Key::Str(s)) => f.put(s),
            (Filter::Fast(f), Key::Int(i)) => f.insert(&i),
            (Filter::Fast(f), Key::Str(s)) => f.insert(s),
            _ => unreachable!("shared put on a filter that needs &mut"),
        }
    }

    #[inline]
    fn put_mut(&mut self, key: Key<'_>) -> bool {
        match (self, key) {
            (Filter::Plain(f), Key::Int(i)) => !f.check_and_set(&i.to_le_bytes()[..]),
            (Filter::Plain(f), Key::Str(s)) => !f.check_and_set(s.as_bytes()),
            (this, key) => this.put(key),
        }
    }

    #[inline]
    fn contains(&self, key: Key<'_>) -> bool {
        match (self, key) {
            (Filter::OursInt(f), Key::Int(i)) => f.might_contain(&i),
            (Filter::OursStr(f), Key::Str(s)) => f.might_contain(s),
            (Filter::Fast(f), Key::Int(i)) => f.contains(&i),
            (Filter::Fast(f), Key::Str(s)) => f.contains(s),
            (Filter::Plain(f), Key::Int(i)) => f.check(&i.to_le_bytes()[..]),
            (Filter::Plain(f), Key::Str(s)) => f.check(s.as_bytes()),
            _ => unreachable!(),
        }
    }

    fn needs_mut(&self) -> bool {
        matches!(self, Filter::Plain(_))
    }

    /// Puts (`put`) or queries keys `from..to` through the batch API, `CALL` keys per call;
    /// `None` for implementations without one. Returns how many answers were `true`.
    fn batch(&self, keys: &Keys, from: u64, to: u64, put: bool) -> Option<u64> {
        const CALL: u64 = 1024;
        let mut out = Vec::with_capacity(CALL as usize);
        let mut ints: Vec<i32> = Vec::with_capacity(CALL as usize);
        let mut strings: Vec<String> = Vec::new();
        let mut trues = 0;
        for start in (from..to).step_by(CALL as usize) {
            let end = to.min(start + CALL);
            out.clear();
            match (self, keys) {
                (Filter::BatchInt(f), Keys::Int { base }) => {
                    ints.clear();
                    ints.extend((base + start..base + end).map(|i| i as i32));
                    if put {
                        f.put_batch(&ints, &mut out)
                    } else {
                        f.might_contain_batch(&ints, &mut out)
                    }
                }
                (Filter::BatchStr(f), Keys::Url { pre: Some(v), .. }) => {
                    let slice = v[start as usize..end as usize].iter().map(String::as_str);
                    if put {
                        f.put_batch(slice, &mut out)
                    } else {
                        f.might_contain_batch(slice, &mut out)
                    }
                }
                (Filter::BatchStr(f), Keys::Url { base, pre: None }) => {
                    strings.resize(CALL as usize, String::new());
                    for (s, i) in strings.iter_mut().zip(start..end) {
                        url_key(base + i, s);
                    }
                    let slice = strings[..(end - start) as usize].iter().map(String::as_str);
                    if put {
                        f.put_batch(slice, &mut out)
                    } else {
                        f.might_contain_batch(slice, &mut out)
                    }
                }
                _ => return None,
            }
            trues += out.iter().filter(|&&b| b).count() as u64;
        }
        Some(trues)
    }
}

/// Runs `task(from, to)` over `threads` contiguous slices of `0..count`; sums the results.
fn parallel(threads: u64, count: u64, task: impl Fn(u64, u64) -> u64 + Sync) -> u64 {
    if threads == 1 {
        return task(0, count);
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let task = &task;
                s.spawn(move || task(count * t / threads, count * (t + 1) / threads))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

fn report(name: &str, kind: &str, n: u64, threads: u64, phase: &str, secs: f64, fp: &str) {
    println!(
        "{name}\t{kind}\t{n}\t{threads}\t{phase}\t{n}\t{secs:.3}\t{:.3}\t{fp}",
        n as f64 / secs / 1e6
    );
}

/// One measurement of the three phases: seconds for each, and the false positives.
fn run_once(
    name: &str,
    kind: &str,
    n: u64,
    threads: u64,
    fpp: f64,
    present: &Keys,
    absent: &Keys,
) -> ([f64; 3], u64) {
    let mut filter = Filter::new(name, kind, n, fpp);
    let t0 = Instant::now();
    if filter.needs_mut() {
        let mut buf = String::new();
        for i in 0..n {
            present.with(i, &mut buf, |k| black_box(filter.put_mut(k)));
        }
    } else {
        parallel(threads, n, |from, to| {
            if let Some(new) = filter.batch(present, from, to, true) {
                return new;
            }
            let mut buf = String::new();
            let mut new = 0;
            for i in from..to {
                new += u64::from(present.with(i, &mut buf, |k| filter.put(k)));
            }
            new
        });
    }
    let put = t0.elapsed().as_secs_f64();

    let filter = &filter;
    let count = |keys: &Keys| {
        parallel(threads, n, |from, to| {
            if let Some(hits) = filter.batch(keys, from, to, false) {
                return hits;
            }
            let mut buf = String::new();
            let mut hits = 0;
            for i in from..to {
                hits += u64::from(keys.with(i, &mut buf, |k| filter.contains(k)));
            }
            hits
        })
    };
    let t0 = Instant::now();
    let found = count(present);
    let present_secs = t0.elapsed().as_secs_f64();
    assert_eq!(found, n, "{name}: false negatives");
    let t0 = Instant::now();
    let fp = count(absent);
    ([put, present_secs, t0.elapsed().as_secs_f64()], fp)
}

/// Runs `repeat` measurements and reports the median of each phase.
#[allow(clippy::too_many_arguments)]
fn run(
    name: &str,
    kind: &str,
    n: u64,
    threads: u64,
    fpp: f64,
    repeat: usize,
    present: &Keys,
    absent: &Keys,
) {
    if name == "bloomfilter" && threads > 1 {
        eprintln!("# {name}: put needs &mut, skipped with {threads} threads");
        return;
    }
    let mut runs: Vec<([f64; 3], u64)> = (0..repeat)
        .map(|_| run_once(name, kind, n, threads, fpp, present, absent))
        .collect();
    let fp = runs[0].1;
    for (phase, label) in ["put", "contains_present", "contains_absent"]
        .iter()
        .enumerate()
    {
        runs.sort_by(|a, b| a.0[phase].total_cmp(&b.0[phase]));
        let median = runs[runs.len() / 2].0[phase];
        let fp = if phase == 2 {
            fp.to_string()
        } else {
            "-".into()
        };
        report(name, kind, n, threads, label, median, &fp);
    }
}

fn main() {
    let mut ns = vec![1_000_000u64, 10_000_000];
    let mut kinds = vec!["int".to_owned(), "url".to_owned()];
    let mut threads = vec![1u64, 2];
    let mut impls = vec![
        "ours".to_owned(),
        "fastbloom".to_owned(),
        "bloomfilter".to_owned(),
    ];
    let mut fpp = 0.01;
    let mut repeat = 3;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().expect("flag needs a value");
        let list = |s: String| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        match arg.as_str() {
            "--n" => ns = list(value()).iter().map(|s| s.parse().unwrap()).collect(),
            "--keys" => kinds = list(value()),
            "--threads" => threads = list(value()).iter().map(|s| s.parse().unwrap()).collect(),
            "--impls" => impls = list(value()),
            "--fpp" => fpp = value().parse().unwrap(),
            "--repeat" => repeat = value().parse().unwrap(),
            _ => {} // `cargo bench` passes `--bench`
        }
    }
    println!("impl\tkeys\tn\tthreads\tphase\tops\tseconds\tMops_per_s\tfalse_positives");
    for &n in &ns {
        for kind in &kinds {
            let pregenerate = n <= 10_000_000;
            let present = Keys::new(kind, 0, n, pregenerate);
            let absent = Keys::new(kind, n, n, pregenerate);
            for &t in &threads {
                for name in &impls {
                    run(name, kind, n, t, fpp, repeat, &present, &absent);
                }
            }
        }
    }
}
