//! Exact deduplication's lookups beyond the in-memory index (`index.rs`): a small table of
//! recently confirmed fingerprints, and the committed `seen` table, read from a snapshot
//! installed after each checkpoint.

use std::sync::{Arc, Mutex};

use redb::{ReadableDatabase, ReadableTable};

use crate::schema::{OrDb, ADMITTED, SEEN};
use crate::writer::{lock, Shared};
use crate::StoreError;

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

impl Shared {
    pub(crate) fn refresh_snapshot(&self) -> Result<(), StoreError> {
        let read = self.db.begin_read().or_db(&self.path)?;
        let table = read.open_table(SEEN).or_db(&self.path)?;
        *lock(&self.snapshot) = Some(Arc::new(table));
        Ok(())
    }

    /// Puts the exact set — every fingerprint of the admission log — into the index, as much
    /// as fits, and makes sure what does not fit is in the `seen` table (an earlier run may
    /// have indexed it, with another budget or in another order). What does not fit is
    /// checked a chunk at a time, sorted, so the lookups walk the B-tree in order and memory
    /// stays bounded however large the state.
    pub(crate) fn load_index(&self) -> Result<(), StoreError> {
        const CHUNK: usize = 1 << 20;
        let mut refused = Vec::new();
        let mut added = false;
        let read = self.db.begin_read().or_db(&self.path)?;
        let log = read.open_table(ADMITTED).or_db(&self.path)?;
        let mut rows = log.iter().or_db(&self.path)?;
        loop {
            let row = rows.next().transpose().or_db(&self.path)?;
            if let Some((_, v)) = &row {
                let (fp, depth) = v.value();
                if !self.index.insert(fp) {
                    refused.push((fp, depth));
                }
            }
            if refused.len() >= CHUNK || (row.is_none() && !refused.is_empty()) {
                refused.sort_unstable();
                let txn = self.db.begin_write().or_db(&self.path)?;
                {
                    let mut seen = txn.open_table(SEEN).or_db(&self.path)?;
                    for (fp, depth) in refused.drain(..) {
                        if seen.get(fp).or_db(&self.path)?.is_none() {
                            seen.insert(fp, depth).or_db(&self.path)?;
                            added = true;
                        }
                    }
                }
                txn.commit().or_db(&self.path)?;
            }
            if row.is_none() {
                break;
            }
        }
        if added {
            self.refresh_snapshot()?;
        }
        Ok(())
    }
}
