//! The machine's ceiling for a Bloom filter that has outgrown the caches: how many random
//! 64-byte lines per second one and two threads can read from a [`BitArray`] the size of the
//! filter for N keys at p = 1% (the same allocation, huge pages included), with the loads
//! prefetched `--ahead` positions in advance so that as many are in flight as the memory
//! system takes. No hashing, no index arithmetic in the loop (the indices are drawn before
//! the clock starts), no writes: a filter whose every key costs `k` such reads cannot go
//! faster than this many lines per second divided by `k`. BENCHMARKS.md §1 sets it next to
//! the filters' figures.
//!
//! ```sh
//! cargo bench -p bloom --bench memory -- --n "1000000 10000000 100000000" --threads "1 2"
//! ```
//!
//! Prints TSV: `n  bytes  threads  ahead  reads  seconds  Mlines_per_s  Mkeys_per_s_at_k`.

use std::hint::black_box;
use std::time::Instant;

use bloom::{shape_for, BitArray};

/// Random bit indices below `bits` (xorshift64*, fixed seed: the same draw every run).
fn random_indices(count: usize, bits: u64, seed: u64) -> Vec<u64> {
    let mut x = seed | 1;
    (0..count)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x2545_F491_4F6C_DD1D) % bits
        })
        .collect()
}

/// Reads the bit at every index, prefetching `ahead` indices in advance; returns the number
/// of set bits seen (so the loads cannot be optimised away).
fn read_all(bits: &BitArray, indices: &[u64], ahead: usize) -> u64 {
    let mut ones = 0;
    for (i, &index) in indices.iter().enumerate() {
        if ahead > 0 {
            if let Some(&later) = indices.get(i + ahead) {
                bits.prefetch(later);
            }
        }
        ones += u64::from(bits.get(index));
    }
    ones
}

fn main() {
    let mut ns = vec![1_000_000u64, 10_000_000, 100_000_000];
    let mut threads = vec![1usize, 2];
    let mut aheads = vec![0usize, 32];
    let mut reads = 20_000_000usize;
    let mut args = std::env::args().skip(1);
    let list = |s: String| -> Vec<String> { s.split_whitespace().map(str::to_owned).collect() };
    while let Some(arg) = args.next() {
        let mut value = || args.next().expect("flag needs a value");
        match arg.as_str() {
            "--n" => ns = list(value()).iter().map(|s| s.parse().unwrap()).collect(),
            "--threads" => threads = list(value()).iter().map(|s| s.parse().unwrap()).collect(),
            "--ahead" => aheads = list(value()).iter().map(|s| s.parse().unwrap()).collect(),
            "--reads" => reads = value().parse().unwrap(),
            _ => {} // `cargo bench` passes `--bench`
        }
    }
    println!("n\tbytes\tthreads\tahead\treads\tseconds\tMlines_per_s\tMkeys_per_s_at_k");
    for &n in &ns {
        let (bit_count, k) = shape_for(n, 0.01).unwrap();
        let bits = BitArray::with_bits(bit_count).unwrap();
        // Every eighth word non-zero, so the loads read real pages with mixed answers.
        for i in (0..bits.bit_size()).step_by(512) {
            bits.set(i);
        }
        let indices = random_indices(reads, bits.bit_size(), n);
        for &t in &threads {
            for &ahead in &aheads {
                let per = reads / t;
                let start = Instant::now();
                std::thread::scope(|s| {
                    for part in indices.chunks(per).take(t) {
                        let bits = &bits;
                        s.spawn(move || black_box(read_all(bits, part, ahead)));
                    }
                });
                let secs = start.elapsed().as_secs_f64();
                let lines = (per * t) as f64 / secs / 1e6;
                println!(
                    "{n}\t{}\t{t}\t{ahead}\t{}\t{secs:.3}\t{lines:.1}\t{:.2}",
                    bits.word_count() * 8,
                    per * t,
                    lines / f64::from(k),
                );
            }
        }
    }
}
