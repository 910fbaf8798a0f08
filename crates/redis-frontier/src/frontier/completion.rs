//! A lease's completion as the scripts take it: its kind, the hint, a retried entry and,
//! under a recrawl schedule, the URL's next visit.

use std::time::Duration;

use frontier::{Lease, Outcome, Politeness};

use super::ms;

/// A completion as the scripts take it: lease id, kind, the server's wait hint (for `done`,
/// the fetch's latency term: see [`frontier::PaceTerms`]), the entry
/// to queue for a retry (encoded; empty for none) and, under a recrawl schedule, the entry
/// with its next visit and the seconds until it is due (empty and 0 for none).
pub(super) struct Completion {
    pub(super) id: u64,
    pub(super) kind: &'static str,
    pub(super) hint: Option<Duration>,
    pub(super) retry: Vec<u8>,
    pub(super) again: Vec<u8>,
    pub(super) again_secs: u64,
    /// The URL's bucket and field in the `dueat` index (see `Shared::due_index`).
    pub(super) index: (String, Vec<u8>),
}

impl Completion {
    pub(super) fn of(lease: Lease, outcome: Outcome, again: Option<Again>, p: &Politeness) -> Self {
        let id = lease.token();
        let (again, again_secs, index) = match again {
            Some(a) => (a.entry, a.secs, (a.bucket.to_string(), a.field.to_vec())),
            None => Default::default(),
        };
        let (kind, hint, retry) = match outcome {
            Outcome::Done => (
                "done",
                lease.elapsed().and_then(|d| p.latency_term(d)),
                None,
            ),
            Outcome::Skipped => ("skip", None, None),
            Outcome::HostError { retry_after } => ("error", retry_after, None),
            Outcome::Retry { after } => {
                let mut e = lease.into_entry();
                e.attempt = e.attempt.saturating_add(1);
                ("retry", after, Some(e))
            }
            Outcome::Released => ("release", None, None),
        };
        let mut bytes = Vec::new();
        if let Some(e) = retry {
            e.encode(&mut bytes);
        }
        Self {
            id,
            kind,
            hint,
            retry: bytes,
            again,
            again_secs,
            index,
        }
    }

    /// A lease given back because its address group had no room: its host waits `wait`.
    pub(super) fn defer(&mut self, wait: Option<Duration>) {
        if self.kind == "release" && wait.is_some() {
            self.hint = wait;
        }
    }
}

/// The scripts' `hint` argument (ms): the server's wait for an error or retry (0: none); for
/// `done` the fetch's latency term, -1 when the fetcher said no duration (the term stays).
pub(super) fn hint_ms(kind: &str, hint: Option<Duration>) -> i64 {
    match hint {
        Some(d) => i64::try_from(ms(d)).unwrap_or(i64::MAX),
        None if kind == "done" => -1,
        None => 0,
    }
}

/// A URL's next visit as the scripts take it: its entry (encoded), the seconds until it is
/// due, and its place in the `dueat` index.
pub(super) struct Again {
    pub(super) entry: Vec<u8>,
    pub(super) secs: u64,
    pub(super) bucket: u64,
    pub(super) field: [u8; 8],
}

/// Now, in Unix seconds of this machine's clock.
pub(super) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
