//! How the frontier has been answering: each kind of failure is an episode, logged once when
//! it begins and once when it ends, and shown while it lasts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use frontier::FrontierError;

/// How the frontier has been answering: since when calls fail (0: they succeed), why, and
/// how many failed of each kind.
#[derive(Debug, Default)]
pub(crate) struct FrontierHealth {
    /// Since when (ms since the Unix epoch) calls fail; 0 while they succeed.
    down_since: AtomicU64,
    /// The current failure: its kind and message.
    problem: Mutex<Option<(&'static str, String)>>,
    /// Failed calls: unavailable, full, failed.
    failures: [AtomicU64; 3],
}

impl FrontierHealth {
    /// Seconds the frontier has been failing, if it is.
    pub(crate) fn unavailable_secs(&self) -> Option<f64> {
        let since = self.down_since.load(Ordering::Relaxed);
        (since > 0).then(|| crate::clock::now_unix_ms().saturating_sub(since) as f64 / 1000.0)
    }

    /// The current failure, as `kind: message` (`full: Redis is out of memory …`).
    pub(crate) fn problem(&self) -> Option<String> {
        let p = self.problem.lock().unwrap_or_else(|e| e.into_inner());
        p.as_ref().map(|(kind, why)| format!("{kind}: {why}"))
    }

    /// Failed calls by kind (`unavailable`, `full`, `failed`).
    pub(crate) fn failures(&self) -> [(&'static str, u64); 3] {
        let n = |i: usize| self.failures[i].load(Ordering::Relaxed);
        [("unavailable", n(0)), ("full", n(1)), ("failed", n(2))]
    }

    /// A call succeeded: an episode of failures ends (and is logged so).
    pub(crate) fn answered(&self) {
        let since = self.down_since.swap(0, Ordering::Relaxed);
        if since > 0 {
            let secs = crate::clock::now_unix_ms().saturating_sub(since) as f64 / 1000.0;
            let was = self
                .problem
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .map_or("unavailable", |(kind, _)| kind);
            tracing::warn!(
                after_secs = secs,
                was,
                "frontier reachable again; crawling on"
            );
        }
    }

    /// A call failed with `e`: counted, and logged when an episode of its kind begins.
    pub(crate) fn failed(&self, e: &FrontierError) -> bool {
        let i = match e {
            FrontierError::Full(_) => 1,
            FrontierError::Failed(_) => 2,
            _ => 0,
        };
        self.failures[i].fetch_add(1, Ordering::Relaxed);
        let now = crate::clock::now_unix_ms().max(1);
        let _ = self
            .down_since
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
        let mut p = self.problem.lock().unwrap_or_else(|e| e.into_inner());
        let new = p.as_ref().is_none_or(|(kind, _)| *kind != e.kind());
        let message = match e {
            FrontierError::Unavailable(m) | FrontierError::Full(m) | FrontierError::Failed(m) => {
                m.clone()
            }
            other => other.to_string(),
        };
        *p = Some((e.kind(), message));
        new
    }
}
