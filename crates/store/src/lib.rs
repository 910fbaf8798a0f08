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

mod batch;
mod exact;
mod forget;
mod index;
mod journal;
mod queue_record;
mod recent_seen;
mod schema;
mod sync;
#[cfg(test)]
mod tests;
mod writer;

pub use forget::LiveForget;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use frontier::{Entry, Journal};
use index::ExactIndex;

use batch::Pending;
use recent_seen::RecentSeen;
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use schema::{
    diff, migrate_queue, open_db, read_u64, OrDb, ADMITTED, BACKOFF, HOSTS, META, QUEUE, ROBOTS,
    SEEN, SETTING_PREFIX,
};
use sync::lock;
use writer::{writer_loop, Shared};

/// The database file inside the state directory.
pub const FILE_NAME: &str = "state.redb";
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
    /// The state was written by a newer crawler, in a queue format this one cannot read.
    #[error(
        "cannot resume from {}: its queue was written in format {written} by a newer crawler; \
         this one reads up to format {reads} (run the newer crawler, or --fresh to start over)",
        .dir.display()
    )]
    Newer {
        /// The state directory.
        dir: PathBuf,
        /// The format of its queue rows.
        written: u8,
        /// The newest format this build reads.
        reads: u8,
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
    /// Time those checkpoints took, output sync included, in microseconds.
    pub checkpoint_micros: u64,
    /// The last committed checkpoint's time, in microseconds.
    pub last_checkpoint_micros: u64,
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
            recent: RecentSeen::new(exact),
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
            next_id: AtomicU64::new(1),
            snapshot: Mutex::new(None),
            before_commit: Mutex::new(None),
            output_mark: Mutex::new(None),
            commit: Mutex::new(()),
            closing: AtomicBool::new(false),
            checkpoints: AtomicU64::new(0),
            checkpoint_micros: AtomicU64::new(0),
            last_checkpoint_micros: AtomicU64::new(0),
            last_error: Mutex::new(None),
            failures: AtomicU64::new(0),
            committing: AtomicU64::new(0),
        };
        let mut resumed = false;
        {
            let txn = shared.db.begin_write().or_db(&path)?;
            if fresh {
                txn.delete_table(SEEN).or_db(&path)?;
                txn.delete_table(ADMITTED).or_db(&path)?;
                txn.delete_table(QUEUE).or_db(&path)?;
                txn.delete_table(HOSTS).or_db(&path)?;
                txn.delete_table(BACKOFF).or_db(&path)?;
                txn.delete_table(ROBOTS).or_db(&path)?;
                txn.delete_table(META).or_db(&path)?;
            }
            {
                let mut meta = txn.open_table(META).or_db(&path)?;
                let stored: BTreeMap<String, String> = meta
                    .range::<&str>(SETTING_PREFIX..)
                    .or_db(&path)?
                    .filter_map(Result::ok)
                    .filter_map(|(k, v)| {
                        let key = k.value().strip_prefix(SETTING_PREFIX)?.to_owned();
                        Some((key, String::from_utf8_lossy(v.value()).into_owned()))
                    })
                    .collect();
                let initialised = meta.get("next_id").or_db(&path)?.is_some();
                if initialised {
                    resumed = true;
                    let changes = diff(&stored, settings);
                    if !changes.is_empty() {
                        return Err(StoreError::Incompatible {
                            dir: dir.to_path_buf(),
                            changes,
                        });
                    }
                    crate::schema::refuse_newer(&meta, dir, &path)?;
                    shared.next_id.store(
                        read_u64(&meta, "next_id").or_db(&path)?.max(1),
                        Ordering::Relaxed,
                    );
                    if meta.get(queue_record::META_KEY).or_db(&path)?.is_none() {
                        let mut queue = txn.open_table(QUEUE).or_db(&path)?;
                        let n = migrate_queue(&mut queue).map_err(|x| match x {
                            Some(x) => shared.db_err(x),
                            None => shared.db_err("a queued entry is corrupt"),
                        })?;
                        tracing::info!(rows = n, "queue rows given their format byte");
                    }
                } else {
                    for (k, v) in settings {
                        meta.insert(format!("{SETTING_PREFIX}{k}").as_str(), v.as_bytes())
                            .or_db(&path)?;
                    }
                    meta.insert("next_id", 1u64.to_le_bytes().as_slice())
                        .or_db(&path)?;
                }
                meta.insert(queue_record::META_KEY, [queue_record::FORMAT].as_slice())
                    .or_db(&path)?;
                txn.open_table(SEEN).or_db(&path)?;
                txn.open_table(ADMITTED).or_db(&path)?;
                txn.open_table(QUEUE).or_db(&path)?;
                txn.open_table(HOSTS).or_db(&path)?;
                txn.open_table(BACKOFF).or_db(&path)?;
                txn.open_table(ROBOTS).or_db(&path)?;
            }
            txn.commit().or_db(&path)?;
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

    /// Runs `hook` at the start of every checkpoint, before it takes the batch, and commits
    /// what it returns with the batch: a position in the output before which every record's
    /// completion is in this checkpoint or an earlier one (the caller's encoding). A resume
    /// reads the last one committed ([`Store::output_mark`]) to know where the output may
    /// hold records the state does not count as done.
    pub fn set_output_mark(&self, hook: impl FnMut() -> Vec<u8> + Send + 'static) {
        *lock(&self.shared.output_mark) = Some(Box::new(hook));
    }

    /// The output mark of the last checkpoint that had one.
    pub fn output_mark(&self) -> Result<Option<Vec<u8>>, StoreError> {
        let s = &self.shared;
        let read = s.db.begin_read().or_db(&s.path)?;
        let meta = read.open_table(META).or_db(&s.path)?;
        let mark = meta.get(writer::OUTPUT_MARK).or_db(&s.path)?;
        Ok(mark.map(|v| v.value().to_vec()))
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
        let read = s.db.begin_read().or_db(&s.path)?;
        let table = read.open_table(ADMITTED).or_db(&s.path)?;
        let mut n = 0;
        for row in table.iter().or_db(&s.path)? {
            let (_, v) = row.or_db(&s.path)?;
            f(v.value().0);
            n += 1;
        }
        Ok(n)
    }

    /// Calls `f` with every admitted URL not yet done, in admission order.
    pub fn for_each_pending(&self, mut f: impl FnMut(Entry)) -> Result<u64, StoreError> {
        let s = &self.shared;
        let read = s.db.begin_read().or_db(&s.path)?;
        let table = read.open_table(QUEUE).or_db(&s.path)?;
        let mut n = 0;
        for row in table.iter().or_db(&s.path)? {
            let (_, v) = row.or_db(&s.path)?;
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
        let read = s.db.begin_read().or_db(&s.path)?;
        let table = read.open_table(table).or_db(&s.path)?;
        let mut out = Vec::new();
        for row in table.iter().or_db(&s.path)? {
            let (k, v) = row.or_db(&s.path)?;
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
        let read = s.db.begin_read().or_db(&s.path)?;
        let meta = read.open_table(META).or_db(&s.path)?;
        read_u64(&meta, "pages").or_db(&s.path)
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
            checkpoint_micros: self.shared.checkpoint_micros.load(Ordering::Relaxed),
            last_checkpoint_micros: self.shared.last_checkpoint_micros.load(Ordering::Relaxed),
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
}

impl Drop for Store {
    fn drop(&mut self) {
        // Without `close`, like a crash minus the kill: the writer stops, nothing more is
        // committed.
        self.stop_writer();
    }
}
