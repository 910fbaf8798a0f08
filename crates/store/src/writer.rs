//! The checkpoint writer: the state shared by the `Store`, the frontier's journal and the
//! writer thread, and the commits — every checkpoint interval (or when the batch is full)
//! the batch goes to disk in one transaction, after the output's `before_commit` hook.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use redb::{Database, ReadOnlyTable, ReadableTable};

use crate::batch::{Batch, Pending, FLUSH_AT};
use crate::index::ExactIndex;
use crate::recent_seen::RecentSeen;
use crate::schema::{read_u64, OrDb, ADMITTED, BACKOFF, HOSTS, META, QUEUE, ROBOTS, SEEN};
use crate::sync::lock;
use crate::StoreError;

/// Milliseconds since the Unix epoch.
pub(crate) fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

pub(crate) type Hook = Box<dyn FnMut() -> std::io::Result<()> + Send>;
/// Says how far the output is covered by what a checkpoint commits (see
/// [`crate::Store::set_output_mark`]).
pub(crate) type MarkHook = Box<dyn FnMut() -> Vec<u8> + Send>;

/// The `meta` key of the output mark.
pub(crate) const OUTPUT_MARK: &str = "output_mark";

pub(crate) struct Shared {
    pub(crate) db: Database,
    pub(crate) path: PathBuf,
    /// Keep the `seen` table (fingerprint-keyed, for exact lookups). Bloom mode needs only the
    /// sequential `admitted` log, which is far cheaper to write.
    pub(crate) exact: bool,
    /// The exact set in memory, as far as the budget allows.
    pub(crate) index: ExactIndex,
    /// Recently confirmed fingerprints, for when the index is incomplete.
    pub(crate) recent: RecentSeen,
    pub(crate) pending: Mutex<Pending>,
    pub(crate) wake: Condvar,
    pub(crate) next_id: AtomicU64,
    /// The committed `seen` table as of the last checkpoint (exact lookups read it).
    pub(crate) snapshot: Mutex<Option<Arc<ReadOnlyTable<u128, u32>>>>,
    pub(crate) before_commit: Mutex<Option<Hook>>,
    pub(crate) output_mark: Mutex<Option<MarkHook>>,
    /// One checkpoint at a time (the writer thread, `checkpoint`, `close`).
    pub(crate) commit: Mutex<()>,
    pub(crate) closing: AtomicBool,
    pub(crate) checkpoints: AtomicU64,
    /// Time spent committing checkpoints (the output's sync included), and the last one's,
    /// in microseconds.
    pub(crate) checkpoint_micros: AtomicU64,
    pub(crate) last_checkpoint_micros: AtomicU64,
    pub(crate) last_error: Mutex<Option<String>>,
    /// Checkpoints failed in a row.
    pub(crate) failures: AtomicU64,
    /// Events of the batch a checkpoint is committing (out of `pending`, not yet durable).
    pub(crate) committing: AtomicU64,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("path", &self.path)
            .field("next_id", &self.next_id)
            .finish_non_exhaustive()
    }
}

impl Shared {
    pub(crate) fn db_err(&self, e: impl fmt::Display) -> StoreError {
        StoreError::Db {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    /// Commits everything pending in one transaction.
    pub(crate) fn checkpoint(&self) -> Result<bool, StoreError> {
        let _one = lock(&self.commit);
        // Read before the batch is taken: every completion it covers is in this batch or an
        // earlier one.
        let mark = lock(&self.output_mark).as_mut().map(|hook| hook());
        let batch = {
            let mut p = lock(&self.pending);
            Batch {
                admits: std::mem::take(&mut p.admits),
                done: std::mem::take(&mut p.done),
                rescheduled: std::mem::take(&mut p.rescheduled),
                backoffs: std::mem::take(&mut p.backoffs),
                robots: std::mem::take(&mut p.robots),
            }
        };
        if batch.is_empty() {
            return Ok(false);
        }
        let events = (batch.admits.len() + batch.done.len() + batch.rescheduled.len()) as u64;
        self.committing.store(events, Ordering::Relaxed);
        let started = std::time::Instant::now();
        let result = self.commit_batch(&batch, mark.as_deref());
        let took = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.committing.store(0, Ordering::Relaxed);
        match result {
            Ok(()) => {
                // Committed. If the new snapshot cannot be read, the fingerprints stay in
                // `fps` (exact lookups still find them) and the next checkpoint tries again.
                match self.refresh_snapshot() {
                    Ok(()) => {
                        let mut p = lock(&self.pending);
                        if !p.fps.is_empty() {
                            for a in batch.admits.iter().filter(|a| a.unindexed) {
                                p.fps.remove(&a.fp);
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot refresh the exact-set snapshot"),
                }
                self.failures.store(0, Ordering::Relaxed);
                self.checkpoints.fetch_add(1, Ordering::Relaxed);
                self.checkpoint_micros.fetch_add(took, Ordering::Relaxed);
                self.last_checkpoint_micros.store(took, Ordering::Relaxed);
                *lock(&self.last_error) = None;
                Ok(true)
            }
            Err(e) => {
                // Nothing of the batch is durable: put it back in front, in order (what changed
                // since is newer and wins).
                let mut p = lock(&self.pending);
                let later = std::mem::replace(&mut p.admits, batch.admits);
                p.admits.extend(later);
                let later = std::mem::replace(&mut p.done, batch.done);
                p.done.extend(later);
                let later = std::mem::replace(&mut p.rescheduled, batch.rescheduled);
                p.rescheduled.extend(later);
                for (k, v) in batch.backoffs {
                    p.backoffs.entry(k).or_insert(v);
                }
                for (k, v) in batch.robots {
                    p.robots.entry(k).or_insert(v);
                }
                drop(p);
                *lock(&self.last_error) = Some(e.to_string());
                self.failures.fetch_add(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    pub(crate) fn commit_batch(
        &self,
        batch: &Batch,
        mark: Option<&[u8]>,
    ) -> Result<(), StoreError> {
        let Batch {
            admits,
            done,
            rescheduled,
            backoffs,
            robots,
        } = batch;
        if let Some(hook) = lock(&self.before_commit).as_mut() {
            hook().map_err(StoreError::Hook)?;
        }
        let txn = self.db.begin_write().or_db(&self.path)?;
        {
            let mut seen = txn.open_table(SEEN).or_db(&self.path)?;
            let mut log = txn.open_table(ADMITTED).or_db(&self.path)?;
            let mut queue = txn.open_table(QUEUE).or_db(&self.path)?;
            let mut per_host: HashMap<&str, u64> = HashMap::new();
            for a in admits {
                // The index is the exact set while it has room; the table holds the rest.
                if a.unindexed {
                    seen.insert(a.fp, a.depth).or_db(&self.path)?;
                }
                log.insert(a.id, (a.fp, a.depth)).or_db(&self.path)?;
                queue.insert(a.id, a.entry.as_slice()).or_db(&self.path)?;
                *per_host.entry(a.host.as_str()).or_default() += 1;
            }
            let mut recorded = 0u64;
            // A URL due again keeps its admission id: its row now carries the schedule (the
            // latest of this batch's last). Before the done marks: an id's done mark always
            // comes after its reschedules (a URL asleep, then dropped or finished for good), so
            // a batch holding both leaves it done.
            for (id, rec, row) in rescheduled {
                queue.insert(id, row.as_slice()).or_db(&self.path)?;
                recorded += u64::from(*rec);
            }
            for (id, rec) in done {
                queue.remove(id).or_db(&self.path)?;
                recorded += u64::from(*rec);
            }
            let mut hosts = txn.open_table(HOSTS).or_db(&self.path)?;
            for (host, n) in per_host {
                let before = hosts.get(host).or_db(&self.path)?.map_or(0, |v| v.value());
                hosts
                    .insert(host, before.saturating_add(n))
                    .or_db(&self.path)?;
            }
            let mut table = txn.open_table(BACKOFF).or_db(&self.path)?;
            for (host, &(backoff, until)) in backoffs {
                if backoff == 0 {
                    table.remove(host.as_str()).or_db(&self.path)?;
                } else {
                    table
                        .insert(host.as_str(), (backoff, until))
                        .or_db(&self.path)?;
                }
            }
            let mut table = txn.open_table(ROBOTS).or_db(&self.path)?;
            for (origin, record) in robots {
                table
                    .insert(origin.as_str(), record.as_slice())
                    .or_db(&self.path)?;
            }
            let mut meta = txn.open_table(META).or_db(&self.path)?;
            let next = self.next_id.load(Ordering::Relaxed);
            meta.insert("next_id", next.to_le_bytes().as_slice())
                .or_db(&self.path)?;
            let pages = read_u64(&meta, "pages")
                .or_db(&self.path)?
                .saturating_add(recorded);
            meta.insert("pages", pages.to_le_bytes().as_slice())
                .or_db(&self.path)?;
            if let Some(mark) = mark {
                meta.insert(OUTPUT_MARK, mark).or_db(&self.path)?;
            }
        }
        txn.commit().or_db(&self.path)?;
        Ok(())
    }
}

pub(crate) fn writer_loop(shared: &Shared, every: Duration) {
    let mut backoff = every;
    loop {
        {
            let deadline = Instant::now() + backoff;
            let mut p = lock(&shared.pending);
            loop {
                if shared.closing.load(Ordering::Acquire) {
                    return;
                }
                // A full batch commits at once — unless the last checkpoint failed: then the
                // retry waits its backoff (a failing disk must not be hammered in a loop).
                if backoff == every && p.events() >= FLUSH_AT {
                    break;
                }
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                p = shared
                    .wake
                    .wait_timeout(p, deadline - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
        match shared.checkpoint() {
            Ok(_) => backoff = every,
            Err(e) => {
                tracing::error!(error = %e, "checkpoint failed; keeping the batch and retrying");
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
    }
}
