//! The frontier's [`Journal`] on the crawl state: admissions, exact lookups, done marks,
//! reschedules and back-offs go to the in-memory batch, and the next checkpoint makes them
//! durable.

use std::sync::atomic::Ordering;
use std::time::Duration;

use frontier::{Entry, Journal};

use crate::batch::{Admit, FLUSH_AT};
use crate::index::Lookup;
use crate::queue_record;
use crate::sync::lock;
use crate::writer::{unix_ms, Shared};

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

    fn rescheduled(&self, id: u64, recorded: bool, entry: &Entry) {
        if id == 0 {
            return;
        }
        let row = queue_record::encode(entry);
        let mut p = lock(&self.pending);
        p.rescheduled.push((id, recorded, row));
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
