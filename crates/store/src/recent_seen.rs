//! Recently confirmed fingerprints of exact deduplication, in a small direct-mapped table.

use std::sync::Mutex;

use crate::sync::lock;

/// Fingerprints known to be in the exact set, in a small direct-mapped table: links repeat
/// (navigation, headers, footers), so most "maybe seen" answers in a real crawl are confirmed
/// here without a B-tree lookup. A slot holds one whole fingerprint (never a partial tag), so
/// a hit is exact; a miss just falls through to the store.
pub(crate) struct RecentSeen {
    stripes: Box<[Mutex<Box<[u128]>>]>,
}

pub(crate) const RECENT_STRIPES: usize = 64;
pub(crate) const RECENT_SLOTS: usize = 1 << 12; // per stripe: 64 × 4096 × 16 B = 4 MiB in all

impl RecentSeen {
    /// The cache for exact mode; with `exact` false (the Bloom filter decides alone) nothing is
    /// ever looked up or inserted here, and it holds no memory.
    pub(crate) fn new(exact: bool) -> Self {
        let stripes = if exact { RECENT_STRIPES } else { 0 };
        Self {
            stripes: (0..stripes)
                .map(|_| Mutex::new(vec![0u128; RECENT_SLOTS].into_boxed_slice()))
                .collect(),
        }
    }

    pub(crate) fn slot(fp: u128) -> (usize, usize) {
        let x = fp as u64;
        (
            (x as usize) % RECENT_STRIPES,
            ((x >> 32) as usize) % RECENT_SLOTS,
        )
    }

    pub(crate) fn contains(&self, fp: u128) -> bool {
        let (stripe, slot) = Self::slot(fp);
        fp != 0
            && self
                .stripes
                .get(stripe)
                .is_some_and(|s| lock(s)[slot] == fp)
    }

    pub(crate) fn insert(&self, fp: u128) {
        let (stripe, slot) = Self::slot(fp);
        if let Some(s) = self.stripes.get(stripe) {
            lock(s)[slot] = fp;
        }
    }
}
