//! The external leases a running crawl has out: a table that hides its lock, shared by the
//! API's lease and completion calls and the reaper ([`crate::leases`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use frontier::Lease;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

#[derive(Debug)]
struct Held {
    lease: Lease,
    /// The fetch slot the lease takes while it is out (`crawl.concurrency`).
    _slot: OwnedSemaphorePermit,
    expires: Instant,
}

/// The leases out, and no later than the earliest of their expiries: a look for expired
/// leases before then finds none without reading them all (every GetURLs looks).
#[derive(Debug)]
struct Table {
    held: HashMap<u64, Held>,
    earliest: Option<Instant>,
}

/// The external leases of a running crawl.
#[derive(Debug)]
pub(crate) struct Leases {
    held: Mutex<Table>,
    next_id: AtomicU64,
    /// Leases that expired and were served again.
    pub(crate) expired: AtomicU64,
}

impl Default for Leases {
    fn default() -> Self {
        // Ids start from the clock, so an id of an earlier process is not taken for a new
        // lease after a restart.
        let start = crate::clock::now_unix_ms().saturating_mul(1000);
        Self {
            held: Mutex::new(Table {
                held: HashMap::new(),
                earliest: None,
            }),
            next_id: AtomicU64::new(start),
            expired: AtomicU64::new(0),
        }
    }
}

impl Leases {
    fn held(&self) -> std::sync::MutexGuard<'_, Table> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds `lease`, and the fetch slot it takes, until `expires`; returns its id.
    pub(crate) fn hold(&self, lease: Lease, slot: OwnedSemaphorePermit, expires: Instant) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let held = Held {
            lease,
            _slot: slot,
            expires,
        };
        let mut table = self.held();
        table.earliest = Some(table.earliest.map_or(expires, |e| e.min(expires)));
        table.held.insert(id, held);
        id
    }

    /// Takes lease `id` back (`None`: expired, completed already, or never handed out).
    pub(crate) fn take(&self, id: u64) -> Option<Lease> {
        self.held().held.remove(&id).map(|h| h.lease)
    }

    /// Takes back every lease expired at `now` (counted as expired), or with `all` every
    /// lease still out (a stop: not counted).
    pub(crate) fn take_expired(&self, now: Instant, all: bool) -> Vec<Lease> {
        let mut table = self.held();
        if !all && table.earliest.is_none_or(|e| e > now) {
            return Vec::new();
        }
        let ids: Vec<u64> = table
            .held
            .iter()
            .filter(|(_, h)| all || h.expires <= now)
            .map(|(id, _)| *id)
            .collect();
        let taken: Vec<Lease> = ids
            .into_iter()
            .filter_map(|id| table.held.remove(&id))
            .map(|h| h.lease)
            .collect();
        table.earliest = table.held.values().map(|h| h.expires).min();
        if !all {
            self.expired
                .fetch_add(taken.len() as u64, Ordering::Relaxed);
        }
        taken
    }

    /// The queue key and entry of every lease out, by key then URL (a listing's first part).
    pub(crate) fn entries(&self) -> Vec<(String, frontier::Entry)> {
        let mut out: Vec<(String, frontier::Entry)> = self
            .held()
            .held
            .values()
            .map(|h| (h.lease.host().to_owned(), h.lease.entry().clone()))
            .collect();
        out.sort_by(|a, b| (&a.0, &a.1.url).cmp(&(&b.0, &b.1.url)));
        out
    }

    /// The queue key and entry of the lease out for the canonical URL `url`, if any.
    pub(crate) fn find(&self, url: &str) -> Option<(String, frontier::Entry)> {
        self.held()
            .held
            .values()
            .find(|h| h.lease.entry().url == url)
            .map(|h| (h.lease.host().to_owned(), h.lease.entry().clone()))
    }

    /// Leases out now.
    pub(crate) fn out(&self) -> u64 {
        self.held().held.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use frontier::Entry;
    use tokio::sync::Semaphore;

    use super::*;

    fn lease(n: u32) -> Lease {
        Lease::new(
            Entry::new(format!("http://a.test/{n}"), 0, None),
            "a.test".into(),
            0,
        )
    }

    #[test]
    fn expired_leases_are_taken_in_their_time_whatever_was_taken_before() {
        let slots = Arc::new(Semaphore::new(3));
        let slot = || Arc::clone(&slots).try_acquire_owned().unwrap();
        let t = Instant::now();
        let s = Duration::from_secs(1);
        let table = Leases::default();
        table.hold(lease(2), slot(), t + 3 * s);
        let first = table.hold(lease(1), slot(), t + s);
        table.hold(lease(3), slot(), t + 2 * s);
        assert!(table.take_expired(t, false).is_empty(), "none yet");
        // The earliest taken by its client: the next one expires in its own time.
        assert!(table.take(first).is_some());
        assert!(table.take_expired(t + s, false).is_empty());
        let urls =
            |v: Vec<Lease>| -> Vec<String> { v.iter().map(|l| l.entry().url.clone()).collect() };
        assert_eq!(
            urls(table.take_expired(t + 2 * s, false)),
            ["http://a.test/3"]
        );
        assert_eq!(
            urls(table.take_expired(t + 3 * s, false)),
            ["http://a.test/2"]
        );
        assert_eq!((table.out(), table.expired.load(Ordering::Relaxed)), (0, 2));
        // After a stop took every lease, a new one expires in its time.
        table.hold(lease(4), slot(), t + 5 * s);
        assert_eq!(table.take_expired(t, true).len(), 1);
        table.hold(lease(5), slot(), t + 4 * s);
        assert!(table.take_expired(t + 3 * s, false).is_empty());
        assert_eq!(
            urls(table.take_expired(t + 4 * s, false)),
            ["http://a.test/5"]
        );
    }
}
