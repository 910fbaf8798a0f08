//! [`FrontierClient`]: the frontier as the crawl's tasks call it. A failed call (a remote
//! frontier out of reach, or full) is retried with back-off until it succeeds or the crawl
//! stops; one that retrying cannot fix stops the crawl. What a call is handed is copied for
//! the next attempt only when a call can fail.
//!
//! Each kind of failure is its own episode, logged once when it begins and once when it
//! ends, and shown while it lasts (`status.json`'s `frontier_error` and
//! `frontier_unavailable_secs`, `/metrics`, the dashboard). A cheap-clone handle.
//!
//! A crawl being deleted is **retired** ([`FrontierClient::retire`]): every call from then on
//! is refused, and the retirement waits for the calls under way, so that once it returns
//! nothing of this process touches the frontier's data (which is then removed).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use frontier::{Frontier, FrontierError};

use crate::frontier_health::FrontierHealth;
use crate::run::Run;
use crate::stop::StopReason;

/// The frontier, its health and the run it stops (see the module header).
#[derive(Debug, Clone)]
pub(crate) struct FrontierClient {
    frontier: Arc<dyn Frontier>,
    health: Arc<FrontierHealth>,
    run: Run,
    gate: Arc<Gate>,
}

/// The calls under way, and whether the crawl is retired.
#[derive(Debug, Default)]
struct Gate {
    retired: AtomicBool,
    in_flight: AtomicUsize,
    idle: tokio::sync::Notify,
}

/// One call under way (see [`Gate::enter`]).
struct Pass<'a>(&'a Gate);

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Gate {
    /// A pass for one call, `None` once the crawl is retired. (Counted before the check, so
    /// that [`FrontierClient::retire`] either sees the call or the call sees the retirement.)
    fn enter(&self) -> Option<Pass<'_>> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let pass = Pass(self);
        (!self.retired.load(Ordering::SeqCst)).then_some(pass)
    }
}

/// The answer to a call after the crawl was retired.
fn retired() -> FrontierError {
    FrontierError::Unavailable("the crawl is deleted".to_owned())
}

impl FrontierClient {
    pub(crate) fn new(frontier: Arc<dyn Frontier>, run: Run) -> Self {
        Self {
            frontier,
            health: Arc::default(),
            run,
            gate: Arc::default(),
        }
    }

    /// Refuses every call from now on and waits for the calls under way to end.
    pub(crate) async fn retire(&self) {
        self.gate.retired.store(true, Ordering::SeqCst);
        loop {
            let idle = self.gate.idle.notified();
            if self.gate.in_flight.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }

    /// Whether a call can fail (a frontier across a network): callers keep what they hand
    /// it for a retry, and records are fenced.
    pub(crate) fn calls_can_fail(&self) -> bool {
        self.frontier.calls_can_fail()
    }

    /// Whether the frontier paces hosts by address (politeness per address).
    pub(crate) fn groups_by_address(&self) -> bool {
        self.frontier.groups_by_address()
    }

    /// How the frontier has been answering.
    pub(crate) fn health(&self) -> &FrontierHealth {
        &self.health
    }

    /// The frontier's counters, or why it cannot answer now.
    pub(crate) async fn try_stats(&self) -> Result<frontier::Stats, FrontierError> {
        let Some(_pass) = self.gate.enter() else {
            return Err(retired());
        };
        self.frontier.stats().await
    }

    /// The frontier's counters; empty ones (and a warning) when the frontier cannot answer.
    pub(crate) async fn stats(&self) -> frontier::Stats {
        let Some(_pass) = self.gate.enter() else {
            return frontier::Stats::default();
        };
        self.frontier.stats().await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "frontier statistics unavailable");
            frontier::Stats::default()
        })
    }

    /// Runs a frontier call until it succeeds, waiting with back-off (50 ms doubling to 5 s)
    /// between retryable failures; `None` once the crawl is stopping and the call still
    /// fails, or when the failure cannot be retried (the crawl then stops, with
    /// [`StopReason::FrontierError`]).
    pub(crate) async fn with_frontier<'a, T>(
        &'a self,
        what: &str,
        call: impl FnMut(&'a dyn Frontier) -> frontier::BoxFuture<'a, Result<T, FrontierError>>,
    ) -> Option<T> {
        self.call_frontier(what, true, call).await
    }

    /// As [`with_frontier`](Self::with_frontier), for a call that only reads (the hosts
    /// listing): its success does not end an episode of failures — a full Redis still
    /// answers reads, and refuses every change.
    pub(crate) async fn read_frontier<'a, T>(
        &'a self,
        what: &str,
        call: impl FnMut(&'a dyn Frontier) -> frontier::BoxFuture<'a, Result<T, FrontierError>>,
    ) -> Option<T> {
        self.call_frontier(what, false, call).await
    }

    async fn call_frontier<'a, T>(
        &'a self,
        what: &str,
        changes: bool,
        mut call: impl FnMut(&'a dyn Frontier) -> frontier::BoxFuture<'a, Result<T, FrontierError>>,
    ) -> Option<T> {
        let _pass = self.gate.enter()?;
        let mut wait = Duration::from_millis(50);
        loop {
            match call(&*self.frontier).await {
                Ok(v) => {
                    if changes {
                        self.health.answered();
                    }
                    return Some(v);
                }
                Err(e) => {
                    let first = self.health.failed(&e);
                    if !e.is_retryable() {
                        if first {
                            tracing::error!(error = %e, call = what, "the frontier refused a call that retrying cannot fix; stopping the crawl");
                        }
                        self.run.stop(StopReason::FrontierError);
                        return None;
                    }
                    if self.run.stopped() {
                        tracing::warn!(error = %e, call = what, "frontier call failed while stopping");
                        return None;
                    }
                    if first {
                        match e {
                            FrontierError::Full(_) => tracing::error!(
                                error = %e,
                                call = what,
                                "the shared frontier is full: admission and fetching wait until \
                                 it has room (raise Redis' maxmemory); nothing is lost meanwhile"
                            ),
                            _ => tracing::warn!(
                                error = %e,
                                call = what,
                                "frontier unavailable; the workers wait and retry with back-off"
                            ),
                        }
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
