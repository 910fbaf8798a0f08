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
//! How: `WAIT` counts the replicas that acknowledged the *connection's* writes so far, so it
//! goes in the same pipeline as the admission (`admit.rs`): the cluster client routes the
//! pipeline by the script's key and sends it, and sends it again after a redirection or a
//! lost connection, as one — the answer always covers the admission it follows. A master
//! without a replica online (`INFO replication`, read again every few seconds; a node that
//! is not a master is taken to have one) is not waited for — nothing can fail over to it —
//! and counted (`wait_skipped`). No replica acknowledging within [`WAIT_MS`]: the pipeline is
//! sent again (admission is idempotent; the client's counts are not sent twice, the resent
//! URLs count as duplicates of themselves; `wait_retried`), up to [`WAIT_TRIES`] sends — a
//! replica merely slow under load holds nothing up for long. None of them acknowledged fails
//! the offer as unavailable: the engine offers the page's links again and waits again, and
//! the page's record is not written meanwhile.

use std::time::{Duration, Instant};

use super::Shared;

/// How long a page's fence waits for a replica: a healthy one answers within a round trip;
/// short, because a waiting `WAIT` holds up this process' other calls to that master (one
/// connection per node), lease renewals among them.
pub(super) const WAIT_MS: u64 = 200;

/// How many times an admission is sent with its `WAIT` before it fails as unavailable (each
/// send holds this process' other calls to that master up for at most [`WAIT_MS`], and they
/// go between sends).
pub(super) const WAIT_TRIES: u32 = 5;

/// How long a master's replica count is trusted.
const RECHECK: Duration = Duration::from_secs(5);

/// Per partition: when its master's replicas were last counted, and whether it had one.
pub(super) type ReplicaSeen = Option<(Instant, bool)>;

impl Shared {
    /// No replica acknowledged partition `p`'s admission in time: fine if its master has
    /// none online now (a replica promoted after a failover has none: counted as not waited
    /// for), else an error (the offer is retried).
    pub(super) async fn unacked(&self, p: usize) -> redis::RedisResult<()> {
        self.replicas.lock().unwrap_or_else(|e| e.into_inner())[p] = None;
        if !self.has_replica(p).await {
            self.wait_skipped
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Ok(());
        }
        Err(redis::RedisError::from((
            redis::ErrorKind::Io,
            "no replica acknowledged a page's links in time",
            format!("partition {p}, {WAIT_MS} ms"),
        )))
    }

    /// Whether partition `p`'s master has a replica online (counted every [`RECHECK`]);
    /// when it cannot be told, yes (the `WAIT` then says).
    pub(super) async fn has_replica(&self, p: usize) -> bool {
        let seen = self.replicas.lock().unwrap_or_else(|e| e.into_inner())[p];
        if let Some((_, has)) = seen.filter(|(at, _)| at.elapsed() < RECHECK) {
            return has;
        }
        let key = format!("{}stats", self.prefix(p));
        let info: String = match self
            .conn
            .clone()
            .on_node_of(&key, redis::cmd("INFO").arg("replication"))
            .await
        {
            Ok(info) => info,
            Err(_) => return true,
        };
        let master = crate::conn::info_field(&info, "role") == Some("master");
        let online = info
            .lines()
            .filter(|l| l.starts_with("slave") && l.contains("state=online"))
            .count();
        let has = !master || online > 0;
        self.replicas.lock().unwrap_or_else(|e| e.into_inner())[p] = Some((Instant::now(), has));
        has
    }
}
