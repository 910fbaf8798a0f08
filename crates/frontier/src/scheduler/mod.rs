//! The queue proper: per-host queues in memory and on disk, and a ready-time heap that hands
//! out a URL only when its host may be fetched (Mercator-style politeness and fairness).
//!
//! Each host's queue is, in order: `head` (oldest, in memory) → `chunks` (on disk) → `tail`
//! (newest, in memory, a write buffer). Admissions go to `head` while the host has no backlog
//! and memory allows, otherwise to `tail`; a tail is written out as one chunk when it reaches
//! `chunk_size`, or — when memory is full — the largest tail is. Popping a host refills its
//! head from its first chunk (or its tail). So per-host FIFO order holds across memory and
//! disk, memory never holds more than `capacity` entries, and a host with 10^6 URLs keeps
//! them on disk instead of crowding out small hosts. Fairness comes from the heap: it orders
//! hosts by the time they may be fetched next, so every ready host gets its turn.
//!
//! This type is not thread-safe on purpose: `LocalFrontier` keeps it behind one mutex, held
//! only for these short, non-blocking operations (spill I/O is buffered appends and
//! positioned reads).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::api::{Lease, Outcome};
use crate::entry::Entry;
use crate::spill::Spill;

mod groups;
mod hosts;
mod memory;
mod queue;
mod walk;

use queue::HostQueue;

/// Serving order within a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Oldest first: breadth-first by discovery (the default).
    #[default]
    BreadthFirst,
    /// Newest first: depth-first.
    DepthFirst,
}

/// Politeness settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Politeness {
    /// Minimum time between the starts of two fetches to one host.
    pub delay: Duration,
    /// Most fetches in flight to one host.
    pub max_per_host: u32,
    /// First back-off after a host error; doubles with each further error of a fetch handed
    /// out since (fetches that were in flight together count once). While it lasts the host
    /// gets one fetch per back-off; the first of those that succeeds ends it.
    pub backoff_base: Duration,
    /// Longest back-off (and longest `Retry-After` honoured).
    pub max_backoff: Duration,
    /// The latency term's factor: a host's pace is at least this many times its last
    /// fetch's duration (0: off). See [`crate::PaceTerms`].
    pub delay_factor: f64,
    /// The latency term's bound.
    pub max_delay: Duration,
    /// The gap between any two fetch starts to one address (see [`crate::AddressKey`]),
    /// whatever hosts they are of (zero: none).
    pub ip_delay: Duration,
    /// Most fetches in flight to one address (0: no limit).
    pub max_per_ip: u32,
}

impl Politeness {
    /// The latency term of a fetch that took `elapsed` (`None`: the factor is off).
    pub fn latency_term(&self, elapsed: Duration) -> Option<Duration> {
        crate::latency_term(self.delay_factor, self.max_delay, elapsed)
    }
}

/// Default delay between fetches to one host.
pub const DEFAULT_DELAY: Duration = Duration::from_millis(250);
/// Default fetches in flight per host.
pub const DEFAULT_MAX_PER_HOST: u32 = 2;
/// Default bound of the latency term (Heritrix's `maxDelayMs`).
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(30);

impl Default for Politeness {
    fn default() -> Self {
        Self {
            delay: DEFAULT_DELAY,
            max_per_host: DEFAULT_MAX_PER_HOST,
            backoff_base: Duration::from_secs(1),
            max_backoff: Duration::from_secs(300),
            delay_factor: 0.0,
            max_delay: DEFAULT_MAX_DELAY,
            ip_delay: Duration::ZERO,
            max_per_ip: 0,
        }
    }
}

/// A host's backoff after it changed (an error made it grow, a success reset it): what a
/// [`Journal`](crate::Journal) persists so a restarted crawl keeps backing off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostBackoff {
    /// The host key (`host:port`).
    pub host: Arc<str>,
    /// The current backoff (zero: healthy again).
    pub backoff: Duration,
    /// How long from now until the host may be fetched again.
    pub wait: Duration,
}

/// A lease's token: the host's slot, and the back-off round it was handed out in.
fn lease_token(id: u32, round: u32) -> u64 {
    u64::from(id) | u64::from(round) << 32
}

/// The host's slot and round of a token made by [`lease_token`].
fn lease_parts(token: u64) -> (u32, u32) {
    (token as u32, (token >> 32) as u32)
}

/// Why `next_ready` had nothing to hand out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Nothing queued and nothing in flight: the crawl is over.
    Finished,
    /// The page budget is spent (decided by the frontier, not by the queue).
    Budget,
    /// The earliest host becomes ready at this time.
    Until(Instant),
    /// URLs are queued only for hosts at their in-flight limit, or nothing is queued but
    /// fetches are in flight (they may produce more): wait for a change.
    Idle,
}

/// Counts for statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct QueueCounts {
    pub(crate) memory: u64,
    pub(crate) disk: u64,
    pub(crate) in_flight: u64,
    pub(crate) hosts: u64,
    pub(crate) max_memory: u64,
    pub(crate) spill_bytes: u64,
    pub(crate) spill_errors: u64,
}

#[derive(Debug)]
pub(crate) struct Scheduler {
    hosts: Vec<HostQueue>,
    ids: HashMap<Arc<str>, u32>,
    ready: BinaryHeap<Reverse<(Instant, u32)>>,
    /// Hosts whose tail may be non-empty (stale ids are skipped and removed lazily).
    tail_hosts: Vec<u32>,
    heads: usize,
    tails: usize,
    capacity: usize,
    head_capacity: usize,
    chunk_size: usize,
    queued: u64,
    spilled: u64,
    in_flight: u64,
    max_memory: usize,
    spill: Spill,
    spill_errors: u64,
    order: Order,
    politeness: Politeness,
    groups: groups::Groups,
}

impl Scheduler {
    pub(crate) fn new(capacity: usize, spill: Spill, order: Order, politeness: Politeness) -> Self {
        let capacity = capacity.max(2);
        Self {
            hosts: Vec::new(),
            ids: HashMap::new(),
            ready: BinaryHeap::new(),
            tail_hosts: Vec::new(),
            heads: 0,
            tails: 0,
            capacity,
            // Heads may use half the memory, so tails always have room to batch writes.
            head_capacity: capacity / 2,
            chunk_size: (capacity / 8).clamp(1, 512),
            queued: 0,
            spilled: 0,
            in_flight: 0,
            max_memory: 0,
            spill,
            spill_errors: 0,
            order,
            politeness: Politeness {
                max_per_host: politeness.max_per_host.max(1),
                ..politeness
            },
            groups: groups::Groups::default(),
        }
    }

    fn host_id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.hosts.len() as u32;
        let name: Arc<str> = Arc::from(name);
        self.ids.insert(Arc::clone(&name), id);
        self.hosts.push(HostQueue::new(name));
        id
    }

    /// Makes `host` known with nothing queued (its URLs sleep until a date): listed, and
    /// its controls take, as a Redis frontier's.
    pub(crate) fn know_host(&mut self, host: &str) {
        self.host_id(host);
    }

    /// Queues an admitted entry for `host`. Returns whether the host became schedulable
    /// (so waiting consumers should be woken).
    pub(crate) fn push(&mut self, host: &str, entry: Entry) -> bool {
        let id = self.host_id(host);
        let q = &mut self.hosts[id as usize];
        if q.chunks.is_empty() && q.tail.is_empty() && self.heads < self.head_capacity {
            q.head.push_back(entry);
            self.heads += 1;
        } else {
            if q.tail.is_empty() {
                self.tail_hosts.push(id);
            }
            q.tail.push(entry);
            self.tails += 1;
            if q.tail.len() >= self.chunk_size {
                self.flush_tail(id);
            }
        }
        self.queued += 1;
        self.enforce_capacity(id);
        self.schedule(id)
    }

    /// Puts host `id` on the ready heap if it has work and a free slot. Returns whether it
    /// was added.
    fn schedule(&mut self, id: u32) -> bool {
        let q = &self.hosts[id as usize];
        if q.in_heap || q.parked || q.len() == 0 || q.in_flight >= q.limit(&self.politeness) {
            return false;
        }
        self.push_ready(id);
        true
    }

    /// Puts host `id` on the ready heap at its current time, as its live entry (an earlier
    /// one of it becomes stale).
    pub(super) fn push_ready(&mut self, id: u32) {
        let at = self.hosts[id as usize].ready_at();
        self.push_ready_at(id, at);
    }

    /// [`push_ready`](Self::push_ready) at `at`; a host waiting in its address group is
    /// left there (the group puts it on the heap).
    pub(super) fn push_ready_at(&mut self, id: u32, at: Instant) {
        let q = &mut self.hosts[id as usize];
        if q.parked {
            return;
        }
        q.in_heap = true;
        q.heap_at = at;
        self.ready.push(Reverse((at, id)));
    }

    /// Takes the next entry of host `id` in the configured order.
    fn pop(&mut self, id: u32) -> Option<Entry> {
        let entry = match self.order {
            Order::BreadthFirst => self.pop_front(id),
            Order::DepthFirst => self.pop_back(id),
        }?;
        self.queued -= 1;
        self.enforce_capacity(id);
        Some(entry)
    }

    fn pop_front(&mut self, id: u32) -> Option<Entry> {
        loop {
            let q = &mut self.hosts[id as usize];
            if let Some(e) = q.head.pop_front() {
                self.heads -= 1;
                return Some(e);
            }
            if let Some(chunk) = q.chunks.pop_front() {
                if let Some(entries) = self.load_chunk(id, chunk) {
                    self.heads += entries.len();
                    self.hosts[id as usize].head.extend(entries);
                }
                continue;
            }
            if q.tail.is_empty() {
                return None;
            }
            let tail = std::mem::take(&mut q.tail);
            self.tails -= tail.len();
            self.heads += tail.len();
            q.head.extend(tail);
        }
    }

    fn pop_back(&mut self, id: u32) -> Option<Entry> {
        loop {
            let q = &mut self.hosts[id as usize];
            if let Some(e) = q.tail.pop() {
                self.tails -= 1;
                return Some(e);
            }
            if let Some(chunk) = q.chunks.pop_back() {
                if let Some(entries) = self.load_chunk(id, chunk) {
                    if !entries.is_empty() {
                        self.tail_hosts.push(id);
                    }
                    self.tails += entries.len();
                    self.hosts[id as usize].tail.extend(entries);
                }
                continue;
            }
            let e = q.head.pop_back()?;
            self.heads -= 1;
            return Some(e);
        }
    }

    /// The next lease whose host may be fetched at `now`, or why there is none.
    pub(crate) fn next_ready(&mut self, now: Instant) -> Result<Lease, Wait> {
        while let Some(&Reverse((at, id))) = self.ready.peek() {
            let q = &self.hosts[id as usize];
            if !q.in_heap || at != q.heap_at {
                // Stale: the host's time moved earlier and it has a newer entry (or none).
                self.ready.pop();
                continue;
            }
            // A host with nothing to hand out leaves the heap whatever its time.
            let idle = q.is_idle(&self.politeness);
            if at > now && !idle {
                return Err(Wait::Until(at));
            }
            self.ready.pop();
            self.hosts[id as usize].in_heap = false;
            if idle {
                self.release_rep(id);
                continue;
            }
            let q = &self.hosts[id as usize];
            if q.ready_at() > now {
                // Its own time moved later (an operator's block): it waits for it, and its
                // group does not wait with it.
                self.release_rep(id);
                self.schedule(id);
                continue;
            }
            if self.held_by_group(id, now) {
                continue;
            }
            let Some(lease) = self.hand_out(id, now) else {
                self.release_rep(id);
                continue;
            };
            return Ok(lease);
        }
        if self.queued == 0 && self.in_flight == 0 {
            Err(Wait::Finished)
        } else {
            Err(Wait::Idle)
        }
    }

    /// The next lease of `host` alone, if it may be fetched at `now` (URLs queued, under its
    /// in-flight limit, its time come): a client that asks for one queue (url-frontier's
    /// GetURLs with a key). The host's turn is the one `next_ready` serves: it moves on as if
    /// the heap had handed it out.
    pub(crate) fn next_of(&mut self, host: &str, now: Instant) -> Option<Lease> {
        let &id = self.ids.get(host)?;
        let q = &self.hosts[id as usize];
        if q.is_idle(&self.politeness) || q.ready_at() > now || !self.group_allows(id, now) {
            return None;
        }
        // Its entry on the heap, if any, goes stale: `hand_out` schedules it afresh (and,
        // should its queue be unreadable after all, it goes back on the heap as it was).
        self.hosts[id as usize].in_heap = false;
        let lease = self.hand_out(id, now).or_else(|| {
            self.schedule(id);
            None
        });
        self.release_rep(id);
        lease
    }

    /// Hands out host `id`'s next URL at `now` (its time has come) and puts the host back on
    /// the heap for its next turn; `None` when its queue is empty after all.
    fn hand_out(&mut self, id: u32, now: Instant) -> Option<Lease> {
        let entry = self.pop(id)?;
        let delay = self.delay_of(id);
        let q = &mut self.hosts[id as usize];
        q.in_flight += 1;
        q.next_allowed = now + delay;
        q.last_start = Some(now);
        self.in_flight += 1;
        let host = Arc::clone(&q.name);
        let token = lease_token(id, q.round);
        // Nothing else of the host queued or in flight: it looks done, so its connection
        // need not stay open. (With other fetches of it in flight, their pages may bring
        // more: closing then cost a reconnect a page on a one-host crawl.)
        let last = q.len() == 0 && q.in_flight == 1;
        let grouped = q.group.is_some();
        self.group_started(id, now);
        self.schedule(id);
        Some(
            Lease::new(entry, host, token)
                .with_last_of_host(last)
                .with_handed_in_group(grouped),
        )
    }

    /// Host `id`'s next fetch may start at `at` (not before what errors hold it to), sooner
    /// or later than its time so far. Returns whether it was put on the ready heap (its time
    /// moved earlier and it can take a fetch), so that consumers should be woken.
    pub(super) fn repace(&mut self, id: u32, at: Instant) -> bool {
        let q = &mut self.hosts[id as usize];
        let before = q.ready_at();
        q.next_allowed = at.max(q.held_until);
        let sooner = q.ready_at() < before || !q.in_heap;
        if sooner && q.len() > 0 && q.in_flight < q.limit(&self.politeness) {
            self.push_ready(id);
            return true;
        }
        false
    }

    /// The terms of host `id`'s delay (see [`crate::PaceTerms`]).
    fn terms_of(&self, id: u32) -> crate::PaceTerms {
        let q = &self.hosts[id as usize];
        crate::PaceTerms {
            base: q.delay_override.unwrap_or(self.politeness.delay),
            operator: q.delay_override.is_some(),
            crawl_delay: q.crawl_delay,
            latency: q.latency_delay,
            backoff: q.backoff,
        }
    }

    /// The gap between two fetch starts of host `id` when it is healthy: the delay (or an
    /// operator's), its robots.txt `Crawl-delay` and its latency term.
    fn pace_of(&self, id: u32) -> Duration {
        self.terms_of(id).pace()
    }

    /// The gap now in force: the pace, or the back-off while the host backs off.
    fn delay_of(&self, id: u32) -> Duration {
        self.pace_of(id).max(self.hosts[id as usize].backoff)
    }

    /// Gives a lease back. Returns whether consumers should be woken (a host became
    /// schedulable, or the crawl finished), and the host's new backoff if it changed.
    pub(crate) fn complete(
        &mut self,
        lease: Lease,
        outcome: Outcome,
        now: Instant,
    ) -> (bool, Option<HostBackoff>) {
        let (id, round) = lease_parts(lease.token());
        let elapsed = lease.elapsed();
        if self.hosts.get(id as usize).is_none_or(|q| q.in_flight == 0) {
            return (false, None);
        }
        self.in_flight -= 1;
        let group_freed = self.group_done(id);
        let max_backoff = self.politeness.max_backoff;
        let base = self.politeness.backoff_base;
        let q = &mut self.hosts[id as usize];
        q.in_flight -= 1;
        let backoff_before = q.backoff;
        let ready_before = q.next_allowed;
        // Handed out since the host last backed off: this outcome is news about the host.
        let current = round == q.round;
        let back_off = |q: &mut HostQueue, hint: Option<Duration>| {
            let mut wait = hint.unwrap_or_default().min(max_backoff);
            if current {
                q.backoff = (q.backoff * 2).max(base).min(max_backoff);
                q.round = q.round.wrapping_add(1);
                wait = wait.max(q.backoff);
            }
            // An error of a fetch handed out before the back-off is part of the failure that
            // set it: the back-off already holds, only a longer `Retry-After` extends it.
            q.held_until = q.held_until.max(now + wait);
            q.next_allowed = q.next_allowed.max(q.held_until);
        };
        // While a host backs off it is paced to one fetch per back-off. A fetch handed out
        // since that went through ends the back-off; a skip (robots.txt) did not reach the
        // host, says nothing of it and leaves the back-off, but gives its turn back.
        let probe = current && !q.backoff.is_zero();
        let went_through = matches!(outcome, Outcome::Done);
        let recovered = probe && went_through;
        let skipped = probe && matches!(outcome, Outcome::Skipped);
        let requeue = match outcome {
            Outcome::Done | Outcome::Skipped => {
                if recovered {
                    q.backoff = Duration::ZERO;
                }
                q.done += 1;
                None
            }
            Outcome::HostError { retry_after } => {
                back_off(q, retry_after);
                q.done += 1;
                q.errors += 1;
                None
            }
            Outcome::Retry { after } => {
                back_off(q, after);
                q.errors += 1;
                let mut entry = lease.into_entry();
                entry.attempt = entry.attempt.saturating_add(1);
                Some(entry)
            }
            Outcome::Released => Some(lease.into_entry()),
        };
        if let Some(entry) = requeue {
            let q = &mut self.hosts[id as usize];
            match self.order {
                Order::BreadthFirst => {
                    q.head.push_front(entry);
                    self.heads += 1;
                }
                Order::DepthFirst => {
                    if q.tail.is_empty() {
                        self.tail_hosts.push(id);
                    }
                    q.tail.push(entry);
                    self.tails += 1;
                }
            }
            self.queued += 1;
            self.enforce_capacity(id);
        }
        // Recovered: back to its own pace from the last fetch's start, not a whole back-off
        // later. Skipped: the next fetch needs no back-off from this turn, which started at
        // least a back-off after the host's last fetch. Either way what errors hold the host
        // to (a `Retry-After` of a fetch from before) still holds.
        let mut woken = false;
        if recovered {
            let at = self.hosts[id as usize].last_start.unwrap_or(now) + self.pace_of(id);
            woken = self.repace(id, at);
        } else if skipped {
            woken = self.repace(id, now + self.pace_of(id));
        }
        let q = &self.hosts[id as usize];
        let changed =
            (q.backoff != backoff_before || q.next_allowed > ready_before).then(|| HostBackoff {
                host: Arc::clone(&q.name),
                backoff: q.backoff,
                wait: q.next_allowed.saturating_duration_since(now),
            });
        // A fetch that went through paces the host by its duration from now on, the next
        // start counted from the last (not persisted: a restart starts from the delay).
        let term = elapsed
            .filter(|_| went_through)
            .and_then(|d| self.politeness.latency_term(d));
        if let Some(term) = term {
            self.hosts[id as usize].latency_delay = term;
            let q = &self.hosts[id as usize];
            let at = q.last_start.unwrap_or(now) + self.pace_of(id);
            if at > q.next_allowed {
                self.hosts[id as usize].next_allowed = at;
            }
        }
        let scheduled = self.schedule(id);
        (
            scheduled || woken || group_freed || (self.queued == 0 && self.in_flight == 0),
            changed,
        )
    }

    pub(crate) fn counts(&self) -> QueueCounts {
        QueueCounts {
            memory: (self.heads + self.tails) as u64,
            disk: self.spilled,
            in_flight: self.in_flight,
            hosts: self.hosts.len() as u64,
            max_memory: self.max_memory as u64,
            spill_bytes: self.spill.bytes_on_disk(),
            spill_errors: self.spill_errors,
        }
    }

    pub(crate) fn queued(&self) -> u64 {
        self.queued
    }
}
