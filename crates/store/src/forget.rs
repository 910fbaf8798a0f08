//! Forgetting URLs: queue them to be fetched again. `crawler forget` does it on a stopped
//! crawl's state file ([`Store::forget`]); a running crawl asks [`Store::forget_lookup`] what
//! each URL is (done, still queued, never seen) and queues the done ones through its frontier.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use frontier::Entry;
use redb::{ReadableDatabase, ReadableTable};

use crate::schema::{migrate_queue, open_db, read_u64, OrDb, ADMITTED, META, QUEUE};
use crate::{queue_record, Forgot, Store, StoreError, FILE_NAME};

/// What the state says of the URLs asked about: the depth each admitted fingerprint was
/// admitted at, and which of the URLs are queued (not done).
struct Known {
    depths: HashMap<u128, u32>,
    queued: HashSet<String>,
}

/// Reads `admitted` and `queue` for `urls` (only those are kept: the queue may hold millions).
fn lookup(
    admitted: &impl ReadableTable<u64, (u128, u32)>,
    queue: &impl ReadableTable<u64, &'static [u8]>,
    urls: &[(String, u128)],
    path: &Path,
) -> Result<Known, StoreError> {
    let wanted: HashSet<u128> = urls.iter().map(|(_, fp)| *fp).collect();
    let mut depths = HashMap::new();
    for row in admitted.iter().or_db(path)? {
        let (_, v) = row.or_db(path)?;
        let (fp, depth) = v.value();
        if wanted.contains(&fp) {
            depths.insert(fp, depth);
        }
    }
    let mut queued = HashSet::new();
    for row in queue.iter().or_db(path)? {
        let (_, v) = row.or_db(path)?;
        if let Some(e) = queue_record::decode(v.value()) {
            if wanted.contains(&frontier::fingerprint(&e.url)) {
                queued.insert(e.url);
            }
        }
    }
    Ok(Known { depths, queued })
}

/// What a running crawl's state says of one URL to forget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveForget {
    /// Done: queue it again at this depth.
    Done {
        /// The link depth it was admitted at.
        depth: u32,
    },
    /// Still queued or in flight: it will be fetched anyway.
    Queued,
    /// This crawl never admitted it.
    NeverSeen,
}

impl Store {
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
        let txn = db.begin_write().or_db(&path)?;
        let mut results = Vec::with_capacity(urls.len());
        {
            let mut meta = txn.open_table(META).or_db(&path)?;
            crate::schema::refuse_newer(&meta, dir, &path)?;
            let mut queue = txn.open_table(QUEUE).or_db(&path)?;
            if meta.get(queue_record::META_KEY).or_db(&path)?.is_none() {
                // Written before rows had their format byte: migrated first, as a resume
                // would, so that the rows added here are not read as old ones.
                migrate_queue(&mut queue).map_err(|e| StoreError::Db {
                    path: path.clone(),
                    message: e
                        .map_or_else(|| "a queued entry is corrupt".into(), |e| e.to_string()),
                })?;
            }
            // The rows added here are of this build's format.
            meta.insert(queue_record::META_KEY, [queue_record::FORMAT].as_slice())
                .or_db(&path)?;
            let log = txn.open_table(ADMITTED).or_db(&path)?;
            let Known { depths, mut queued } = lookup(&log, &queue, urls, &path)?;
            drop(log);
            let mut next = read_u64(&meta, "next_id").or_db(&path)?.max(1);
            for (url, fp) in urls {
                let depth = depths.get(fp).copied();
                let result = match depth {
                    None => Forgot::NeverSeen,
                    Some(_) if queued.contains(url) => Forgot::AlreadyQueued,
                    Some(depth) => {
                        let mut entry = Entry::new(url.clone(), depth, None);
                        entry.id = next;
                        entry.created = Entry::now_secs();
                        next = next.saturating_add(1);
                        let bytes = queue_record::encode(&entry);
                        queue.insert(entry.id, bytes.as_slice()).or_db(&path)?;
                        queued.insert(url.clone());
                        Forgot::Requeued
                    }
                };
                results.push(result);
            }
            meta.insert("next_id", next.to_le_bytes().as_slice())
                .or_db(&path)?;
        }
        txn.commit().or_db(&path)?;
        Ok(results)
    }

    /// For a running crawl: commits what is pending (so "done" and "queued" are current),
    /// then says of each URL whether it is done, still queued, or never seen. Queueing the
    /// done ones again is the frontier's (it journals them as new admissions).
    pub fn forget_lookup(&self, urls: &[(String, u128)]) -> Result<Vec<LiveForget>, StoreError> {
        self.checkpoint()?;
        let s = &self.shared;
        let read = s.db.begin_read().or_db(&s.path)?;
        let admitted = read.open_table(ADMITTED).or_db(&s.path)?;
        let queue = read.open_table(QUEUE).or_db(&s.path)?;
        let known = lookup(&admitted, &queue, urls, &s.path)?;
        Ok(urls
            .iter()
            .map(|(url, fp)| match known.depths.get(fp) {
                None => LiveForget::NeverSeen,
                Some(_) if known.queued.contains(url) => LiveForget::Queued,
                Some(&depth) => LiveForget::Done { depth },
            })
            .collect())
    }
}
