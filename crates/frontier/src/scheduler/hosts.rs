//! The scheduler's per-host view (for listing hosts) and an operator's run-time controls of
//! one host. Listing walks every host once (no index to keep up to date on the hot path);
//! the frontier sorts and pages the result.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use super::Scheduler;
use crate::entry::Entry;
use crate::hosts::{HostControls, HostInfo};
use crate::spill::ChunkRef;

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
        let (delay, mut delay_reason) = self.terms_of(id).delay();
        if q.parked {
            delay_reason = crate::DelayReason::IpGroup;
        }
        let (address, address_hosts, address_in_flight) = self
            .group_of(id)
            .map_or((None, 0, 0), |(k, n, f)| (Some(k), n, f));
        HostInfo {
            host: q.name.to_string(),
            queued: q.len(),
            in_flight: q.in_flight,
            done: q.done,
            errors: q.errors,
            admitted: 0,
            delay,
            delay_reason,
            latency_delay: q.latency_delay,
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
            address,
            address_hosts,
            address_in_flight,
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
        // Its time may have moved later (a block, a longer delay): it keeps it, and does not
        // hold its group's turn meanwhile.
        self.release_rep(id);
        true
    }

    /// The delay of every host without an operator's own (capped at a year). It applies
    /// from each host's next hand-out: a host already waiting keeps its time.
    pub(crate) fn set_default_delay(&mut self, delay: Duration) {
        self.politeness.delay = delay.min(MAX_CONTROL);
    }

    /// Resuming: a host was backing off when the last run stopped; it waits `wait` from now
    /// before its next fetch, and its next error backs off from `backoff`.
    pub(crate) fn restore_backoff(
        &mut self,
        host: &str,
        backoff: Duration,
        wait: Duration,
        now: Instant,
    ) {
        let max = self.politeness.max_backoff;
        let id = self.host_id(host);
        let q = &mut self.hosts[id as usize];
        q.backoff = backoff.min(max);
        q.held_until = q.held_until.max(now + wait.min(max));
        q.next_allowed = q.next_allowed.max(q.held_until);
    }

    /// Sets a host's `Crawl-delay` (from its robots.txt).
    /// The delay also applies to the fetch already handed out: the next one waits for it
    /// from that fetch's start, not just from now on.
    pub(crate) fn set_crawl_delay(&mut self, host: &str, delay: Duration) {
        let id = self.host_id(host);
        let q = &mut self.hosts[id as usize];
        q.crawl_delay = delay.min(self.politeness.max_backoff);
        if let Some(last) = q.last_start {
            q.next_allowed = q.next_allowed.max(last + q.crawl_delay);
        }
    }

    /// `host` was contacted at `now` within a lease (see `LocalFrontier::host_contacted`).
    pub(crate) fn host_contacted(&mut self, host: &str, now: Instant) {
        let id = self.host_id(host);
        let delay = self.delay_of(id);
        let q = &mut self.hosts[id as usize];
        q.last_start = Some(now);
        q.next_allowed = q.next_allowed.max(now + delay);
        self.group_contacted(id, now);
    }

    /// Takes host `id`'s memory part (head, tail) and its chunk list out of its queue,
    /// counting the memory part out of `heads`/`tails` (not out of `queued`).
    fn take_queue(&mut self, id: u32) -> (VecDeque<Entry>, Vec<Entry>, VecDeque<ChunkRef>) {
        let q = &mut self.hosts[id as usize];
        let head = std::mem::take(&mut q.head);
        let tail = std::mem::take(&mut q.tail);
        let chunks = std::mem::take(&mut q.chunks);
        self.heads -= head.len();
        self.tails -= tail.len();
        (head, tail, chunks)
    }

    /// Takes every URL queued for `host` out of the crawl (an operator's delete of its
    /// queue): how many, and — `with_ids`, for a journal — their journal ids;
    /// `None` if the host is unknown. Leases out are not touched, and the host keeps its
    /// figures and controls. Without ids the chunks on disk are released unread; with them
    /// each is read (under the caller's lock: a host with 10^6 URLs on disk costs a read of
    /// them, once, for an operator's call).
    pub(crate) fn drain_host(&mut self, host: &str, with_ids: bool) -> Option<(u64, Vec<u64>)> {
        let &id = self.ids.get(host)?;
        let mut ids = Vec::new();
        let (head, tail, chunks) = self.take_queue(id);
        let mut dropped = (head.len() + tail.len()) as u64;
        if with_ids {
            ids.extend(head.iter().chain(&tail).map(|e| e.id));
        }
        for chunk in chunks {
            if with_ids {
                // An unreadable chunk is lost already (and uncounted by `load_chunk`).
                if let Some(entries) = self.load_chunk(id, chunk) {
                    dropped += entries.len() as u64;
                    ids.extend(entries.iter().map(|e| e.id));
                }
            } else {
                self.spill.discard(chunk);
                let n = u64::from(chunk.count);
                self.hosts[id as usize].spilled -= n;
                self.spilled -= n;
                dropped += n;
            }
        }
        self.queued -= dropped;
        // Its heap entry, if any, now finds an idle host and is dropped when reached; its
        // group's turn goes to the next waiting host.
        self.release_rep(id);
        Some((dropped, ids))
    }

    /// As [`drain_host`](Self::drain_host), for the URLs admitted before `before` (Unix
    /// seconds) only: a purge by age. The rest stay queued in their order — taken out and
    /// queued again, a chunk at a time, so memory holds a chunk, not the host's backlog.
    /// A URL of unknown admission time (`created` 0: written before format 6) stays.
    pub(crate) fn drain_created_before(
        &mut self,
        host: &str,
        before: u32,
    ) -> Option<(u64, Vec<u64>)> {
        let &id = self.ids.get(host)?;
        let (head, tail, chunks) = self.take_queue(id);
        self.queued -= (head.len() + tail.len()) as u64;
        let (mut dropped, mut ids) = (0u64, Vec::new());
        let mut sift = |sched: &mut Self, entries: Vec<Entry>| {
            for entry in entries {
                if entry.purged_by(Some(before)) {
                    dropped += 1;
                    ids.push(entry.id);
                } else {
                    sched.push(host, entry);
                }
            }
        };
        sift(self, head.into());
        for chunk in chunks {
            // An unreadable chunk is lost already (and uncounted by `load_chunk`).
            if let Some(entries) = self.load_chunk(id, chunk) {
                self.queued -= entries.len() as u64;
                sift(self, entries);
            }
        }
        sift(self, tail);
        if self.hosts[id as usize].len() == 0 {
            self.release_rep(id);
        }
        Some((dropped, ids))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::{Order, Politeness};
    use crate::spill::Spill;

    #[test]
    fn a_purge_by_age_drops_old_urls_in_memory_and_on_disk_and_keeps_the_rest_in_order() {
        let spill = Spill::new(None).unwrap();
        let mut s = Scheduler::new(16, spill, Order::BreadthFirst, Politeness::default());
        let created = |i: u32| match i % 3 {
            0 => 1_000,
            1 => 5_000,
            _ => 0,
        };
        for i in 0..200u32 {
            let mut e = Entry::new(format!("http://a.test/{i}"), 0, None);
            e.id = u64::from(i);
            e.created = created(i);
            s.push("a.test", e);
        }
        let mut other = Entry::new("http://b.test/".into(), 0, None);
        other.created = 1_000;
        s.push("b.test", other);
        assert!(s.spilled > 100, "most of the host's URLs are on disk");
        assert_eq!(s.drain_created_before("nowhere.test", 2_000), None);

        let (dropped, mut ids) = s.drain_created_before("a.test", 2_000).unwrap();
        ids.sort_unstable();
        let old: Vec<u64> = (0..200).filter(|i| i % 3 == 0).collect();
        assert_eq!((dropped, ids), (old.len() as u64, old));
        assert_eq!(s.queued, 200 - 67 + 1);

        // The rest — younger, or of unknown age — come out in their order; the other host
        // keeps its old URL.
        let id = s.ids["a.test"];
        let mut left = Vec::new();
        while let Some(e) = s.pop(id) {
            left.push(e.id);
        }
        let kept: Vec<u64> = (0..200).filter(|i| i % 3 != 0).collect();
        assert_eq!(left, kept);
        assert_eq!((s.queued, s.spilled, s.heads + s.tails), (1, 0, 1));
    }
}
