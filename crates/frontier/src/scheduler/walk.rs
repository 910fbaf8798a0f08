//! Reading the queues in place for a listing ([`crate::listing`]): a host's URLs in the
//! order they are kept (head, spilled chunks, tail), nothing taken or moved.

use std::sync::Arc;

use super::Scheduler;
use crate::entry::Entry;

impl Scheduler {
    /// Every host's name, sorted.
    pub(crate) fn host_names(&self) -> Vec<Arc<str>> {
        let mut names: Vec<Arc<str>> = self.ids.keys().cloned().collect();
        names.sort_unstable();
        names
    }

    /// URLs queued for `host` (0 for a host it does not know).
    pub(crate) fn queue_len(&self, host: &str) -> u64 {
        self.ids.get(host).map_or(0, |&id| {
            let q = &self.hosts[id as usize];
            (q.head.len() + q.tail.len()) as u64 + q.spilled
        })
    }

    /// Calls `f` with each URL queued for `host`, in the order they are kept, until it
    /// answers `false`. Spilled chunks are read from disk and left there (one that cannot be
    /// read is passed over: it is lost to the crawl already).
    pub(crate) fn walk_queue(&mut self, host: &str, mut f: impl FnMut(&Entry) -> bool) {
        let Some(&id) = self.ids.get(host) else {
            return;
        };
        let q = &self.hosts[id as usize];
        if !q.head.iter().all(&mut f) {
            return;
        }
        let chunks: Vec<_> = q.chunks.iter().copied().collect();
        for chunk in chunks {
            if let Ok(entries) = self.spill.read(chunk) {
                if !entries.iter().all(&mut f) {
                    return;
                }
            }
        }
        self.hosts[id as usize].tail.iter().all(f);
    }
}
