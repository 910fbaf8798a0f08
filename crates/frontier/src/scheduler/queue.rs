//! One host's queue: its URLs (in memory and on disk), its politeness state and an
//! operator's controls. The scheduler owns one per host and keeps them in a `Vec` indexed
//! by host slot, so a lease token can name its host in four bytes.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Politeness;
use crate::entry::Entry;
use crate::spill::ChunkRef;

#[derive(Debug)]
pub(super) struct HostQueue {
    pub(super) name: Arc<str>,
    pub(super) head: VecDeque<Entry>,
    pub(super) chunks: VecDeque<ChunkRef>,
    pub(super) tail: Vec<Entry>,
    pub(super) spilled: u64,
    pub(super) in_flight: u32,
    pub(super) next_allowed: Instant,
    /// The latest time errors hold the host to (its back-off wait, a `Retry-After`): what
    /// `next_allowed` may not come before when a success lifts the back-off's pacing.
    pub(super) held_until: Instant,
    /// When the last fetch to this host was handed out.
    pub(super) last_start: Option<Instant>,
    pub(super) crawl_delay: Duration,
    /// The latency term of its last fetch that went through (zero: off or none yet).
    pub(super) latency_delay: Duration,
    pub(super) backoff: Duration,
    /// Raised each time an error backs the host off further. A lease carries the round it
    /// was handed out in, and only a fetch handed out in the current round says how the host
    /// is now: its error doubles the back-off, its success resets it. Fetches that were in
    /// flight together when the host failed are one failure, not one doubling each (64 in
    /// flight to a host that went down would otherwise back it off for `2^63 ×` the base).
    pub(super) round: u32,
    pub(super) in_heap: bool,
    /// Its address group (see `groups.rs`), once a fetcher placed it.
    pub(super) group: Option<u32>,
    /// Its turn came while its group held it: it waits in the group, off the heap.
    pub(super) parked: bool,
    /// The time of the host's live entry in the ready heap (while `in_heap`): any other entry
    /// of it there is stale, left behind when its time moved earlier, and is dropped.
    pub(super) heap_at: Instant,
    /// URLs finished (final outcomes).
    pub(super) done: u64,
    /// Host errors and retries.
    pub(super) errors: u64,
    /// An operator's delay for this host, replacing `politeness.delay`.
    pub(super) delay_override: Option<Duration>,
    /// An operator's in-flight limit for this host, replacing `politeness.max_per_host`.
    pub(super) max_in_flight: Option<u32>,
    /// An operator's block: nothing of this host is handed out before then.
    pub(super) blocked_until: Option<Instant>,
    /// An operator's limit on URLs finished (leases out counted): reached, the host hands
    /// out nothing more.
    pub(super) max_done: Option<u64>,
}

impl HostQueue {
    /// A new, empty queue for host `name`, fetchable now.
    pub(super) fn new(name: Arc<str>) -> Self {
        HostQueue {
            name,
            head: VecDeque::new(),
            chunks: VecDeque::new(),
            tail: Vec::new(),
            spilled: 0,
            in_flight: 0,
            next_allowed: Instant::now(),
            held_until: Instant::now(),
            last_start: None,
            crawl_delay: Duration::ZERO,
            latency_delay: Duration::ZERO,
            backoff: Duration::ZERO,
            round: 0,
            in_heap: false,
            group: None,
            parked: false,
            heap_at: Instant::now(),
            done: 0,
            errors: 0,
            delay_override: None,
            max_in_flight: None,
            blocked_until: None,
            max_done: None,
        }
    }

    pub(super) fn len(&self) -> u64 {
        self.head.len() as u64 + self.tail.len() as u64 + self.spilled
    }

    /// When the host may be fetched next: its politeness time, or an operator's block.
    pub(super) fn ready_at(&self) -> Instant {
        match self.blocked_until {
            Some(b) => b.max(self.next_allowed),
            None => self.next_allowed,
        }
    }

    pub(super) fn limit(&self, politeness: &Politeness) -> u32 {
        self.max_in_flight.unwrap_or(politeness.max_per_host)
    }

    /// Whether the host can take no more fetches now: nothing queued, its in-flight limit,
    /// or its limit of URLs finished reached.
    pub(super) fn is_idle(&self, politeness: &Politeness) -> bool {
        self.len() == 0
            || self.in_flight >= self.limit(politeness)
            || self
                .max_done
                .is_some_and(|max| self.done + u64::from(self.in_flight) >= max)
    }
}
