//! Exact deduplication's lookups beyond the in-memory index (`index.rs`) and the small table
//! of recently confirmed fingerprints (`recent_seen.rs`): the committed `seen` table, read
//! from a snapshot installed after each checkpoint, and loading the index on open.

use std::sync::Arc;

use redb::{ReadableDatabase, ReadableTable};

use crate::schema::{OrDb, ADMITTED, SEEN};
use crate::sync::lock;
use crate::writer::Shared;
use crate::StoreError;

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
