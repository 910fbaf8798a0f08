//! The lease: a URL handed to a fetcher, with what the frontier that made it needs back
//! (its token) and what the fetcher tells it at completion (what the fetch observed, how
//! long it took, a client's date).

use std::sync::Arc;
use std::time::Duration;

use crate::entry::Entry;
use crate::visit::Visited;
#[cfg(doc)]
use crate::Frontier;

/// A URL handed to a fetcher, to be given back with [`Frontier::complete`]. Opaque: the
/// implementation that made it reads its own `token` when it comes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    entry: Entry,
    host: Arc<str>,
    token: u64,
    last_of_host: bool,
    /// Handed out under its host's address group's rules (see [`Frontier::place_host`]).
    handed_in_group: bool,
    visited: Option<Box<Visited>>,
    /// When the URL is due again (Unix seconds), instead of when the schedule says.
    due_at: Option<u64>,
    /// How long the fetch took, request to last byte (see [`Lease::set_elapsed`]).
    elapsed: Option<Duration>,
}

impl Lease {
    /// A lease of `entry` (of politeness key `host`) with an implementation-defined `token`
    /// (a host slot, a lease id).
    pub fn new(entry: Entry, host: Arc<str>, token: u64) -> Self {
        Self {
            entry,
            host,
            token,
            last_of_host: false,
            handed_in_group: false,
            visited: None,
            due_at: None,
            elapsed: None,
        }
    }

    /// Says how long the fetch took, request to last byte: with `politeness.delay_factor`
    /// the frontier paces the host by it at `complete` (a fetch that reached the host and
    /// went through; others ignore it).
    pub fn set_elapsed(&mut self, elapsed: Duration) {
        self.elapsed = Some(elapsed);
    }

    /// The fetch's duration, if the fetcher said ([`set_elapsed`](Self::set_elapsed)).
    pub fn elapsed(&self) -> Option<Duration> {
        self.elapsed
    }

    /// The URL is due again at `unix_secs`, whatever the crawl's recrawl schedule says (with
    /// none, it would be done): a client's date to fetch it again, applied in the same
    /// completion that finishes it.
    pub fn set_due_at(&mut self, unix_secs: u64) {
        self.due_at = Some(unix_secs);
    }

    /// Replaces the string and metadata a url-frontier client put with the URL by those of
    /// its update (`client`): kept if the URL is due again. Its queue key stays; an update
    /// that would pass [`MAX_CLIENT_BYTES`](crate::MAX_CLIENT_BYTES) with it keeps the old
    /// fields (`false`).
    pub fn replace_client(&mut self, client: Box<crate::ClientInfo>) -> bool {
        let key = self.entry.queue_key().map(str::to_owned);
        match client.replacing(&self.entry.url, key.as_deref()) {
            Ok(kept) => {
                self.entry.client = kept;
                true
            }
            Err(_) => false,
        }
    }

    /// The client's date, if [`set_due_at`](Self::set_due_at) gave one.
    pub fn due_at(&self) -> Option<u64> {
        self.due_at
    }

    /// Moves `entry`'s next visit, as [`reschedule`](crate::reschedule) made it (or, without
    /// a schedule, a first one: fetched at `now`, Unix seconds), to the time
    /// [`set_due_at`](Self::set_due_at) asked for; `false` when none was asked for.
    pub fn apply_due_at(&self, entry: &mut Entry, now: u64) -> bool {
        let Some(at) = self.due_at else {
            return false;
        };
        match entry.visit.as_mut() {
            Some(visit) => visit.due = at,
            None => {
                let history = self.visited().map_or_else(
                    || recrawl::History {
                        // Fetched (by its client): when it wakes, it is a refetch.
                        last_fetch: u32::try_from(now).unwrap_or(u32::MAX),
                        ..recrawl::History::default()
                    },
                    |v| v.history.clone(),
                );
                entry.visit = Some(Box::new(crate::visit::Visit { due: at, history }));
            }
        }
        true
    }

    /// Says what the fetch observed (its record is written): a frontier that keeps recrawl
    /// schedules schedules the URL by it at `complete`; others ignore it.
    pub fn set_visited(&mut self, visited: Visited) {
        self.visited = Some(Box::new(visited));
    }

    /// What the fetch observed, if the fetcher said ([`set_visited`](Self::set_visited)).
    pub fn visited(&self) -> Option<&Visited> {
        self.visited.as_deref()
    }

    /// Marks the lease as its host's last URL when it was handed out: none queued, no other in
    /// flight (a hint: more may be found later).
    pub fn with_last_of_host(mut self, last: bool) -> Self {
        self.last_of_host = last;
        self
    }

    /// Whether nothing else of its host was queued or in flight when this lease was handed
    /// out: a fetcher need not keep the host's connection open for a next request.
    pub fn last_of_host(&self) -> bool {
        self.last_of_host
    }

    /// Marks the lease as handed out under its host's address group's rules.
    pub fn with_handed_in_group(mut self, grouped: bool) -> Self {
        self.handed_in_group = grouped;
        self
    }

    /// Whether the lease was handed out under its host's address group's rules (the host
    /// was placed in one): placing it again in that group needs no check.
    pub fn handed_in_group(&self) -> bool {
        self.handed_in_group
    }

    /// What to fetch.
    pub fn entry(&self) -> &Entry {
        &self.entry
    }

    /// The politeness key: the queue key a client gave the URL, or its host (`host`, or
    /// `host:port` for a port other than the scheme's).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The implementation's token.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The entry, giving the lease up (an implementation re-queueing it).
    pub fn into_entry(self) -> Entry {
        self.entry
    }
}
