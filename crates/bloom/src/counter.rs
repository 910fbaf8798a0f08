//! A striped counter: many cache-padded cells, one picked per thread, summed on read.
//!
//! Guava keeps `LockFreeBitArray.bitCount` in a `LongAddable` (a striped `LongAdder`) for the
//! same reason: every successful bit flip bumps the count, and a single shared `AtomicU64`
//! would make all writer cores fight over one cache line. Reads sum the stripes; once the
//! writers have finished the sum is exact, while they run it is a close lower bound.

#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

/// Number of cells. A power of two comfortably above the core counts we run on; 16 cells of
/// 128 bytes cost 2 KiB per filter.
const STRIPES: usize = 16;

/// One cell on its own pair of cache lines (adjacent-line prefetchers pull lines in pairs).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Cell(AtomicI64);

/// A counter that many threads may add to without contending on one cache line.
#[derive(Debug)]
pub struct StripedCounter {
    cells: [Cell; STRIPES],
}

impl Default for StripedCounter {
    fn default() -> Self {
        Self {
            cells: std::array::from_fn(|_| Cell::default()),
        }
    }
}

/// Hands each thread its own stripe index, round-robin, on first use.
fn stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
    }
    STRIPE.with(|s| *s)
}

impl StripedCounter {
    /// Creates a counter holding `value`.
    pub fn new(value: u64) -> Self {
        let counter = Self::default();
        counter.cells[0].0.store(value as i64, Ordering::Relaxed);
        counter
    }

    /// Adds `delta` (may be negative) to this thread's cell.
    #[inline]
    pub fn add(&self, delta: i64) {
        self.cells[stripe()].0.fetch_add(delta, Ordering::Relaxed);
    }

    /// The sum of all cells; exact once concurrent writers have finished.
    pub fn sum(&self) -> u64 {
        let total: i64 = self.cells.iter().map(|c| c.0.load(Ordering::Relaxed)).sum();
        // Cells may be negative individually (a decrement on another stripe), never in sum
        // once writers are done; clamp the transient case instead of wrapping.
        total.max(0) as u64
    }

    /// Sets the counter to `value`. Only meaningful when no writer is active.
    pub fn reset(&self, value: u64) {
        for cell in &self.cells[1..] {
            cell.0.store(0, Ordering::Relaxed);
        }
        self.cells[0].0.store(value as i64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn sums_across_threads_exactly() {
        let counter = Arc::new(StripedCounter::new(5));
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let c = Arc::clone(&counter);
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        c.add(if t % 4 == 3 { -1 } else { 2 });
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        // 6 threads add 2, 2 threads subtract 1.
        assert_eq!(counter.sum(), 5 + 6 * 20_000 - 2 * 10_000);
        counter.reset(3);
        assert_eq!(counter.sum(), 3);
    }
}
