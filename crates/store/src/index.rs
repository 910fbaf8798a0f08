//! The exact set's in-memory index: the fingerprints of the `seen` table in a compact hash
//! set, so that confirming a filter's "maybe seen" costs one probe in memory instead of a
//! B-tree lookup in the database.
//!
//! The database stays the authority (it is what survives a crash); the index is rebuilt from
//! it when the state is opened and grows as URLs are admitted, up to a memory budget. While
//! every fingerprint of the set fits, the index is *complete* and answers both ways: found
//! means seen, not found means new. Once a fingerprint is refused for lack of room the index
//! is incomplete for the rest of the run: a fingerprint found is still seen, but one not found
//! must be looked up in the database.
//!
//! Layout: 256 shards chosen by the fingerprint's top byte, each an open-addressing table of
//! whole 128-bit fingerprints (never a partial tag, so a hit is exact) with linear probing,
//! behind its own lock. A table starts small, doubles up to its share of the budget and is
//! never more than 7/8 full: 16 bytes per slot, 18.3–36.6 bytes per fingerprint.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::sync::lock;

const SHARDS: usize = 256;
/// Slots of a shard's first table.
const FIRST_SLOTS: usize = 64;
/// Bytes of one slot.
pub(crate) const SLOT_BYTES: usize = 16;

/// What the index knows about a fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// In the set.
    Seen,
    /// Not in the set (the index is complete).
    New,
    /// Not in the index, which is incomplete: ask the database.
    Unknown,
}

pub(crate) struct ExactIndex {
    shards: Box<[Mutex<Shard>]>,
    /// Slots one shard may grow to (0: no index at all).
    max_slots: usize,
    /// No fingerprint has been refused for lack of room.
    complete: AtomicBool,
    /// Fingerprint 0 marks an empty slot, so it is kept apart.
    zero: AtomicBool,
    len: AtomicU64,
}

struct Shard {
    slots: Box<[u128]>,
    len: usize,
}

impl ExactIndex {
    /// An empty index that may use up to `budget` bytes (less than one small table per
    /// shard: no index, every lookup is [`Lookup::Unknown`]).
    pub(crate) fn new(budget: usize) -> Self {
        let max_slots = budget / SHARDS / SLOT_BYTES;
        let max_slots = if max_slots < FIRST_SLOTS {
            0
        } else {
            max_slots
        };
        let first = FIRST_SLOTS.min(max_slots);
        Self {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        slots: vec![0; first].into_boxed_slice(),
                        len: 0,
                    })
                })
                .collect(),
            max_slots,
            complete: AtomicBool::new(max_slots > 0),
            zero: AtomicBool::new(false),
            len: AtomicU64::new(0),
        }
    }

    fn shard(&self, fp: u128) -> &Mutex<Shard> {
        &self.shards[(fp >> 120) as usize]
    }

    pub(crate) fn lookup(&self, fp: u128) -> Lookup {
        let found = if fp == 0 {
            self.zero.load(Ordering::Acquire)
        } else {
            self.max_slots > 0 && lock(self.shard(fp)).contains(fp)
        };
        if found {
            Lookup::Seen
        } else if self.complete.load(Ordering::Acquire) {
            Lookup::New
        } else {
            Lookup::Unknown
        }
    }

    /// Adds `fp`; false when there is no room for it (the index is incomplete from then on,
    /// and the caller must keep `fp` findable elsewhere).
    pub(crate) fn insert(&self, fp: u128) -> bool {
        if fp == 0 {
            if !self.zero.swap(true, Ordering::AcqRel) {
                self.len.fetch_add(1, Ordering::Relaxed);
            }
            return true;
        }
        if self.max_slots == 0 {
            return false;
        }
        let mut shard = lock(self.shard(fp));
        match shard.insert(fp, self.max_slots) {
            Some(added) => {
                if added {
                    self.len.fetch_add(1, Ordering::Relaxed);
                }
                true
            }
            None => {
                if self.complete.swap(false, Ordering::AcqRel) {
                    tracing::warn!(
                        fingerprints = self.len(),
                        bytes = self.max_slots * SHARDS * SLOT_BYTES,
                        "the exact set's index is full: from now on a \"maybe seen\" not found \
                         in memory is looked up in the state database (slower); raise \
                         frontier.exact_index_mb"
                    );
                }
                false
            }
        }
    }

    /// Whether every fingerprint inserted so far is in the index.
    pub(crate) fn complete(&self) -> bool {
        self.complete.load(Ordering::Acquire)
    }

    /// Fingerprints in the index.
    pub(crate) fn len(&self) -> u64 {
        self.len.load(Ordering::Relaxed)
    }

    /// Bytes of the tables.
    pub(crate) fn bytes(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| (lock(s).slots.len() * SLOT_BYTES) as u64)
            .sum()
    }
}

impl Shard {
    /// The slot where the probe for `fp` starts: the low 64 bits mapped onto the table by a
    /// multiply (any table size, no division).
    fn home(&self, fp: u128) -> usize {
        ((u128::from(fp as u64) * self.slots.len() as u128) >> 64) as usize
    }

    fn contains(&self, fp: u128) -> bool {
        let n = self.slots.len();
        let mut i = self.home(fp);
        // The table is never full, so a probe always reaches an empty slot.
        loop {
            match self.slots[i] {
                0 => return false,
                x if x == fp => return true,
                _ => i = if i + 1 == n { 0 } else { i + 1 },
            }
        }
    }

    /// Some(true) added, Some(false) already there, None no room.
    fn insert(&mut self, fp: u128, max_slots: usize) -> Option<bool> {
        if self.contains(fp) {
            return Some(false);
        }
        if (self.len + 1) * 8 > self.slots.len() * 7 {
            if self.slots.len() >= max_slots {
                return None;
            }
            if !self.grow((self.slots.len() * 2).min(max_slots))
                || (self.len + 1) * 8 > self.slots.len() * 7
            {
                return None;
            }
        }
        self.place(fp);
        self.len += 1;
        Some(true)
    }

    fn place(&mut self, fp: u128) {
        let n = self.slots.len();
        let mut i = self.home(fp);
        while self.slots[i] != 0 {
            i = if i + 1 == n { 0 } else { i + 1 };
        }
        self.slots[i] = fp;
    }

    /// False when the memory cannot be had (then the index is full, not the process dead).
    fn grow(&mut self, to: usize) -> bool {
        let mut table = Vec::new();
        if table.try_reserve_exact(to).is_err() {
            return false;
        }
        table.resize(to, 0);
        let old = std::mem::replace(&mut self.slots, table.into_boxed_slice());
        for fp in old.iter().copied().filter(|&fp| fp != 0) {
            self.place(fp);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fingerprints spread like Murmur3 output (splitmix64 on both halves).
    fn fps(n: u64, seed: u64) -> Vec<u128> {
        let mix = |mut z: u64| {
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        (0..n)
            .map(|i| {
                let x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(i);
                (u128::from(mix(x)) << 64) | u128::from(mix(!x))
            })
            .collect()
    }

    #[test]
    fn a_complete_index_answers_both_ways() {
        let index = ExactIndex::new(64 << 20);
        let present = fps(200_000, 1);
        for &fp in &present {
            assert!(index.insert(fp));
        }
        assert!(index.insert(present[7]), "re-inserting is fine");
        assert_eq!(index.len(), 200_000);
        assert!(index.complete());
        assert!(present.iter().all(|&fp| index.lookup(fp) == Lookup::Seen));
        let absent = fps(200_000, 2);
        assert!(absent.iter().all(|&fp| index.lookup(fp) == Lookup::New));
        // Grown only as far as needed: well under the budget.
        assert!(index.bytes() < 8 << 20, "{} bytes", index.bytes());
    }

    #[test]
    fn a_full_index_refuses_and_stops_answering_new() {
        // 256 shards × 64 slots: room for 256 × 56 fingerprints at 7/8.
        let index = ExactIndex::new(SHARDS * FIRST_SLOTS * SLOT_BYTES);
        let all = fps(30_000, 3);
        let indexed: Vec<u128> = all.iter().copied().filter(|&fp| index.insert(fp)).collect();
        assert!(!index.complete());
        assert!(indexed.len() <= SHARDS * 56 && indexed.len() > SHARDS * 40);
        assert_eq!(index.len(), indexed.len() as u64);
        assert!(indexed.iter().all(|&fp| index.lookup(fp) == Lookup::Seen));
        let refused = all.len() - indexed.len();
        let unknown = all
            .iter()
            .filter(|&&fp| index.lookup(fp) == Lookup::Unknown)
            .count();
        assert_eq!(
            unknown, refused,
            "a refused fingerprint is never called new"
        );
        assert_eq!(index.lookup(fps(1, 4)[0]), Lookup::Unknown);
        assert_eq!(index.bytes(), (SHARDS * FIRST_SLOTS * SLOT_BYTES) as u64);
    }

    #[test]
    fn zero_and_no_budget() {
        let index = ExactIndex::new(1 << 20);
        assert_eq!(index.lookup(0), Lookup::New);
        assert!(index.insert(0));
        assert_eq!(index.lookup(0), Lookup::Seen);
        let none = ExactIndex::new(0);
        assert!(!none.complete());
        assert!(!none.insert(42));
        assert_eq!(none.lookup(42), Lookup::Unknown);
    }

    #[test]
    fn concurrent_inserts_lose_nothing() {
        let index = ExactIndex::new(64 << 20);
        let all = fps(100_000, 5);
        std::thread::scope(|s| {
            for part in all.chunks(25_000).chain(all.chunks(40_000)) {
                let index = &index;
                s.spawn(move || part.iter().for_each(|&fp| assert!(index.insert(fp))));
            }
        });
        assert_eq!(index.len(), 100_000);
        assert!(all.iter().all(|&fp| index.lookup(fp) == Lookup::Seen));
    }
}
