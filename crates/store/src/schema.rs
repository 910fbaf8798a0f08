//! The state file's layout: its tables, opening the database, the settings a resume must
//! share with the run that wrote the state, reading counters from `meta`, and migrations of
//! rows written by older versions.

use std::collections::BTreeMap;
use std::path::Path;

use redb::{Database, ReadableTable, TableDefinition};

use crate::{queue_record, Change, StoreError};

pub(crate) const SEEN: TableDefinition<'_, u128, u32> = TableDefinition::new("seen");
pub(crate) const ADMITTED: TableDefinition<'_, u64, (u128, u32)> = TableDefinition::new("admitted");
pub(crate) const QUEUE: TableDefinition<'_, u64, &[u8]> = TableDefinition::new("queue");
pub(crate) const HOSTS: TableDefinition<'_, &str, u64> = TableDefinition::new("hosts");
/// host → (backoff in ms, not before: Unix time in ms)
pub(crate) const BACKOFF: TableDefinition<'_, &str, (u64, u64)> = TableDefinition::new("backoff");
pub(crate) const ROBOTS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("robots");
pub(crate) const META: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("meta");
pub(crate) const SETTING_PREFIX: &str = "setting.";

/// Rewrites every row of a queue written before the format byte (see [`queue_record`]), a
/// batch of keys at a time. `Err(None)`: a row is not an entry.
pub(crate) fn migrate_queue(
    queue: &mut redb::Table<'_, u64, &[u8]>,
) -> Result<u64, Option<redb::Error>> {
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

/// `?` for redb's errors: a [`StoreError::Db`] naming the state file.
pub(crate) trait OrDb<T> {
    fn or_db(self, path: &Path) -> Result<T, StoreError>;
}

impl<T, E: Into<redb::Error>> OrDb<T> for Result<T, E> {
    fn or_db(self, path: &Path) -> Result<T, StoreError> {
        self.map_err(|e| StoreError::Db {
            path: path.to_path_buf(),
            message: e.into().to_string(),
        })
    }
}

/// Refuses a state whose queue rows a newer build wrote (`meta`'s format mark above
/// [`queue_record::FORMAT`]): reading on would drop rows it cannot decode, and writing would lower the mark.
pub(crate) fn refuse_newer(
    meta: &impl redb::ReadableTable<&'static str, &'static [u8]>,
    dir: &std::path::Path,
    path: &std::path::Path,
) -> Result<(), crate::StoreError> {
    let written = meta
        .get(queue_record::META_KEY)
        .or_db(path)?
        .and_then(|v| v.value().first().copied());
    match written {
        Some(written) if written > queue_record::FORMAT => Err(crate::StoreError::Newer {
            dir: dir.to_path_buf(),
            written,
            reads: queue_record::FORMAT,
        }),
        _ => Ok(()),
    }
}

pub(crate) fn read_u64(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
    key: &str,
) -> Result<u64, redb::Error> {
    Ok(meta
        .get(key)?
        .and_then(|v| <[u8; 8]>::try_from(v.value()).ok())
        .map_or(0, u64::from_le_bytes))
}

/// redb's page cache. The state mostly appends (admission log, queue): the upper levels of the
/// trees suffice. Exact mode's random lookups go to the in-memory index; only what does not
/// fit there reads the `seen` table. (redb's default, 1 GiB, would dominate the crawler's RSS.)
pub(crate) const CACHE_BYTES: usize = 16 << 20;

pub(crate) fn open_db(path: &Path) -> Result<Database, StoreError> {
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

pub(crate) fn diff(
    stored: &BTreeMap<String, String>,
    now: &BTreeMap<String, String>,
) -> Vec<Change> {
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
