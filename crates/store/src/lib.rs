//! Durable crawl state in an embedded [redb](https://www.redb.org) database: what lets a crawl
//! survive `kill -9`, power loss and redeploys without losing a URL, and what backs the exact
//! deduplication mode.
//!
//! # What is kept (one file, `state.redb`, in the state directory)
//! - `admitted`: the admission log — admission number → the URL's 128-bit fingerprint (the
//!   visited-set filter's own Murmur3 hash) and link depth. On resume the Bloom filter is
//!   rebuilt from it: the filter needs only the hash, not the URL. (This replaces a filter
//!   snapshot plus a journal: the same information, with no second copy to keep consistent.)
//!   Keyed by admission number, so writes append.
//! - `seen` (exact mode only): fingerprint → depth, for the part of the exact visited set that
//!   does not fit in memory. Exact mode confirms a filter's "maybe seen" against the whole set
//!   of admitted fingerprints: an in-memory index of the admission log's fingerprints (see
//!   `index.rs`; rebuilt from the log on open, up to a memory budget), and this table for the
//!   fingerprints the index has no room for.
//! - `queue`: every admitted URL not yet done (queued, on disk, or in flight), keyed by its
//!   admission number, so a resume serves them again in admission order. A URL leaves the
//!   queue only when its `pages.jsonl` line is on disk.
//! - `hosts`: URLs admitted per host (per-host budgets survive a restart).
//! - `backoff`: hosts that were backing off (errors, 429/503, `Retry-After`): the backoff and
//!   the wall-clock time before which the host must not be fetched, so a restart does not
//!   hammer a struggling server.
//! - `robots`: each origin's robots.txt as the crawler fetched it, with its expiry (the
//!   caller's encoding), so a restart neither re-fetches valid rules nor retries an
//!   unreachable server before its time.
//! - `meta`: the next admission number, counters, and the settings that must not change
//!   between runs (scope, canonicalisation, filter parameters, dedup mode).
//!
//! # How it stays consistent
//! The frontier calls [`Journal::admitted`] for every admission (under the URL's admission
//! lock); the crawler calls [`Store::done`] after a page's record is written. Both only
//! append to an in-memory batch. A writer thread commits the batch every checkpoint interval
//! in one redb transaction with `Durability::Immediate` (after the caller's `before_commit`
//! hook has flushed the output file). Batches are committed in order, so a child admitted
//! while processing a page is durable no later than that page's "done": a crash never loses
//! a URL, it can only re-fetch the pages done since the last checkpoint and those in flight.
//!
//! In exact mode an admitted fingerprint is findable from the moment `admitted` returns: in
//! the index, or, when the index has no room, in the batch's set of pending fingerprints until
//! the checkpoint that commits it has installed a new snapshot of `seen`. A full index stays
//! "incomplete" for the rest of the run, so a fingerprint not found in it is always looked up
//! further; it never answers "new" for one it refused.

#![forbid(unsafe_code)]

mod index;
mod queue_record;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use frontier::{Entry, Journal};
use index::{ExactIndex, Lookup};
use redb::{Database, ReadOnlyTable, ReadableDatabase, ReadableTable, TableDefinition};

const SEEN: TableDefinition<'_, u128, u32> = TableDefinition::new("seen");
const ADMITTED: TableDefinition<'_, u64, (u128, u32)> = TableDefinition::new("admitted");
const QUEUE: TableDefinition<'_, u64, &[u8]> = TableDefinition::new("queue");
const HOSTS: TableDefinition<'_, &str, u64> = TableDefinition::new("hosts");
/// host → (backoff in ms, not before: Unix time in ms)
const BACKOFF: TableDefinition<'_, &str, (u64, u64)> = TableDefinition::new("backoff");
const ROBOTS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("robots");
const META: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("meta");

/// The database file inside the state directory.
pub const FILE_NAME: &str = "state.redb";
/// Pending events that make the writer commit before the interval is up.
const FLUSH_AT: usize = 50_000;
const SETTING_PREFIX: &str = "setting.";

/// A setting that differs between the stored state and this run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The setting's name (e.g. `frontier.fpp`).
    pub key: String,
    /// Its value when the state was written (`None`: it did not exist).
    pub before: Option<String>,
    /// Its value now (`None`: it no longer exists).
    pub now: Option<String>,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(unset)".into());
        write!(
            f,
            "{} was {} and is now {}",
            self.key,
            show(&self.before),
            show(&self.now)
        )
    }
}

/// Why the state could not be opened or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The directory or a file in it cannot be used.
    #[error("state directory {}: {source}", .dir.display())]
    Io {
        /// The state directory.
        dir: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// Another process holds the database.
    #[error("{} is in use by another crawler process", .0.display())]
    InUse(PathBuf),
    /// The database reported an error (corrupt file, disk full, …).
    #[error("state database {}: {message}", .path.display())]
    Db {
        /// The database file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Settings that must not change between runs changed.
    #[error(
        "cannot resume from {}: settings changed since it was written: {}; run with --fresh \
         to start over, or restore the old settings",
        .dir.display(),
        .changes.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    Incompatible {
        /// The state directory.
        dir: PathBuf,
        /// Every difference.
        changes: Vec<Change>,
    },
    /// The `before_commit` hook failed (e.g. the output could not be flushed).
    #[error("before checkpoint: {0}")]
    Hook(std::io::Error),
}

/// What a forget did with one URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forgot {
    /// It was done; it is queued again and the next run fetches it.
    Requeued,
    /// It is still queued (or was in flight when the crawl stopped): the next run fetches it
    /// anyway.
    AlreadyQueued,
    /// This crawl never admitted it.
    NeverSeen,
}

/// How the state backs the visited set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dedup {
    /// The Bloom filter alone decides; the state keeps the admission log it is rebuilt from.
    Bloom,
    /// The state also keeps the exact set of fingerprints that confirms a filter's "maybe
    /// seen", and holds it in memory in up to `index_bytes` (16 bytes a slot, at most 7/8
    /// full); what does not fit is looked up in the database.
    Exact {
        /// Memory for the in-memory index of the exact set.
        index_bytes: usize,
    },
}

impl Dedup {
    /// Exact mode with the default index budget.
    pub const EXACT: Self = Self::Exact {
        index_bytes: DEFAULT_INDEX_BYTES,
    };
}

/// The default memory for the exact set's index: 256 MiB, about 14.7 million fingerprints.
pub const DEFAULT_INDEX_BYTES: usize = 256 << 20;

/// Counters of the store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Checkpoints committed by this process.
    pub checkpoints: u64,
    /// Admissions and completions waiting for the next checkpoint.
    pub pending_events: u64,
    /// The last checkpoint failure, if the last attempt failed.
    pub last_error: Option<String>,
    /// Checkpoints failed in a row (the crawl should stop when this keeps growing: nothing it
    /// does is durable, and the pending batch grows).
    pub consecutive_failures: u64,
    /// Exact mode: fingerprints in the in-memory index.
    pub indexed: u64,
    /// Exact mode: bytes of the in-memory index.
    pub index_bytes: u64,
    /// Exact mode: the whole exact set is in the index (no lookup reads the database).
    pub index_complete: bool,
}

/// A host that was backing off, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostBackoff {
    /// The host key (`host:port`).
    pub host: String,
    /// Its backoff.
    pub backoff: Duration,
    /// Unix time (ms) before which it must not be fetched.
    pub not_before_unix_ms: u64,
}

#[derive(Debug, Default)]
struct Pending {
    admits: Vec<Admit>,
    /// (admission id, whether a `pages.jsonl` record was written)
    done: Vec<(u64, bool)>,
    /// Fingerprints admitted but not yet readable from the committed snapshot.
    fps: HashSet<u128>,
    /// host → (backoff ms, not before ms); a zero backoff deletes the row. Latest wins.
    backoffs: HashMap<String, (u64, u64)>,
    /// origin → robots record. Latest wins.
    robots: HashMap<String, Vec<u8>>,
}

impl Pending {
    /// Admissions and completions: what a checkpoint must commit.
    fn events(&self) -> usize {
        self.admits.len() + self.done.len()
    }
}

/// One admission, as the next checkpoint writes it.
#[derive(Debug)]
struct Admit {
    fp: u128,
    id: u64,
    depth: u32,
    /// The encoded [`Entry`].
    entry: Vec<u8>,
    host: String,
    /// Exact mode: the fingerprint is not in the in-memory index, so the `seen` table must
    /// hold it.
    unindexed: bool,
}

/// One checkpoint's worth of changes.
#[derive(Debug, Default)]
struct Batch {
    admits: Vec<Admit>,
    done: Vec<(u64, bool)>,
    backoffs: HashMap<String, (u64, u64)>,
    robots: HashMap<String, Vec<u8>>,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.admits.is_empty()
            && self.done.is_empty()
            && self.backoffs.is_empty()
            && self.robots.is_empty()
    }
}

/// Milliseconds since the Unix epoch.
fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

type Hook = Box<dyn FnMut() -> std::io::Result<()> + Send>;

/// Fingerprints known to be in the exact set, in a small direct-mapped table: links repeat
/// (navigation, headers, footers), so most "maybe seen" answers in a real crawl are confirmed
/// here without a B-tree lookup. A slot holds one whole fingerprint (never a partial tag), so
/// a hit is exact; a miss just falls through to the store.
struct RecentSeen {
    stripes: Box<[Mutex<Box<[u128]>>]>,
}

const RECENT_STRIPES: usize = 64;
const RECENT_SLOTS: usize = 1 << 12; // per stripe: 64 × 4096 × 16 B = 4 MiB in all

impl RecentSeen {
    fn new() -> Self {
        Self {
            stripes: (0..RECENT_STRIPES)
                .map(|_| Mutex::new(vec![0u128; RECENT_SLOTS].into_boxed_slice()))
                .collect(),
        }
    }

    fn slot(fp: u128) -> (usize, usize) {
        let x = fp as u64;
        (
            (x as usize) % RECENT_STRIPES,
            ((x >> 32) as usize) % RECENT_SLOTS,
        )
    }

    fn contains(&self, fp: u128) -> bool {
        let (stripe, slot) = Self::slot(fp);
        fp != 0 && lock(&self.stripes[stripe])[slot] == fp
    }

    fn insert(&self, fp: u128) {
        let (stripe, slot) = Self::slot(fp);
        lock(&self.stripes[stripe])[slot] = fp;
    }
}

struct Shared {
    db: Database,
    path: PathBuf,
    /// Keep the `seen` table (fingerprint-keyed, for exact lookups). Bloom mode needs only the
    /// sequential `admitted` log, which is far cheaper to write.
    exact: bool,
    /// The exact set in memory, as far as the budget allows.
    index: ExactIndex,
    /// Recently confirmed fingerprints, for when the index is incomplete.
    recent: RecentSeen,
    pending: Mutex<Pending>,
    wake: Condvar,
    next_id: AtomicU64,
    /// The committed `seen` table as of the last checkpoint (exact lookups read it).
    snapshot: Mutex<Option<Arc<ReadOnlyTable<u128, u32>>>>,
    before_commit: Mutex<Option<Hook>>,
    /// One checkpoint at a time (the writer thread, `checkpoint`, `close`).
    commit: Mutex<()>,
    closing: AtomicBool,
    checkpoints: AtomicU64,
    last_error: Mutex<Option<String>>,
    /// Checkpoints failed in a row.
    failures: AtomicU64,
    /// Events of the batch a checkpoint is committing (out of `pending`, not yet durable).
    committing: AtomicU64,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("path", &self.path)
            .field("next_id", &self.next_id)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The host part of a canonical URL (`host[:port]`, user info dropped).
impl Shared {
    fn db_err(&self, e: impl fmt::Display) -> StoreError {
        StoreError::Db {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    fn refresh_snapshot(&self) -> Result<(), StoreError> {
        let read = self.db.begin_read().map_err(|e| self.db_err(e))?;
        let table = read.open_table(SEEN).map_err(|e| self.db_err(e))?;
        *lock(&self.snapshot) = Some(Arc::new(table));
        Ok(())
    }

    /// Puts the exact set — every fingerprint of the admission log — into the index, as much
    /// as fits, and makes sure what does not fit is in the `seen` table (an earlier run may
    /// have indexed it, with another budget or in another order). What does not fit is
    /// checked a chunk at a time, sorted, so the lookups walk the B-tree in order and memory
    /// stays bounded however large the state.
    fn load_index(&self) -> Result<(), StoreError> {
        const CHUNK: usize = 1 << 20;
        let e = |x: redb::Error| self.db_err(x);
        let mut refused = Vec::new();
        let mut added = false;
        let read = self.db.begin_read().map_err(|x| e(x.into()))?;
        let log = read.open_table(ADMITTED).map_err(|x| e(x.into()))?;
        let mut rows = log.iter().map_err(|x| e(x.into()))?;
        loop {
            let row = rows.next().transpose().map_err(|x| e(x.into()))?;
            if let Some((_, v)) = &row {
                let (fp, depth) = v.value();
                if !self.index.insert(fp) {
                    refused.push((fp, depth));
                }
            }
            if refused.len() >= CHUNK || (row.is_none() && !refused.is_empty()) {
                refused.sort_unstable();
                let txn = self.db.begin_write().map_err(|x| e(x.into()))?;
                {
                    let mut seen = txn.open_table(SEEN).map_err(|x| e(x.into()))?;
                    for (fp, depth) in refused.drain(..) {
                        if seen.get(fp).map_err(|x| e(x.into()))?.is_none() {
                            seen.insert(fp, depth).map_err(|x| e(x.into()))?;
                            added = true;
                        }
                    }
                }
                txn.commit().map_err(|x| e(x.into()))?;
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

    /// Commits everything pending in one transaction.
    fn checkpoint(&self) -> Result<bool, StoreError> {
        let _one = lock(&self.commit);
        let batch = {
            let mut p = lock(&self.pending);
            Batch {
                admits: std::mem::take(&mut p.admits),
                done: std::mem::take(&mut p.done),
                backoffs: std::mem::take(&mut p.backoffs),
                robots: std::mem::take(&mut p.robots),
            }
        };
        if batch.is_empty() {
            return Ok(false);
        }
        let events = (batch.admits.len() + batch.done.len()) as u64;
        self.committing.store(events, Ordering::Relaxed);
        let result = self.commit_batch(&batch);
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

    fn commit_batch(&self, batch: &Batch) -> Result<(), StoreError> {
        let Batch {
            admits,
            done,
            backoffs,
            robots,
        } = batch;
        if let Some(hook) = lock(&self.before_commit).as_mut() {
            hook().map_err(StoreError::Hook)?;
        }
        let e = |e: redb::Error| self.db_err(e);
        let txn = self.db.begin_write().map_err(|x| e(x.into()))?;
        {
            let mut seen = txn.open_table(SEEN).map_err(|x| e(x.into()))?;
            let mut log = txn.open_table(ADMITTED).map_err(|x| e(x.into()))?;
            let mut queue = txn.open_table(QUEUE).map_err(|x| e(x.into()))?;
            let mut per_host: HashMap<&str, u64> = HashMap::new();
            for a in admits {
                // The index is the exact set while it has room; the table holds the rest.
                if a.unindexed {
                    seen.insert(a.fp, a.depth).map_err(|x| e(x.into()))?;
                }
                log.insert(a.id, (a.fp, a.depth)).map_err(|x| e(x.into()))?;
                queue
                    .insert(a.id, a.entry.as_slice())
                    .map_err(|x| e(x.into()))?;
                *per_host.entry(a.host.as_str()).or_default() += 1;
            }
            let mut recorded = 0u64;
            for (id, rec) in done {
                queue.remove(id).map_err(|x| e(x.into()))?;
                recorded += u64::from(*rec);
            }
            let mut hosts = txn.open_table(HOSTS).map_err(|x| e(x.into()))?;
            for (host, n) in per_host {
                let before = hosts
                    .get(host)
                    .map_err(|x| e(x.into()))?
                    .map_or(0, |v| v.value());
                hosts
                    .insert(host, before.saturating_add(n))
                    .map_err(|x| e(x.into()))?;
            }
            let mut table = txn.open_table(BACKOFF).map_err(|x| e(x.into()))?;
            for (host, &(backoff, until)) in backoffs {
                if backoff == 0 {
                    table.remove(host.as_str()).map_err(|x| e(x.into()))?;
                } else {
                    table
                        .insert(host.as_str(), (backoff, until))
                        .map_err(|x| e(x.into()))?;
                }
            }
            let mut table = txn.open_table(ROBOTS).map_err(|x| e(x.into()))?;
            for (origin, record) in robots {
                table
                    .insert(origin.as_str(), record.as_slice())
                    .map_err(|x| e(x.into()))?;
            }
            let mut meta = txn.open_table(META).map_err(|x| e(x.into()))?;
            let next = self.next_id.load(Ordering::Relaxed);
            meta.insert("next_id", next.to_le_bytes().as_slice())
                .map_err(|x| e(x.into()))?;
            let pages = read_u64(&meta, "pages")
                .map_err(e)?
                .saturating_add(recorded);
            meta.insert("pages", pages.to_le_bytes().as_slice())
                .map_err(|x| e(x.into()))?;
        }
        txn.commit().map_err(|x| e(x.into()))?;
        Ok(())
    }
}

/// Rewrites every row of a queue written before the format byte (see [`queue_record`]), a
/// batch of keys at a time. `Err(None)`: a row is not an entry.
fn migrate_queue(queue: &mut redb::Table<'_, u64, &[u8]>) -> Result<u64, Option<redb::Error>> {
    const BATCH: usize = 10_000;
    let mut from = 0u64;
    let mut n = 0;
    loop {
        let mut rows = Vec::with_capacity(BATCH);
        for row in queue.range(from..).map_err(|x| Some(x.into()))?.take(BATCH) {
            let (k, v) = row.map_err(|x| Some(x.into()))?;
            let entry = queue_record::decode_legacy(v.value()).ok_or(None)?;
            rows.push((k.value(), queue_record::encode(&entry)));
        }
        let Some(&(last, _)) = rows.last() else {
            return Ok(n);
        };
        for (k, bytes) in &rows {
            queue
                .insert(*k, bytes.as_slice())
                .map_err(|x| Some(x.into()))?;
        }
        n += rows.len() as u64;
        match last.checked_add(1) {
            Some(next) => from = next,
            None => return Ok(n),
        }
    }
}

fn read_u64(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
    key: &str,
) -> Result<u64, redb::Error> {
    Ok(meta
        .get(key)?
        .and_then(|v| <[u8; 8]>::try_from(v.value()).ok())
        .map_or(0, u64::from_le_bytes))
}

impl Journal for Shared {
    fn admitted(&self, fp: u128, host: &str, entry: &mut Entry) {
        entry.id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let bytes = queue_record::encode(entry);
        let host = host.to_owned();
        // Findable at once: in the index, or (no room there) among the pending fingerprints
        // until the snapshot that holds it is installed.
        let unindexed = self.exact && !self.index.insert(fp);
        let mut p = lock(&self.pending);
        if unindexed {
            p.fps.insert(fp);
            self.recent.insert(fp);
        }
        p.admits.push(Admit {
            fp,
            id: entry.id,
            depth: entry.depth,
            entry: bytes,
            host,
            unindexed,
        });
        if p.events() >= FLUSH_AT {
            self.wake.notify_one();
        }
    }

    fn contains(&self, fp: u128) -> bool {
        match self.index.lookup(fp) {
            Lookup::Seen => return true,
            Lookup::New => return false,
            Lookup::Unknown => {}
        }
        // Pending first: a fingerprint leaves `fps` only after the snapshot that holds it is
        // installed, so checking in this order can never miss an admitted URL.
        if self.recent.contains(fp) || lock(&self.pending).fps.contains(&fp) {
            return true;
        }
        let snapshot = lock(&self.snapshot).clone();
        match snapshot {
            Some(t) => match t.get(fp) {
                Ok(v) => {
                    let seen = v.is_some();
                    if seen {
                        self.recent.insert(fp);
                    }
                    seen
                }
                Err(e) => {
                    // Unreadable: say "seen" (a skipped URL is the filter's usual failure
                    // mode; a URL fetched twice would break exactly-once).
                    tracing::error!(error = %e, "exact visited set unreadable");
                    true
                }
            },
            None => false,
        }
    }

    fn done(&self, id: u64, recorded: bool) {
        if id == 0 {
            return;
        }
        let mut p = lock(&self.pending);
        p.done.push((id, recorded));
        if p.events() >= FLUSH_AT {
            self.wake.notify_one();
        }
    }

    fn host_backoff(&self, change: &frontier::HostBackoff) {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let until = unix_ms().saturating_add(ms(change.wait));
        lock(&self.pending)
            .backoffs
            .insert(change.host.to_string(), (ms(change.backoff), until));
    }
}

/// The durable state of one crawl. Dropping it without [`close`](Self::close) loses only
/// what the last checkpoint did not commit — like a crash.
#[derive(Debug)]
pub struct Store {
    shared: Arc<Shared>,
    writer: Mutex<Option<JoinHandle<()>>>,
    resumed: bool,
    dir: PathBuf,
}

impl Store {
    /// Opens (or creates) the state in `dir` and starts the checkpoint writer.
    ///
    /// `settings` are the values that must not change between runs; an existing state
    /// written with other values is refused with [`StoreError::Incompatible`]. With `fresh`
    /// any existing state is deleted first.
    pub fn open(
        dir: &Path,
        settings: &BTreeMap<String, String>,
        dedup: Dedup,
        fresh: bool,
        checkpoint_every: Duration,
    ) -> Result<Self, StoreError> {
        let io = |source| StoreError::Io {
            dir: dir.to_path_buf(),
            source,
        };
        let path = dir.join(FILE_NAME);
        std::fs::create_dir_all(dir).map_err(io)?;
        let (exact, index_bytes) = match dedup {
            Dedup::Bloom => (false, 0),
            Dedup::Exact { index_bytes } => (true, index_bytes),
        };
        // The lock comes first: `--fresh` must not delete the state of a crawl that runs.
        let db = match open_db(&path) {
            Err(StoreError::Db { .. }) if fresh => {
                // Unreadable, and the caller wants to start over anyway.
                std::fs::remove_file(&path).map_err(io)?;
                open_db(&path)?
            }
            other => other?,
        };
        let shared = Shared {
            db,
            path: path.clone(),
            exact,
            index: ExactIndex::new(index_bytes),
            recent: RecentSeen::new(),
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
            next_id: AtomicU64::new(1),
            snapshot: Mutex::new(None),
            before_commit: Mutex::new(None),
            commit: Mutex::new(()),
            closing: AtomicBool::new(false),
            checkpoints: AtomicU64::new(0),
            last_error: Mutex::new(None),
            failures: AtomicU64::new(0),
            committing: AtomicU64::new(0),
        };
        let e = |x: redb::Error| shared.db_err(x);
        let mut resumed = false;
        {
            let txn = shared.db.begin_write().map_err(|x| e(x.into()))?;
            if fresh {
                txn.delete_table(SEEN).map_err(|x| e(x.into()))?;
                txn.delete_table(ADMITTED).map_err(|x| e(x.into()))?;
                txn.delete_table(QUEUE).map_err(|x| e(x.into()))?;
                txn.delete_table(HOSTS).map_err(|x| e(x.into()))?;
                txn.delete_table(BACKOFF).map_err(|x| e(x.into()))?;
                txn.delete_table(ROBOTS).map_err(|x| e(x.into()))?;
                txn.delete_table(META).map_err(|x| e(x.into()))?;
            }
            {
                let mut meta = txn.open_table(META).map_err(|x| e(x.into()))?;
                let stored: BTreeMap<String, String> = meta
                    .range::<&str>(SETTING_PREFIX..)
                    .map_err(|x| e(x.into()))?
                    .filter_map(Result::ok)
                    .filter_map(|(k, v)| {
                        let key = k.value().strip_prefix(SETTING_PREFIX)?.to_owned();
                        Some((key, String::from_utf8_lossy(v.value()).into_owned()))
                    })
                    .collect();
                let initialised = meta.get("next_id").map_err(|x| e(x.into()))?.is_some();
                if initialised {
                    resumed = true;
                    let changes = diff(&stored, settings);
                    if !changes.is_empty() {
                        return Err(StoreError::Incompatible {
                            dir: dir.to_path_buf(),
                            changes,
                        });
                    }
                    shared.next_id.store(
                        read_u64(&meta, "next_id").map_err(e)?.max(1),
                        Ordering::Relaxed,
                    );
                    if meta
                        .get(queue_record::META_KEY)
                        .map_err(|x| e(x.into()))?
                        .is_none()
                    {
                        let mut queue = txn.open_table(QUEUE).map_err(|x| e(x.into()))?;
                        let n = migrate_queue(&mut queue).map_err(|x| match x {
                            Some(x) => e(x),
                            None => shared.db_err("a queued entry is corrupt"),
                        })?;
                        tracing::info!(rows = n, "queue rows given their format byte");
                    }
                } else {
                    for (k, v) in settings {
                        meta.insert(format!("{SETTING_PREFIX}{k}").as_str(), v.as_bytes())
                            .map_err(|x| e(x.into()))?;
                    }
                    meta.insert("next_id", 1u64.to_le_bytes().as_slice())
                        .map_err(|x| e(x.into()))?;
                }
                meta.insert(queue_record::META_KEY, [queue_record::FORMAT].as_slice())
                    .map_err(|x| e(x.into()))?;
                txn.open_table(SEEN).map_err(|x| e(x.into()))?;
                txn.open_table(ADMITTED).map_err(|x| e(x.into()))?;
                txn.open_table(QUEUE).map_err(|x| e(x.into()))?;
                txn.open_table(HOSTS).map_err(|x| e(x.into()))?;
                txn.open_table(BACKOFF).map_err(|x| e(x.into()))?;
                txn.open_table(ROBOTS).map_err(|x| e(x.into()))?;
            }
            txn.commit().map_err(|x| e(x.into()))?;
        }
        shared.refresh_snapshot()?;
        if exact {
            shared.load_index()?;
        }
        let shared = Arc::new(shared);
        let writer = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("state-checkpoint".into())
                .spawn(move || writer_loop(&shared, checkpoint_every))
                .map_err(io)?
        };
        Ok(Self {
            shared,
            writer: Mutex::new(Some(writer)),
            resumed,
            dir: dir.to_path_buf(),
        })
    }

    /// Whether this state was written by an earlier run.
    pub fn resumed(&self) -> bool {
        self.resumed
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The journal to give the frontier ([`frontier::LocalFrontier::with_journal`]).
    pub fn journal(&self) -> Arc<dyn Journal> {
        Arc::clone(&self.shared) as Arc<dyn Journal>
    }

    /// Runs `hook` before every commit: flush and sync the output there, so a URL is never
    /// marked done before its record is on disk.
    pub fn set_before_commit(&self, hook: impl FnMut() -> std::io::Result<()> + Send + 'static) {
        *lock(&self.shared.before_commit) = Some(Box::new(hook));
    }

    /// Marks admission `id` done (`recorded`: a `pages.jsonl` line was written for it).
    /// A crawl does this through the frontier's [`Journal::done`]; this is for the restore
    /// path and for tests.
    pub fn done(&self, id: u64, recorded: bool) {
        self.shared.done(id, recorded);
    }

    /// Calls `f` with every admitted fingerprint (to rebuild the visited-set filter), from
    /// the sequential admission log.
    pub fn for_each_seen(&self, mut f: impl FnMut(u128)) -> Result<u64, StoreError> {
        let s = &self.shared;
        let read = s.db.begin_read().map_err(|e| s.db_err(e))?;
        let table = read.open_table(ADMITTED).map_err(|e| s.db_err(e))?;
        let mut n = 0;
        for row in table.iter().map_err(|e| s.db_err(e))? {
            let (_, v) = row.map_err(|e| s.db_err(e))?;
            f(v.value().0);
            n += 1;
        }
        Ok(n)
    }

    /// Calls `f` with every admitted URL not yet done, in admission order.
    pub fn for_each_pending(&self, mut f: impl FnMut(Entry)) -> Result<u64, StoreError> {
        let s = &self.shared;
        let read = s.db.begin_read().map_err(|e| s.db_err(e))?;
        let table = read.open_table(QUEUE).map_err(|e| s.db_err(e))?;
        let mut n = 0;
        for row in table.iter().map_err(|e| s.db_err(e))? {
            let (_, v) = row.map_err(|e| s.db_err(e))?;
            match queue_record::decode(v.value()) {
                Some(entry) => {
                    f(entry);
                    n += 1;
                }
                None => return Err(s.db_err("a queued entry is corrupt")),
            }
        }
        Ok(n)
    }

    /// Every row of `table` (in the last committed state), mapped by `f`.
    fn read_all<K: redb::Key + 'static, V: redb::Value + 'static, T>(
        &self,
        table: TableDefinition<'_, K, V>,
        mut f: impl for<'a> FnMut(K::SelfType<'a>, V::SelfType<'a>) -> T,
    ) -> Result<Vec<T>, StoreError> {
        let s = &self.shared;
        let read = s.db.begin_read().map_err(|e| s.db_err(e))?;
        let table = read.open_table(table).map_err(|e| s.db_err(e))?;
        let mut out = Vec::new();
        for row in table.iter().map_err(|e| s.db_err(e))? {
            let (k, v) = row.map_err(|e| s.db_err(e))?;
            out.push(f(k.value(), v.value()));
        }
        Ok(out)
    }

    /// URLs admitted per host by earlier runs.
    pub fn hosts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.read_all(HOSTS, |host, n| (host.to_owned(), n))
    }

    /// Records an origin's robots.txt (`record` in the caller's encoding, expiry included);
    /// committed with the next checkpoint.
    pub fn put_robots(&self, origin: &str, record: Vec<u8>) {
        lock(&self.shared.pending)
            .robots
            .insert(origin.to_owned(), record);
    }

    /// The robots.txt records of earlier runs, by origin.
    pub fn robots(&self) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        self.read_all(ROBOTS, |origin, record| {
            (origin.to_owned(), record.to_vec())
        })
    }

    /// Hosts that were backing off when earlier runs last checkpointed.
    pub fn backoffs(&self) -> Result<Vec<HostBackoff>, StoreError> {
        self.read_all(BACKOFF, |host, (backoff, until)| HostBackoff {
            host: host.to_owned(),
            backoff: Duration::from_millis(backoff),
            not_before_unix_ms: until,
        })
    }

    /// `pages.jsonl` lines written by earlier runs (as of their last checkpoint).
    pub fn pages_before(&self) -> Result<u64, StoreError> {
        let s = &self.shared;
        let read = s.db.begin_read().map_err(|e| s.db_err(e))?;
        let meta = read.open_table(META).map_err(|e| s.db_err(e))?;
        read_u64(&meta, "pages").map_err(|e| s.db_err(e))
    }

    /// Commits everything pending now.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        self.shared.checkpoint().map(|_| ())
    }

    /// Admissions and completions not yet committed, the batch being committed included
    /// (grows when checkpoints fall behind).
    pub fn backlog(&self) -> u64 {
        let p = lock(&self.shared.pending);
        p.events() as u64 + self.shared.committing.load(Ordering::Relaxed)
    }

    /// Counters.
    pub fn stats(&self) -> StoreStats {
        let p = lock(&self.shared.pending);
        StoreStats {
            checkpoints: self.shared.checkpoints.load(Ordering::Relaxed),
            pending_events: (p.admits.len() + p.done.len() + p.backoffs.len() + p.robots.len())
                as u64,
            last_error: lock(&self.shared.last_error).clone(),
            consecutive_failures: self.shared.failures.load(Ordering::Relaxed),
            indexed: self.shared.index.len(),
            index_bytes: self.shared.index.bytes(),
            index_complete: self.shared.index.complete(),
        }
    }

    /// Stops the writer and commits a final checkpoint (call it once everything that
    /// admits or completes URLs has stopped).
    pub fn close(&self) -> Result<(), StoreError> {
        self.stop_writer();
        self.shared.checkpoint().map(|_| ())
    }

    fn stop_writer(&self) {
        self.shared.closing.store(true, Ordering::Release);
        {
            let _p = lock(&self.shared.pending);
            self.shared.wake.notify_all();
        }
        if let Some(w) = lock(&self.writer).take() {
            let _ = w.join();
        }
    }

    /// Queues `urls` (canonical, with their fingerprints) to be fetched again by the next run
    /// of the crawl whose state is in `dir`. The crawl must not be running.
    pub fn forget(dir: &Path, urls: &[(String, u128)]) -> Result<Vec<Forgot>, StoreError> {
        let path = dir.join(FILE_NAME);
        if !path.exists() {
            return Err(StoreError::Io {
                dir: dir.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("no crawl state ({FILE_NAME}) here"),
                ),
            });
        }
        let db = open_db(&path)?;
        let err = |x: redb::Error| StoreError::Db {
            path: path.clone(),
            message: x.to_string(),
        };
        let txn = db.begin_write().map_err(|x| err(x.into()))?;
        let mut results = Vec::with_capacity(urls.len());
        {
            let wanted: HashSet<u128> = urls.iter().map(|(_, fp)| *fp).collect();
            let mut depths: HashMap<u128, u32> = HashMap::new();
            let log = txn.open_table(ADMITTED).map_err(|x| err(x.into()))?;
            for row in log.iter().map_err(|x| err(x.into()))? {
                let (_, v) = row.map_err(|x| err(x.into()))?;
                let (fp, depth) = v.value();
                if wanted.contains(&fp) {
                    depths.insert(fp, depth);
                }
            }
            drop(log);
            let mut queue = txn.open_table(QUEUE).map_err(|x| err(x.into()))?;
            let mut meta = txn.open_table(META).map_err(|x| err(x.into()))?;
            // Only the queued URLs asked about are kept (the queue may hold millions).
            let mut queued: HashSet<String> = HashSet::new();
            for row in queue.iter().map_err(|x| err(x.into()))? {
                let (_, v) = row.map_err(|x| err(x.into()))?;
                if let Some(e) = queue_record::decode(v.value()) {
                    let url = e.url;
                    if wanted.contains(&frontier::fingerprint(&url)) {
                        queued.insert(url);
                    }
                }
            }
            let mut next = read_u64(&meta, "next_id").map_err(err)?.max(1);
            for (url, fp) in urls {
                let depth = depths.get(fp).copied();
                let result = match depth {
                    None => Forgot::NeverSeen,
                    Some(_) if queued.contains(url) => Forgot::AlreadyQueued,
                    Some(depth) => {
                        let mut entry = Entry::new(url.clone(), depth, None);
                        entry.id = next;
                        next = next.saturating_add(1);
                        let bytes = queue_record::encode(&entry);
                        queue
                            .insert(entry.id, bytes.as_slice())
                            .map_err(|x| err(x.into()))?;
                        queued.insert(url.clone());
                        Forgot::Requeued
                    }
                };
                results.push(result);
            }
            meta.insert("next_id", next.to_le_bytes().as_slice())
                .map_err(|x| err(x.into()))?;
        }
        txn.commit().map_err(|x| err(x.into()))?;
        Ok(results)
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // Without `close`, like a crash minus the kill: the writer stops, nothing more is
        // committed.
        self.stop_writer();
    }
}

/// redb's page cache. The state mostly appends (admission log, queue): the upper levels of the
/// trees suffice. Exact mode's random lookups go to the in-memory index; only what does not
/// fit there reads the `seen` table. (redb's default, 1 GiB, would dominate the crawler's RSS.)
const CACHE_BYTES: usize = 16 << 20;

fn open_db(path: &Path) -> Result<Database, StoreError> {
    Database::builder()
        .set_cache_size(CACHE_BYTES)
        .create(path)
        .map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => StoreError::InUse(path.to_path_buf()),
            other => StoreError::Db {
                path: path.to_path_buf(),
                message: other.to_string(),
            },
        })
}

fn diff(stored: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Vec<Change> {
    let keys: std::collections::BTreeSet<&String> = stored.keys().chain(now.keys()).collect();
    keys.into_iter()
        .filter(|k| stored.get(*k) != now.get(*k))
        .map(|k| Change {
            key: k.clone(),
            before: stored.get(k).cloned(),
            now: now.get(k).cloned(),
        })
        .collect()
}

fn writer_loop(shared: &Shared, every: Duration) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(fpp: &str) -> BTreeMap<String, String> {
        [("frontier.fpp", fpp), ("frontier.scope", "domains")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    fn admit(j: &dyn Journal, url: &str, depth: u32) -> u64 {
        let mut e = Entry::new(url.to_owned(), depth, Some("http://a.test/".into()));
        let host = frontier::host_key(&url::Url::parse(url).unwrap()).to_owned();
        j.admitted(frontier::fingerprint(url), &host, &mut e);
        e.id
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn robots_and_backoffs_survive_a_restart_and_fresh_clears_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &settings("0.01"), Dedup::Bloom, false, HOUR).unwrap();
        let j = store.journal();
        store.put_robots("http://a.test", b"old".to_vec());
        store.put_robots("http://a.test", b"new".to_vec());
        store.put_robots("http://b.test:81", Vec::new());
        let change = |host: &str, backoff: u64, wait: u64| frontier::HostBackoff {
            host: host.into(),
            backoff: Duration::from_secs(backoff),
            wait: Duration::from_secs(wait),
        };
        let before = unix_ms();
        j.host_backoff(&change("a.test", 2, 30));
        let after = unix_ms();
        j.host_backoff(&change("b.test:81", 4, 4));
        store.checkpoint().unwrap();
        j.host_backoff(&change("b.test:81", 0, 0)); // healthy again: forgotten
        store.close().unwrap();
        drop((store, j));

        let store = Store::open(dir.path(), &settings("0.01"), Dedup::Bloom, false, HOUR).unwrap();
        let mut robots = store.robots().unwrap();
        robots.sort();
        assert_eq!(
            robots,
            [
                ("http://a.test".to_owned(), b"new".to_vec()),
                ("http://b.test:81".to_owned(), Vec::new())
            ]
        );
        let backoffs = store.backoffs().unwrap();
        assert_eq!(backoffs.len(), 1, "{backoffs:?}");
        assert_eq!(backoffs[0].host, "a.test");
        assert_eq!(backoffs[0].backoff, Duration::from_secs(2));
        let until = backoffs[0].not_before_unix_ms;
        assert!(
            (before + 30_000..=after + 30_000).contains(&until),
            "{until} {before} {after}"
        );
        drop(store);

        let store = Store::open(dir.path(), &settings("0.01"), Dedup::Bloom, true, HOUR).unwrap();
        assert!(store.robots().unwrap().is_empty());
        assert!(store.backoffs().unwrap().is_empty());
    }

    #[test]
    fn a_closed_store_resumes_with_its_queue_and_visited_set() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
        assert!(!store.resumed());
        let j = store.journal();
        let a = admit(&*j, "http://a.test/1", 1);
        let b = admit(&*j, "http://b.test:8080/2", 2);
        let _c = admit(&*j, "http://a.test/3", 2);
        assert!(
            j.contains(frontier::fingerprint("http://a.test/1")),
            "pending counts"
        );
        assert!(!j.contains(frontier::fingerprint("http://a.test/9")));
        store.done(a, true);
        store.checkpoint().unwrap();
        assert!(
            j.contains(frontier::fingerprint("http://a.test/1")),
            "committed counts"
        );
        store.done(b, false);
        store.close().unwrap();
        drop((store, j)); // the last handles: the database closes

        let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
        assert!(store.resumed());
        let mut pending = Vec::new();
        store
            .for_each_pending(|e| pending.push((e.url, e.depth, e.id)))
            .unwrap();
        assert_eq!(pending, vec![("http://a.test/3".to_owned(), 2, 3)]);
        let mut seen = HashSet::new();
        assert_eq!(
            store
                .for_each_seen(|fp| {
                    seen.insert(fp);
                })
                .unwrap(),
            3
        );
        assert!(seen.contains(&frontier::fingerprint("http://b.test:8080/2")));
        let mut hosts = store.hosts().unwrap();
        hosts.sort();
        assert_eq!(hosts, vec![("a.test".into(), 2), ("b.test:8080".into(), 1)]);
        assert_eq!(store.pages_before().unwrap(), 1);
        // Admission numbers continue.
        assert_eq!(admit(&*store.journal(), "http://a.test/4", 1), 4);
    }

    #[test]
    fn exact_answers_do_not_depend_on_the_index_budget() {
        // The whole set in memory, a budget that fills up part way, no index at all, and a
        // resume with a budget other than the first run's: the same answers, before and after
        // a checkpoint and after the resume.
        const ALL: usize = DEFAULT_INDEX_BYTES;
        const PART: usize = 256 << 10; // 256 shards × 64 slots: about 14,000 fingerprints
        for (first, then) in [(ALL, ALL), (PART, PART), (0, 0), (ALL, PART), (PART, ALL)] {
            let dir = tempfile::tempdir().unwrap();
            let url = |i: u32| format!("http://h{}.test/p/{i}", i % 7);
            let fp = |i: u32| frontier::fingerprint(&url(i));
            let check = |j: &dyn Journal, admitted: u32| {
                for i in 0..admitted {
                    assert!(j.contains(fp(i)), "{first}/{then}: {} seen", url(i));
                }
                for i in 20_000..22_000 {
                    assert!(!j.contains(fp(i)), "{first}/{then}: {} new", url(i));
                }
            };
            let open = |index_bytes| {
                let dedup = Dedup::Exact { index_bytes };
                Store::open(dir.path(), &settings("0.01"), dedup, false, HOUR).unwrap()
            };
            let store = open(first);
            let j = store.journal();
            for i in 0..10_000 {
                admit(&*j, &url(i), 1);
            }
            check(&*j, 10_000);
            store.checkpoint().unwrap();
            for i in 10_000..20_000 {
                admit(&*j, &url(i), 1);
            }
            check(&*j, 20_000);
            store.close().unwrap();
            let stats = store.stats();
            assert_eq!(stats.index_complete, first == ALL, "{first}");
            assert_eq!(stats.indexed == 20_000, first == ALL, "{first}");
            assert!(stats.index_bytes <= first as u64);
            drop((store, j));

            let store = open(then);
            check(&*store.journal(), 20_000);
            assert_eq!(store.stats().index_complete, then == ALL, "{then}");
        }
    }

    /// Polls `done` every millisecond; fails the test after 30 s, naming `what`.
    fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done() {
            assert!(Instant::now() < deadline, "no {what} in 30 s");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn concurrent_exact_offers_admit_each_url_once_whatever_the_index() {
        // A filter far too small (most offers of new URLs are "maybe seen"), checkpoints every
        // 2 ms, and four threads offering the same URLs in different orders: every URL is
        // admitted exactly once, with the whole set in memory, part of it, or none.
        use frontier::{Admission, FrontierConfig, HostScope, LocalFrontier, ScopeConfig};
        const N: usize = 6_007; // prime: every stride below visits every URL
        for index_bytes in [DEFAULT_INDEX_BYTES, 256 << 10, 0] {
            let dir = tempfile::tempdir().unwrap();
            let dedup = Dedup::Exact { index_bytes };
            let every = Duration::from_millis(2);
            let store = Store::open(dir.path(), &settings("0.5"), dedup, false, every).unwrap();
            let cfg = FrontierConfig {
                scope: ScopeConfig {
                    hosts: HostScope::Any,
                    ..ScopeConfig::default()
                },
                expected_urls: 50,
                fpp: 0.5,
                dedup: frontier::Dedup::Exact,
                ..FrontierConfig::default()
            };
            let f = LocalFrontier::new(cfg, &[])
                .unwrap()
                .with_journal(store.journal());
            let urls: Vec<String> = (0..N)
                .map(|i| format!("http://h{}.test/p/{i}", i % 13))
                .collect();
            let admitted = AtomicU64::new(0);
            std::thread::scope(|s| {
                for t in 0..4 {
                    let (f, urls, admitted, store) = (&f, &urls, &admitted, &store);
                    s.spawn(move || {
                        for i in 0..N {
                            if t == 0 && i == N / 2 {
                                // Half way, wait for a checkpoint to commit what was admitted
                                // so far: the rest of the offers then run against the store's
                                // snapshot as well as its pending fingerprints, however fast
                                // the offers were.
                                wait_until("a checkpoint", || store.stats().checkpoints > 0);
                            }
                            let url = &urls[(i * (2 * t + 1) + t * 1_999) % N];
                            if f.offer(url, 1, None) == Admission::Admitted {
                                admitted.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    });
                }
            });
            assert_eq!(admitted.into_inner(), N as u64, "index {index_bytes} B");
            store.close().unwrap();
        }
    }

    #[test]
    fn what_the_last_checkpoint_did_not_commit_is_lost_like_in_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
        let j = store.journal();
        let a = admit(&*j, "http://a.test/1", 1);
        store.checkpoint().unwrap();
        admit(&*j, "http://a.test/2", 1);
        store.done(a, true);
        drop((store, j)); // no close: no final checkpoint
        let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
        let mut pending = Vec::new();
        store.for_each_pending(|e| pending.push(e.url)).unwrap();
        assert_eq!(
            pending,
            vec!["http://a.test/1".to_owned()],
            "served again, not lost"
        );
    }

    #[test]
    fn changed_settings_are_refused_by_name_and_fresh_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
        admit(&*store.journal(), "http://a.test/1", 0);
        store.close().unwrap();
        drop(store);
        let err =
            Store::open(dir.path(), &settings("0.001"), Dedup::EXACT, false, HOUR).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("frontier.fpp was 0.01 and is now 0.001"),
            "{text}"
        );
        assert!(text.contains("--fresh"), "{text}");
        let store = Store::open(dir.path(), &settings("0.001"), Dedup::EXACT, true, HOUR).unwrap();
        assert!(!store.resumed());
        assert_eq!(store.for_each_seen(|_| {}).unwrap(), 0);
    }

    #[test]
    fn a_second_process_is_told_the_state_is_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let _store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
        let err =
            Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap_err();
        assert!(matches!(err, StoreError::InUse(_)), "{err}");
    }

    #[test]
    fn fresh_never_deletes_a_running_crawls_state_and_recovers_a_corrupt_one() {
        let dir = tempfile::tempdir().unwrap();
        let live = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
        admit(&*live.journal(), "http://a.test/1", 0);
        live.checkpoint().unwrap();
        let err = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, true, HOUR).unwrap_err();
        assert!(matches!(err, StoreError::InUse(_)), "{err}");
        let mut n = 0;
        live.for_each_seen(|_| n += 1).unwrap();
        assert_eq!(n, 1, "the running crawl's state is intact");
        drop(live);

        std::fs::write(
            dir.path().join(FILE_NAME),
            b"not a database, just garbage bytes",
        )
        .unwrap();
        let err =
            Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap_err();
        assert!(matches!(err, StoreError::Db { .. }), "{err}");
        let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, true, HOUR).unwrap();
        assert!(!store.resumed());
    }

    #[test]
    fn forget_requeues_done_urls_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
        let j = store.journal();
        let a = admit(&*j, "http://a.test/done", 3);
        admit(&*j, "http://a.test/queued", 1);
        store.done(a, true);
        store.close().unwrap();
        drop((store, j));
        let urls: Vec<(String, u128)> = [
            "http://a.test/done",
            "http://a.test/queued",
            "http://a.test/never",
        ]
        .iter()
        .map(|u| (u.to_string(), frontier::fingerprint(u)))
        .collect();
        let got = Store::forget(dir.path(), &urls).unwrap();
        assert_eq!(
            got,
            vec![Forgot::Requeued, Forgot::AlreadyQueued, Forgot::NeverSeen]
        );
        let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
        let mut pending = Vec::new();
        store
            .for_each_pending(|e| pending.push((e.url, e.depth)))
            .unwrap();
        assert_eq!(
            pending,
            vec![
                ("http://a.test/queued".into(), 1),
                ("http://a.test/done".into(), 3)
            ]
        );
    }

    #[test]
    fn the_hook_runs_before_each_commit_and_a_failing_hook_keeps_the_batch() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &settings("0.01"), Dedup::EXACT, false, HOUR).unwrap();
        let calls = Arc::new(AtomicU64::new(0));
        let c = Arc::clone(&calls);
        store.set_before_commit(move || {
            if c.fetch_add(1, Ordering::SeqCst) == 0 {
                Err(std::io::Error::other("disk full"))
            } else {
                Ok(())
            }
        });
        admit(&*store.journal(), "http://a.test/1", 0);
        assert!(store.checkpoint().is_err());
        assert_eq!(store.stats().pending_events, 1);
        assert!(store.stats().last_error.unwrap().contains("disk full"));
        store.checkpoint().unwrap();
        assert_eq!(store.stats().pending_events, 0);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert_eq!(store.stats().checkpoints, 1);
    }

    #[test]
    fn a_failing_disk_is_retried_with_backoff_even_with_a_full_batch() {
        let dir = tempfile::tempdir().unwrap();
        let every = Duration::from_millis(20);
        let store = Store::open(dir.path(), &settings("0.01"), Dedup::Bloom, false, every).unwrap();
        let calls: Arc<Mutex<Vec<Instant>>> = Arc::default();
        let c = Arc::clone(&calls);
        store.set_before_commit(move || {
            lock(&c).push(Instant::now());
            Err(std::io::Error::other("disk full"))
        });
        for id in 1..=FLUSH_AT as u64 {
            store.done(id, true);
        }
        wait_until("4 attempts", || lock(&calls).len() >= 4);
        // Each retry waits twice as long as the last (40, 80, 160 ms): a failing disk is not
        // hammered in a loop, although the batch stays full.
        let calls = lock(&calls).clone();
        for (i, w) in calls.windows(2).take(3).enumerate() {
            let gap = w[1] - w[0];
            assert!(gap >= every * (2u32 << i), "retry {i} after {gap:?}");
        }
        assert_eq!(store.backlog(), FLUSH_AT as u64, "the batch is kept");
    }

    /// A state written before queue rows had a format byte is migrated when it is opened:
    /// its queued URLs are served as they were, and every row then has the byte.
    #[test]
    fn a_queue_without_format_bytes_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let urls = ["http://a.test/1", "http://a.test/2", "http://b.test:8080/3"];
        {
            let store =
                Store::open(dir.path(), &settings("0.01"), Dedup::Bloom, false, HOUR).unwrap();
            let j = store.journal();
            for u in urls {
                admit(&*j, u, 1);
            }
            store.close().unwrap();
        }
        // Back to the old layout: rows without the byte, no `queue_format` in `meta`.
        {
            let db = Database::open(dir.path().join(FILE_NAME)).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut queue = txn.open_table(QUEUE).unwrap();
                let rows: Vec<(u64, Vec<u8>)> = queue
                    .iter()
                    .unwrap()
                    .map(|r| {
                        let (k, v) = r.unwrap();
                        (k.value(), v.value()[1..].to_vec())
                    })
                    .collect();
                assert_eq!(rows.len(), 3);
                for (k, v) in rows {
                    queue.insert(k, v.as_slice()).unwrap();
                }
                let mut meta = txn.open_table(META).unwrap();
                meta.remove(queue_record::META_KEY).unwrap();
            }
            txn.commit().unwrap();
        }
        let store = Store::open(dir.path(), &settings("0.01"), Dedup::Bloom, false, HOUR).unwrap();
        let mut pending = Vec::new();
        store.for_each_pending(|e| pending.push(e.url)).unwrap();
        assert_eq!(pending, urls);
        store.close().unwrap();
        drop(store);
        let db = Database::open(dir.path().join(FILE_NAME)).unwrap();
        let read = db.begin_read().unwrap();
        let queue = read.open_table(QUEUE).unwrap();
        for row in queue.iter().unwrap() {
            assert_eq!(row.unwrap().1.value()[0], queue_record::FORMAT);
        }
    }
}
