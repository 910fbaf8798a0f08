//! The scheduler's per-host view (for listing hosts) and an operator's run-time controls of
//! one host. Listing walks every host once (no index to keep up to date on the hot path);
//! the frontier sorts and pages the result.

use std::time::Duration;

use tokio::time::Instant;

use super::Scheduler;
use crate::hosts::{HostControls, HostInfo};

/// The longest an operator may block a host or set its delay: a year (an `Instant` far in
/// the future may overflow).
const MAX_CONTROL: Duration = Duration::from_secs(365 * 24 * 3600);
/// Longest block: past the service's latest `blocked_until` (2100), so a block it takes is
/// kept as given, never shortened.
const MAX_BLOCK: Duration = Duration::from_secs(100 * 366 * 24 * 3600);

impl Scheduler {
    /// Every host's queue and limits at `now` (`admitted` and `max_pages` are the
    /// frontier's, left at their defaults here).
    pub(crate) fn host_infos(&self, now: Instant) -> Vec<HostInfo> {
        (0..self.hosts.len())
            .map(|id| self.host_info_of(id as u32, now))
            .collect()
    }

    /// [`host_infos`](Self::host_infos) of one host, found by name; `None` if unknown.
    pub(crate) fn host_info(&self, host: &str, now: Instant) -> Option<HostInfo> {
        self.ids.get(host).map(|&id| self.host_info_of(id, now))
    }

    fn host_info_of(&self, id: u32, now: Instant) -> HostInfo {
        let q = &self.hosts[id as usize];
        HostInfo {
            host: q.name.to_string(),
            queued: q.len(),
            in_flight: q.in_flight,
            done: q.done,
            errors: q.errors,
            admitted: 0,
            delay: self.delay_of(id),
            crawl_delay: q.crawl_delay,
            backoff: q.backoff,
            ready_in: q.ready_at().saturating_duration_since(now),
            blocked_for: q
                .blocked_until
                .filter(|b| *b > now)
                .map(|b| b.saturating_duration_since(now)),
            max_in_flight: q.limit(&self.politeness),
            max_pages: None,
            max_done: q.max_done,
        }
    }

    /// Applies an operator's controls to a known host; `false` if it is unknown. Returns
    /// whether consumers should be woken (the host may be ready sooner, or take more).
    pub(crate) fn control(&mut self, host: &str, c: &HostControls, now: Instant) -> bool {
        let Some(&id) = self.ids.get(host) else {
            return false;
        };
        if let Some(delay) = c.delay {
            self.hosts[id as usize].delay_override = Some(delay.min(MAX_CONTROL));
            // The new delay counts from the last fetch's start, shorter or longer; a host
            // backing off keeps waiting (its wait may come from a `Retry-After`).
            let at = self.hosts[id as usize]
                .last_start
                .map_or(now, |last| last + self.delay_of(id));
            self.repace(id, at);
        }
        let q = &mut self.hosts[id as usize];
        if let Some(n) = c.max_in_flight {
            q.max_in_flight = Some(n.max(1));
        }
        if let Some(block) = c.block_for {
            q.blocked_until = (!block.is_zero()).then(|| now + block.min(MAX_BLOCK));
        }
        if let Some(max) = c.max_done {
            q.max_done = (max > 0).then_some(max);
        }
        // The host's place in the ready heap may be earlier now: put it in again (its older
        // entry becomes stale and is dropped).
        let q = &self.hosts[id as usize];
        if q.len() > 0 && q.in_flight < q.limit(&self.politeness) {
            self.push_ready(id);
        }
        true
    }
}
