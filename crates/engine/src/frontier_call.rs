//! Calling the frontier from the workers: a failed call (a remote frontier out of reach) is
//! retried with back-off until it succeeds or the crawl stops, and what a call is handed is
//! copied for the next attempt only when a call can fail.

use std::sync::atomic::Ordering;
use std::time::Duration;

use frontier::{Frontier, FrontierError};

use crate::output;
use crate::worker::Ctx;

impl Ctx {
    /// Runs a frontier call until it succeeds, waiting with back-off (50 ms doubling to 5 s)
    /// between failures; `None` once the crawl is stopping and the call still fails. The
    /// first failure after a success and the recovery are logged once for the process (a
    /// remote frontier out of reach fails every worker's calls at once), and `status.json`
    /// says how long the frontier has been unreachable.
    pub(crate) async fn with_frontier<'a, T>(
        &'a self,
        what: &str,
        mut call: impl FnMut(&'a dyn Frontier) -> frontier::BoxFuture<'a, Result<T, FrontierError>>,
    ) -> Option<T> {
        let mut wait = Duration::from_millis(50);
        loop {
            match call(&*self.frontier).await {
                Ok(v) => {
                    let since = self.frontier_down.swap(0, Ordering::Relaxed);
                    if since > 0 {
                        let secs = output::now_unix_ms().saturating_sub(since) as f64 / 1000.0;
                        tracing::warn!(after_secs = secs, "frontier reachable again; crawling on");
                    }
                    return Some(v);
                }
                Err(e) if self.stopped() => {
                    tracing::warn!(error = %e, call = what, "frontier call failed while stopping");
                    return None;
                }
                Err(e) => {
                    let now = output::now_unix_ms().max(1);
                    let first = self
                        .frontier_down
                        .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok();
                    if first {
                        tracing::warn!(
                            error = %e,
                            call = what,
                            "frontier unavailable; the workers wait and retry with back-off"
                        );
                    } else {
                        tracing::debug!(error = %e, call = what, retry_in = ?wait, "frontier call failed");
                    }
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(5));
                }
            }
        }
    }
}

/// What a frontier call is handed on each attempt: a copy while calls can fail (a remote call
/// that failed took its arguments), the value itself otherwise — the local frontier never
/// fails, so a page's links are moved into it, not copied (one allocation per link saved).
pub(crate) struct Retained<T: Clone> {
    value: Option<T>,
    keep: bool,
}

impl<T: Clone> Retained<T> {
    pub(crate) fn new(value: T, calls_can_fail: bool) -> Self {
        Self {
            value: Some(value),
            keep: calls_can_fail,
        }
    }

    /// The value for one attempt. Only a frontier that can fail is called again, and then a
    /// copy was kept.
    pub(crate) fn take(&mut self) -> T {
        match (&self.value, self.keep) {
            (Some(v), true) => v.clone(),
            _ => self
                .value
                .take()
                .expect("a frontier that cannot fail is called once"),
        }
    }
}
