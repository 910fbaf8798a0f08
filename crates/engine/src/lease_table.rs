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

/// The external leases of a running crawl.
#[derive(Debug)]
pub(crate) struct Leases {
    held: Mutex<HashMap<u64, Held>>,
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
            held: Mutex::default(),
            next_id: AtomicU64::new(start),
            expired: AtomicU64::new(0),
        }
    }
}

impl Leases {
    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Held>> {
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
        self.held().insert(id, held);
        id
    }

    /// Takes lease `id` back (`None`: expired, completed already, or never handed out).
    pub(crate) fn take(&self, id: u64) -> Option<Lease> {
        self.held().remove(&id).map(|h| h.lease)
    }

    /// Takes back every lease expired at `now` (counted as expired), or with `all` every
    /// lease still out (a stop: not counted).
    pub(crate) fn take_expired(&self, now: Instant, all: bool) -> Vec<Lease> {
        let mut held = self.held();
        let ids: Vec<u64> = held
            .iter()
            .filter(|(_, h)| all || h.expires <= now)
            .map(|(id, _)| *id)
            .collect();
        let taken: Vec<Lease> = ids
            .into_iter()
            .filter_map(|id| held.remove(&id))
            .map(|h| h.lease)
            .collect();
        if !all {
            self.expired
                .fetch_add(taken.len() as u64, Ordering::Relaxed);
        }
        taken
    }

    /// Leases out now.
    pub(crate) fn out(&self) -> u64 {
        self.held().len() as u64
    }
}
