//! Admissions that must outlive a failover (a crawl on a Redis Cluster): the links a page
//! offers are waited for on a replica of each partition's master they went to (`WAIT 1`)
//! before the page's fence answers — before its record is written —, and an offer without a
//! fence (seeds, sitemaps, a requeue, a client's URLs) before it is acknowledged.
//!
//! Why: a replica holds a prefix of what its master acknowledged (asynchronous replication),
//! so a failover loses the master's last instant. Links admitted into another master's
//! partition could be lost while the page's completion survives on its own; and links
//! admitted into the page's own partition could be lost together with the fence's answer
//! while the page's lease (older) survives — the record is written, the completion after the
//! failover finds the lease and ends it, and the links are gone. Waited for, a failover can
//! lose only completions and leases, whose URLs are fetched again (repeats, not losses). The
//! cost is one round trip to a replica per page and partition its links touch.
//!
//! How: `WAIT` counts the replicas that acknowledged the *connection's* writes so far; the
//! cluster client has one connection per node, shared by this process' calls, so a `WAIT`
//! sent to the partition's master after the admission's reply covers it (and whatever else
//! this process wrote there meanwhile). A master without a connected replica (`INFO
//! replication`, read again every few seconds) is not waited for — nothing can fail over to
//! it — and counted (`wait_skipped`). No replica acknowledging within [`WAIT_MS`] fails the
//! offer as unavailable: the engine offers the page's links again (admission is idempotent)
//! and waits again, and the page's record is not written meanwhile.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use frontier::FrontierError;

use super::Shared;

/// How long a page's fence waits for a replica.
const WAIT_MS: u64 = 1000;

/// How long a master's replica count is trusted.
const RECHECK: Duration = Duration::from_secs(5);

/// Per partition: when its master's replicas were last counted, and whether it had one.
pub(super) type ReplicaSeen = Option<(Instant, bool)>;

impl Shared {
    /// Waits until a replica of each partition in `parts` has this process' writes to it
    /// (see the module header); nothing on one Redis.
    pub(super) async fn make_durable(&self, parts: &[usize]) -> Result<(), FrontierError> {
        if !self.conn.is_cluster() || parts.is_empty() {
            return Ok(());
        }
        let waits = parts.iter().map(|p| self.wait_for_replica(*p)).collect();
        for r in super::parts::join_all(waits).await {
            r?;
        }
        Ok(())
    }

    async fn wait_for_replica(&self, p: usize) -> Result<(), FrontierError> {
        let key = format!("{}stats", self.prefix(p));
        if !self.has_replica(p, &key).await? {
            self.wait_skipped.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let acked: u64 = self
            .conn
            .clone()
            .on_node_of(&key, redis::cmd("WAIT").arg(1).arg(WAIT_MS))
            .await
            .map_err(|e| self.failed(e))?;
        if acked >= 1 {
            return Ok(());
        }
        // Counted again next time: it may have lost its replica.
        self.replicas.lock().unwrap_or_else(|e| e.into_inner())[p] = None;
        Err(FrontierError::Unavailable(format!(
            "no replica of the Redis master of partition {p} acknowledged a page's links \
             within {WAIT_MS} ms"
        )))
    }

    /// Whether partition `p`'s master has a connected replica (counted every [`RECHECK`]).
    async fn has_replica(&self, p: usize, key: &str) -> Result<bool, FrontierError> {
        let seen = self.replicas.lock().unwrap_or_else(|e| e.into_inner())[p];
        if let Some((_, has)) = seen.filter(|(at, _)| at.elapsed() < RECHECK) {
            return Ok(has);
        }
        let info: String = self
            .conn
            .clone()
            .on_node_of(key, redis::cmd("INFO").arg("replication"))
            .await
            .map_err(|e| self.failed(e))?;
        let has = crate::conn::info_field(&info, "connected_slaves")
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| n > 0);
        self.replicas.lock().unwrap_or_else(|e| e.into_inner())[p] = Some((Instant::now(), has));
        Ok(has)
    }
}
