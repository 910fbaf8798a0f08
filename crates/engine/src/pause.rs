//! Fetch workers waiting for the crawl state's checkpoints: what keeps a slow or stalled
//! disk from growing memory without bound.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use store::Store;

use crate::clock::now_unix_ms;

/// Uncommitted admissions and completions at which fetching pauses. Each is about 150 bytes
/// (the queued entry, its host), so this bounds the batch near 75 MB: checkpoints that fall
/// behind — a slow or stalled disk — must not grow memory without bound.
pub const BACKLOG_LIMIT: u64 = 500_000;

/// Fetch workers waiting for the crawl state's checkpoints to catch up.
#[derive(Debug, Default)]
pub struct Pause {
    /// Workers waiting now.
    waiting: AtomicU64,
    /// When the current pause began (Unix ms; 0: none).
    since_ms: AtomicU64,
    /// The first pause was logged.
    warned: AtomicBool,
}

impl Pause {
    /// Waits while `store` holds `limit` or more uncommitted events, until the checkpoints
    /// bring it under half of that (or `stopped`). Returns whether it waited.
    pub async fn wait(&self, store: &Store, limit: u64, stopped: impl Fn() -> bool) -> bool {
        if store.backlog() < limit {
            return false;
        }
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                backlog = store.backlog(),
                "checkpoints are falling behind (a slow disk?): fetching pauses until the crawl \
                 state catches up"
            );
        }
        if self.waiting.fetch_add(1, Ordering::Relaxed) == 0 {
            self.since_ms.store(now_unix_ms(), Ordering::Relaxed);
        }
        while store.backlog() >= limit / 2 && !stopped() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if self.waiting.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.since_ms.store(0, Ordering::Relaxed);
        }
        true
    }

    /// Whether a worker is waiting now.
    pub fn active(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) > 0
    }

    /// How long workers have been waiting, in seconds (0: none is).
    pub fn secs(&self) -> u64 {
        if !self.active() {
            return 0;
        }
        let now = now_unix_ms();
        // Workers entering and leaving at once may have cleared the start: restart it.
        let since = self
            .since_ms
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed)
            .unwrap_or_else(|since| since);
        now.saturating_sub(since) / 1000
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn fetching_waits_for_checkpoints_that_fall_behind() {
        let dir = tempfile::tempdir().unwrap();
        let hour = Duration::from_secs(3600);
        let store = Arc::new(
            Store::open(
                dir.path(),
                &BTreeMap::new(),
                store::Dedup::Bloom,
                false,
                hour,
            )
            .unwrap(),
        );
        for id in 1..=100 {
            store.done(id, true);
        }
        let pause = Arc::new(Pause::default());
        assert!(!pause.wait(&store, 101, || false).await);
        let waiter = {
            let (store, pause) = (Arc::clone(&store), Arc::clone(&pause));
            tokio::spawn(async move { pause.wait(&store, 100, || false).await })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiter.is_finished(), "no checkpoint yet: still waiting");
        assert!(pause.active());
        store.checkpoint().unwrap();
        let waited = tokio::time::timeout(Duration::from_secs(5), waiter).await;
        assert!(
            waited.unwrap().unwrap(),
            "resumed once the backlog was committed"
        );
        assert!(!pause.active() && pause.secs() == 0);
        // A stop ends the wait whatever the backlog.
        for id in 101..=300 {
            store.done(id, true);
        }
        let stopped =
            tokio::time::timeout(Duration::from_secs(5), pause.wait(&store, 100, || true));
        assert!(stopped.await.unwrap());
    }
}
