//! Hardware transactions (Intel's RTM), for grouping many bit writes into one atomic step.
//!
//! A batch `put` spends most of its time on locked writes once its lines are cached: each
//! `lock bts` / `lock cmpxchg` costs about 15 cycles, and a new item flips about five bits.
//! Inside an RTM transaction the same writes are plain loads and stores, and the whole group
//! becomes visible to other cores at once when the transaction commits — or not at all, when
//! it aborts (another core touched one of its lines, an interrupt, a capacity limit). So a
//! group of writes costs one commit instead of one locked write each, and stays exactly as
//! atomic as far as any other thread can tell.
//!
//! [`atomically`] is the whole interface: it runs a closure as one transaction and returns
//! `None` if the processor has no RTM or the transaction aborted, in which case none of the
//! closure's writes happened and the caller takes its lock-free path instead. Aborts never
//! retry here, so the lock-free path bounds every call: the filter stays lock-free.

/// Runs `body` as one hardware transaction: `Some` of its result if the transaction
/// committed (all of `body`'s memory writes became visible to other cores at once), `None` if
/// the processor has no RTM or the transaction aborted (*none* of them happened: memory and
/// registers are as they were before the call).
///
/// `body` must be short and touch few cache lines (a few dozen), and must not make system
/// calls (those abort); if it panics, the transaction aborts before anything is printed, and
/// the caller's fallback meets the panic again outside.
#[inline(always)]
pub(crate) fn atomically<R>(body: impl FnOnce() -> R) -> Option<R> {
    imp::atomically(body)
}

/// Whether [`atomically`] can ever commit on this processor.
pub(crate) fn available() -> bool {
    imp::available()
}

/// Whether a loop that tries one transaction per step should go on trying: it stops once
/// aborts reach 8 and outnumber commits 3 to 1 — a processor that lists RTM but aborts every
/// transaction (some disable it that way), or contention heavy enough that the locked path
/// alone is cheaper — so such a loop wastes a few transactions, not one per step.
#[derive(Debug)]
pub(crate) struct Tries {
    on: bool,
    committed: u32,
    aborted: u32,
}

impl Tries {
    /// A loop that tries transactions if `on` (the caller's choice, e.g. [`available`]).
    pub(crate) fn new(on: bool) -> Self {
        Self {
            on,
            committed: 0,
            aborted: 0,
        }
    }

    /// Whether no step's transaction has aborted so far.
    #[inline]
    pub(crate) fn none_aborted(&self) -> bool {
        self.aborted == 0
    }

    /// Whether the next step should try a transaction.
    #[inline]
    pub(crate) fn worth_it(&self) -> bool {
        self.on
    }

    /// A step's transaction committed.
    #[inline]
    pub(crate) fn committed(&mut self) {
        self.committed = self.committed.saturating_add(1);
    }

    /// A step's transaction aborted.
    #[inline]
    pub(crate) fn aborted(&mut self) {
        self.aborted += 1;
        if self.aborted >= 8 && self.aborted / 3 > self.committed {
            self.on = false;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::arch::asm;
    use std::sync::OnceLock;

    /// What `xbegin` leaves in `eax` when the transaction has started (`_XBEGIN_STARTED`).
    const STARTED: u32 = !0;

    pub(super) fn available() -> bool {
        static RTM: OnceLock<bool> = OnceLock::new();
        *RTM.get_or_init(|| std::arch::is_x86_feature_detected!("rtm"))
    }

    #[inline(always)]
    #[allow(unsafe_code)]
    pub(super) fn atomically<R>(body: impl FnOnce() -> R) -> Option<R> {
        if !available() {
            return None;
        }
        let mut status = STARTED;
        // SAFETY: the processor has RTM (checked above), so `xbegin` is defined. It starts a
        // transaction and falls through with `eax` untouched; if the transaction later aborts,
        // the processor discards every memory write made since, restores every register to
        // its value at the `xbegin`, and resumes at the label with the abort status in `eax`.
        // To the compiler both are this block completing once, with `status` as its output:
        // the abort path is a path on which `body` never ran, and the memory it sees is the
        // memory as it was here. The block may read and write memory (no `nomem`), so the
        // compiler moves no memory access across it. It touches no stack.
        unsafe {
            asm!("xbegin 2f", "2:", inout("eax") status, options(nostack));
        }
        if status != STARTED {
            return None;
        }
        let result = body();
        // SAFETY: a transaction is active: this code runs only on the path on which `xbegin`
        // started one, and `body` cannot have ended it (nothing in this crate issues `xend`
        // or `xabort` elsewhere; an abort inside `body` never returns here). `xend` commits
        // it. Like `xbegin`, the block orders memory accesses for the compiler.
        unsafe {
            asm!("xend", options(nostack));
        }
        Some(result)
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    pub(super) fn available() -> bool {
        false
    }

    #[inline(always)]
    pub(super) fn atomically<R>(_body: impl FnOnce() -> R) -> Option<R> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    #[test]
    fn committed_transactions_write_everything_and_aborted_ones_nothing() {
        let words: Vec<AtomicU64> = (0..64).map(|_| AtomicU64::new(0)).collect();
        let mut committed = 0;
        for round in 1..=1000u64 {
            let done = atomically(|| {
                for w in &words {
                    w.store(round, Ordering::Relaxed);
                }
                round
            });
            // Either all 64 words hold this round or none does.
            let now: Vec<u64> = words.iter().map(|w| w.load(Ordering::Relaxed)).collect();
            match done {
                Some(r) => {
                    assert_eq!(r, round);
                    assert!(now.iter().all(|&v| v == round), "{now:?}");
                    committed += 1;
                }
                None => assert!(now.iter().all(|&v| v != round), "{now:?}"),
            }
        }
        if available() {
            // Aborts happen (interrupts), but not to most of a thousand tiny transactions.
            assert!(committed > 500, "{committed} of 1000 committed");
        } else {
            assert_eq!(committed, 0);
        }
    }

    #[test]
    fn tries_stop_only_when_aborts_dominate() {
        let mut always_aborts = Tries::new(true);
        let mut steps = 0;
        while always_aborts.worth_it() {
            always_aborts.aborted();
            steps += 1;
        }
        assert_eq!(steps, 8);

        // A third of transactions aborting (two threads on a small filter) keeps trying.
        let mut contended = Tries::new(true);
        for step in 0..10_000 {
            if step % 3 == 0 {
                contended.aborted();
            } else {
                contended.committed();
            }
        }
        assert!(contended.worth_it());

        assert!(!Tries::new(false).worth_it());
    }

    #[test]
    fn transactions_are_atomic_against_other_threads() {
        // Two threads move units between two words, each move one transaction (or, when it
        // aborts, one locked step per word); a third reads both words in transactions. No
        // move is lost (exact totals at the end), and no committed read sees a transaction
        // half done.
        const MOVES: u64 = 200_000;
        let pair = Arc::new([AtomicU64::new(MOVES * 2), AtomicU64::new(0)]);
        let start = Arc::new(std::sync::Barrier::new(3));
        let movers: Vec<_> = (0..2)
            .map(|_| {
                let (pair, start) = (Arc::clone(&pair), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    for _ in 0..MOVES {
                        let moved = atomically(|| {
                            let a = pair[0].load(Ordering::Relaxed);
                            pair[0].store(a - 1, Ordering::Relaxed);
                            let b = pair[1].load(Ordering::Relaxed);
                            pair[1].store(b + 1, Ordering::Relaxed);
                        });
                        if moved.is_none() {
                            pair[0].fetch_sub(1, Ordering::Relaxed);
                            pair[1].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        start.wait();
        while movers.iter().any(|m| !m.is_finished()) {
            if let Some(sum) =
                atomically(|| pair[0].load(Ordering::Relaxed) + pair[1].load(Ordering::Relaxed))
            {
                // A committed read may see a locked step half done (between the two
                // fallback operations), never a transaction half done: the sum is off by
                // at most one per mover in its fallback.
                assert!(sum.abs_diff(MOVES * 2) <= 2, "{sum}");
            }
        }
        for m in movers {
            m.join().unwrap();
        }
        assert_eq!(pair[0].load(Ordering::Relaxed), 0);
        assert_eq!(pair[1].load(Ordering::Relaxed), MOVES * 2);
    }
}
