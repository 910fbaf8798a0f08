//! The recrawl schedule of [`LocalFrontier`](super::LocalFrontier): URLs waiting for their
//! due time (fetched under a schedule, or given a date by a client), and how a completion
//! turns into the next one.
//!
//! Design choice: a sleeping URL is an ordinary queue [`Entry`] carrying its
//! [`Visit`](crate::Visit), kept in a map ordered by due time in its binary form (10^6 URLs
//! asleep: 483 MB peak RSS against 726 MB as decoded entries, BENCHMARKS §9); when it is due
//! it is decoded and pushed into
//! its host's queue like any URL, so politeness, robots.txt, budgets and the SSRF guard apply
//! to a refetch unchanged, and it never passes the visited set again. Promotion is bounded per
//! call ([`PROMOTE_AT_ONCE`]) so that one `next` never holds the scheduler lock for long.
//! Due times are Unix seconds of the wall clock: a clock stepped back makes URLs late, never
//! early.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use crate::entry::Entry;
use crate::scheduler::Scheduler;

/// Most due URLs moved into the host queues by one `next`.
pub(super) const PROMOTE_AT_ONCE: usize = 1024;

/// Now, in Unix seconds.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A sleeping URL as kept: its host key's length (u16 LE), the host key, the entry's binary
/// form (with its visit).
fn pack(host: &str, entry: &Entry) -> Box<[u8]> {
    let host = &host.as_bytes()[..host.len().min(usize::from(u16::MAX))];
    let mut out = Vec::with_capacity(2 + host.len() + 64 + entry.url.len());
    out.extend_from_slice(&(host.len() as u16).to_le_bytes());
    out.extend_from_slice(host);
    entry.encode(&mut out);
    out.into_boxed_slice()
}

/// The host key and entry [`pack`] kept (`None` only for bytes it did not write).
fn unpack(bytes: &[u8]) -> Option<(String, Entry)> {
    let len = usize::from(u16::from_le_bytes(bytes.get(..2)?.try_into().ok()?));
    let host = std::str::from_utf8(bytes.get(2..2 + len)?).ok()?.to_owned();
    let entry = Entry::decode_all(bytes.get(2 + len..)?, 1)?.pop()?;
    Some((host, entry))
}

/// The host key [`pack`] kept, as bytes, without decoding the entry.
fn packed_host(bytes: &[u8]) -> Option<&[u8]> {
    let len = usize::from(u16::from_le_bytes(bytes.get(..2)?.try_into().ok()?));
    bytes.get(2..2 + len)
}

/// A sleeping URL's [`pack`]ed host and entry, with its URL's fingerprint.
type Packed = (Box<[u8]>, u128);

/// URLs waiting for their due time, by due time.
#[derive(Debug, Default)]
pub(crate) struct Sleeping {
    /// (due, insertion order) → the packed host and entry, and the URL's fingerprint.
    by_due: BTreeMap<(u64, u64), Packed>,
    /// URLs due per minute (due / 60), so that "due within the hour" is 60 additions.
    per_minute: BTreeMap<u64, u64>,
    /// Each sleeping URL's key, by its fingerprint (an operator's `recrawl` finds it).
    by_fp: HashMap<u128, (u64, u64)>,
    /// URLs sleeping per queue key (a queue with none is not looked for).
    per_key: HashMap<Box<str>, u64>,
    seq: u64,
}

impl Sleeping {
    /// Puts an entry with a visit to sleep until its due time; `fp` is its URL's fingerprint.
    pub(super) fn insert(&mut self, host: &str, entry: &Entry, fp: u128) {
        let due = entry.visit.as_ref().map_or(0, |v| v.due);
        self.seq += 1;
        let key = (due, self.seq);
        // The same URL twice cannot be; were it, the older entry would stay reachable by its
        // due time only.
        self.by_fp.insert(fp, key);
        self.by_due.insert(key, (pack(host, entry), fp));
        *self.per_minute.entry(due / 60).or_default() += 1;
        match self.per_key.get_mut(host) {
            Some(n) => *n += 1,
            None => {
                self.per_key.insert(host.into(), 1);
            }
        }
    }

    /// One URL of queue `host` no longer sleeps.
    fn unkey(&mut self, host: &str) {
        if let Some(n) = self.per_key.get_mut(host) {
            *n -= 1;
            if *n == 0 {
                self.per_key.remove(host);
            }
        }
    }

    /// Takes the sleeping entry of the URL with fingerprint `fp` out, if it sleeps.
    pub(super) fn remove(&mut self, fp: u128) -> Option<(String, Entry)> {
        let key = self.by_fp.remove(&fp)?;
        let taken = self.by_due.remove(&key);
        self.uncount(key.0);
        let taken = taken.and_then(|(packed, _)| unpack(&packed));
        if let Some((host, _)) = &taken {
            self.unkey(host);
        }
        taken
    }

    fn uncount(&mut self, due: u64) {
        if let Some(n) = self.per_minute.get_mut(&(due / 60)) {
            *n -= 1;
            if *n == 0 {
                self.per_minute.remove(&(due / 60));
            }
        }
    }

    /// Up to `max` entries due at `now` (Unix seconds), earliest first.
    pub(super) fn take_due(&mut self, now: u64, max: usize) -> Vec<(String, Entry)> {
        let mut out = Vec::new();
        while out.len() < max {
            match self.by_due.first_key_value() {
                Some((&(due, _), _)) if due <= now => {
                    if let Some((key, (packed, fp))) = self.by_due.pop_first() {
                        if self.by_fp.get(&fp) == Some(&key) {
                            self.by_fp.remove(&fp);
                        }
                        if let Some((host, entry)) = unpack(&packed) {
                            self.unkey(&host);
                            out.push((host, entry));
                        }
                    }
                    self.uncount(due);
                }
                _ => break,
            }
        }
        out
    }

    /// The earliest due time, Unix seconds.
    pub(super) fn next_due(&self) -> Option<u64> {
        self.by_due.first_key_value().map(|(&(due, _), _)| due)
    }

    /// URLs due by the end of the minute `until` (Unix seconds) falls in.
    pub(super) fn due_by(&self, until: u64) -> u64 {
        self.per_minute.range(..=until / 60).map(|(_, n)| n).sum()
    }

    /// The sleeping entry of the URL with fingerprint `fp`, if it sleeps (left in place).
    pub(super) fn peek(&self, fp: u128) -> Option<(String, Entry)> {
        let key = self.by_fp.get(&fp)?;
        self.by_due.get(key).and_then(|(packed, _)| unpack(packed))
    }

    /// Takes out every URL sleeping in the queue `key` that `drop` picks (every one: `|_|
    /// true`).
    pub(super) fn drain_key(&mut self, key: &str, drop: impl Fn(&Entry) -> bool) -> Vec<Entry> {
        if !self.per_key.contains_key(key) {
            return Vec::new();
        }
        let taken: Vec<(u64, u64)> = self
            .by_due
            .iter()
            .filter(|(_, (packed, _))| packed_host(packed) == Some(key.as_bytes()))
            .filter(|(_, (packed, _))| unpack(packed).is_none_or(|(_, e)| drop(&e)))
            .map(|(k, _)| *k)
            .collect();
        let mut out = Vec::with_capacity(taken.len());
        for k in taken {
            if let Some((packed, fp)) = self.by_due.remove(&k) {
                if self.by_fp.get(&fp) == Some(&k) {
                    self.by_fp.remove(&fp);
                }
                self.uncount(k.0);
                self.unkey(key);
                out.extend(unpack(&packed).map(|(_, e)| e));
            }
        }
        out
    }

    /// URLs sleeping in the queue `key` (all of them when `None`), read by their packed key.
    pub(super) fn len_of(&self, key: Option<&str>) -> u64 {
        match key {
            None => self.by_due.len() as u64,
            Some(k) => self.per_key.get(k).copied().unwrap_or(0),
        }
    }

    /// Calls `f` with each URL sleeping in the queue `key` (every one when `None`) and its
    /// queue, earliest due first.
    pub(super) fn walk(&self, key: Option<&str>, mut f: impl FnMut(&str, &Entry)) {
        for (packed, _) in self.by_due.values() {
            if key.is_some_and(|k| packed_host(packed) != Some(k.as_bytes())) {
                continue;
            }
            if let Some((host, entry)) = unpack(packed) {
                f(&host, &entry);
            }
        }
    }

    /// URLs sleeping.
    pub(super) fn len(&self) -> usize {
        self.by_due.len()
    }

    /// Whether none is sleeping.
    pub(super) fn is_empty(&self) -> bool {
        self.by_due.is_empty()
    }
}

impl super::LocalFrontier {
    /// Moves URLs now due again into their hosts' queues (a bounded number); returns the
    /// next due time of those still sleeping, as an instant to wake at.
    pub(super) fn promote_due(&self, sched: &mut Scheduler) -> Option<Instant> {
        let mut sleeping = self.sleeping();
        if sleeping.is_empty() {
            return None;
        }
        let now = unix_now();
        for (host, mut entry) in sleeping.take_due(now, PROMOTE_AT_ONCE) {
            entry.woken();
            sched.push(&host, entry);
        }
        sleeping.next_due().map(|due| {
            // Due this second: look again shortly (more than a call's worth was due).
            let wait = due.saturating_sub(now).max(u64::from(due <= now));
            Instant::now() + Duration::from_secs(wait)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::visit::Visit;
    use recrawl::History;

    #[test]
    fn due_entries_come_out_earliest_first_and_bounded() {
        let mut s = Sleeping::default();
        for (id, due) in [(1, 90), (2, 10), (3, 20), (4, 10)] {
            let mut e = Entry::new(format!("http://a.test/{id}"), 0, None);
            e.id = id;
            e.visit = Some(Box::new(Visit {
                due,
                history: History::default(),
            }));
            s.insert("a.test", &e, u128::from(id));
        }
        assert_eq!(s.next_due(), Some(10));
        // Counted to the minute.
        assert_eq!((s.due_by(0), s.due_by(59), s.due_by(60)), (3, 3, 4));
        assert!(s.take_due(9, 10).is_empty());
        let ids = |v: Vec<(String, Entry)>| v.into_iter().map(|(_, e)| e.id).collect::<Vec<_>>();
        let first = s.take_due(20, 2);
        // Kept packed, given back whole: host, URL, visit.
        assert!(first.iter().all(|(h, e)| h == "a.test"
            && e.url.ends_with(&e.id.to_string())
            && e.visit.is_some()));
        assert_eq!(ids(first), vec![2, 4]);
        assert_eq!(ids(s.take_due(20, 10)), vec![3]);
        assert_eq!((s.len(), s.next_due(), s.due_by(200)), (1, Some(90), 1));
        // Counted per queue as they come and go: a queue with none is not scanned.
        assert_eq!((s.len_of(Some("a.test")), s.len_of(Some("b.test"))), (1, 0));
        assert!(s.drain_key("b.test", |_| true).is_empty());
        assert_eq!(s.drain_key("a.test", |_| true).len(), 1);
        assert_eq!((s.len_of(Some("a.test")), s.len()), (0, 0));
    }
}
