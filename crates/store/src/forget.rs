//! `crawler forget`: queue URLs of a stopped crawl again, in its state file.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use frontier::Entry;
use redb::ReadableTable;

use crate::schema::{open_db, read_u64, OrDb, ADMITTED, META, QUEUE};
use crate::{queue_record, Forgot, Store, StoreError, FILE_NAME};

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
            let wanted: HashSet<u128> = urls.iter().map(|(_, fp)| *fp).collect();
            let mut depths: HashMap<u128, u32> = HashMap::new();
            let log = txn.open_table(ADMITTED).or_db(&path)?;
            for row in log.iter().or_db(&path)? {
                let (_, v) = row.or_db(&path)?;
                let (fp, depth) = v.value();
                if wanted.contains(&fp) {
                    depths.insert(fp, depth);
                }
            }
            drop(log);
            let mut queue = txn.open_table(QUEUE).or_db(&path)?;
            let mut meta = txn.open_table(META).or_db(&path)?;
            // Only the queued URLs asked about are kept (the queue may hold millions).
            let mut queued: HashSet<String> = HashSet::new();
            for row in queue.iter().or_db(&path)? {
                let (_, v) = row.or_db(&path)?;
                if let Some(e) = queue_record::decode(v.value()) {
                    let url = e.url;
                    if wanted.contains(&frontier::fingerprint(&url)) {
                        queued.insert(url);
                    }
                }
            }
            let mut next = read_u64(&meta, "next_id").or_db(&path)?.max(1);
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
}
