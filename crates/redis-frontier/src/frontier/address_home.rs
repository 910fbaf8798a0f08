//! Politeness per address on a crawl of several partitions, the client's side (the design is
//! in `scripts/address_home.rs`): a lease's fetch asks its address group's home partition for
//! a turn; a turn is freed when the lease completes; a lease refused is given back with the
//! wait the home said, which its own partition keeps as the host's next time.

use std::time::Duration;

use frontier::{AddressKey, FrontierError, Lease};

use super::{ms, Shared};

/// Leases a turn outlives its lease by, unless freed: a live fetch's turn is freed by its
/// completion; one of a process that died frees itself after this many leases.
const SLOT_LEASES: u64 = 4;

impl Shared {
    /// A turn at address group `key` for `lease`'s fetch: whether it may go now (else it is
    /// given back, and its host waits as the home said).
    pub(super) async fn acquire_turn(
        &self,
        lease: &Lease,
        key: AddressKey,
    ) -> Result<bool, FrontierError> {
        let key = key.to_string();
        let home = self.part_of(&key);
        let p = &self.cfg.politeness;
        let mut call = self.invoke_on(home, &self.scripts.acquire);
        call.arg(key.as_str())
            .arg(lease.host())
            .arg(lease.token())
            .arg(ms(p.ip_delay))
            .arg(p.max_per_ip)
            .arg(SLOT_LEASES * ms(self.lease));
        let (go, wait): (u8, u64) = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        let id = lease.token();
        if go == 1 {
            let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
            turns.insert(id, (home, key));
        } else {
            let mut deferred = self.deferred.lock().unwrap_or_else(|e| e.into_inner());
            deferred.insert(id, wait);
        }
        Ok(go == 1)
    }

    /// Lease `id` is being completed: its turn (if it had one) is freed, and the wait its
    /// group asked for (if it was refused one) is returned, to go with the lease given back.
    pub(super) async fn end_turn(&self, id: u64) -> Option<Duration> {
        let wait = self
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        let turn = self
            .turns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        if let Some((home, key)) = turn {
            let mut call = self.invoke_on(home, &self.scripts.free);
            call.arg(key.as_str())
                .arg(id)
                .arg(SLOT_LEASES * ms(self.lease));
            let freed: Result<u8, _> = call.invoke_async(&mut self.conn.clone()).await;
            if let Err(e) = freed {
                // The turn frees itself when it expires.
                tracing::debug!(lease = id, "an address group's turn was not freed: {e}");
            }
        }
        wait.map(Duration::from_millis)
    }

    /// Lease `id` was lost (it expired and went to another process): its turn frees itself.
    pub(super) fn forget_turn(&self, id: u64) {
        self.turns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        self.deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
    }
}
