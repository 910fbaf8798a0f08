//! [`Run`]: whether the crawl goes on — the first stop's reason (a stop closes the frontier,
//! so no URL is handed out after it) and an operator's pause. A cheap-clone handle: every
//! task that must notice a stop or a pause holds one, nothing else.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use frontier::Frontier;

use crate::stop::StopReason;

/// The crawl's run state (see the module header).
#[derive(Debug, Clone)]
pub(crate) struct Run(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    stop: Mutex<Option<StopReason>>,
    /// An operator's pause (`POST /api/v1/pause`): no new fetch starts while it is `true`.
    held: tokio::sync::watch::Sender<bool>,
    /// Closed at the first stop.
    frontier: Arc<dyn Frontier>,
}

impl Run {
    pub(crate) fn new(frontier: Arc<dyn Frontier>) -> Self {
        Self(Arc::new(Inner {
            stop: Mutex::new(None),
            held: tokio::sync::watch::Sender::new(false),
            frontier,
        }))
    }

    /// Stops the crawl (the first reason is kept): no more URLs are handed out.
    pub(crate) fn stop(&self, reason: StopReason) {
        let mut s = self.0.stop.lock().unwrap_or_else(|e| e.into_inner());
        if s.is_none() {
            *s = Some(reason);
            tracing::info!(?reason, "stopping: no more URLs are handed out");
        }
        drop(s);
        self.0.frontier.close();
    }

    pub(crate) fn stopped(&self) -> bool {
        self.reason().is_some()
    }

    /// Why the crawl stopped, once it has.
    pub(crate) fn reason(&self) -> Option<StopReason> {
        *self.0.stop.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Pauses (`true`) or resumes the crawl for an operator.
    pub(crate) fn hold(&self, held: bool) {
        self.0.held.send_replace(held);
    }

    /// Whether an operator paused the crawl.
    pub(crate) fn held(&self) -> bool {
        *self.0.held.borrow()
    }

    /// Waits while an operator has the crawl paused (or until it stops).
    pub(crate) async fn wait_while_held(&self) {
        let mut rx = self.0.held.subscribe();
        while *rx.borrow_and_update() && !self.stopped() {
            tokio::select! {
                changed = rx.changed() => if changed.is_err() { return },
                // A stop does not change the watch: look again now and then.
                _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
        }
    }
}
