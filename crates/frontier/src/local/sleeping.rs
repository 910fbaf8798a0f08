//! The recrawl schedule of [`LocalFrontier`](super::LocalFrontier): fetched URLs waiting for
//! their due time, and how a completion turns into the next one.
//!
//! Design choice: a sleeping URL is an ordinary queue [`Entry`] carrying its
//! [`Visit`](crate::Visit), kept in a map ordered by due time; when it is due it is pushed into
//! its host's queue like any URL, so politeness, robots.txt, budgets and the SSRF guard apply
//! to a refetch unchanged, and it never passes the visited set again. Promotion is bounded per
//! call ([`PROMOTE_AT_ONCE`]) so that one `next` never holds the scheduler lock for long.
//! Due times are Unix seconds of the wall clock: a clock stepped back makes URLs late, never
//! early.

use std::collections::{BTreeMap, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

use recrawl::{History, Observation, Policy, Schedule};

use crate::api::Outcome;
use crate::entry::Entry;
use crate::visit::{Visit, Visited};

/// Most due URLs moved into the host queues by one `next`.
pub(super) const PROMOTE_AT_ONCE: usize = 1024;

/// Now, in Unix seconds.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// URLs waiting for their due time, by due time.
#[derive(Debug, Default)]
pub(super) struct Sleeping {
    /// (due, admission id, tie-breaker) → (host key, entry).
    by_due: BTreeMap<(u64, u64, u64), (String, Entry)>,
    /// URLs due per minute (due / 60), so that "due within the hour" is 60 additions.
    per_minute: BTreeMap<u64, u64>,
    /// Each sleeping URL's key, by its fingerprint (an operator's `recrawl` finds it).
    by_fp: HashMap<u128, (u64, u64, u64)>,
    seq: u64,
}

impl Sleeping {
    /// Puts an entry with a visit to sleep until its due time.
    pub(super) fn insert(&mut self, host: String, entry: Entry) {
        let due = entry.visit.as_ref().map_or(0, |v| v.due);
        self.seq += 1;
        let key = (due, entry.id, self.seq);
        if let Some(old) = self.by_fp.insert(crate::fingerprint(&entry.url), key) {
            // The same URL twice (it cannot be, but a second entry must not be lost track of).
            self.by_fp.insert(crate::fingerprint(&entry.url), old);
        }
        self.by_due.insert(key, (host, entry));
        *self.per_minute.entry(due / 60).or_default() += 1;
    }

    /// Takes the sleeping entry of the URL with fingerprint `fp` out, if it sleeps.
    pub(super) fn remove(&mut self, fp: u128) -> Option<(String, Entry)> {
        let key = self.by_fp.remove(&fp)?;
        let taken = self.by_due.remove(&key);
        self.uncount(key.0);
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
                Some((&(due, _, _), _)) if due <= now => {
                    if let Some((key, (host, entry))) = self.by_due.pop_first() {
                        let fp = crate::fingerprint(&entry.url);
                        if self.by_fp.get(&fp) == Some(&key) {
                            self.by_fp.remove(&fp);
                        }
                        out.push((host, entry));
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
        self.by_due.first_key_value().map(|(&(due, _, _), _)| due)
    }

    /// URLs due by the end of the minute `until` (Unix seconds) falls in.
    pub(super) fn due_by(&self, until: u64) -> u64 {
        self.per_minute.range(..=until / 60).map(|(_, n)| n).sum()
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

/// Schedules `entry` again after a final `outcome` under `policy`: its visit becomes the next
/// due time and the history `visited` reports (or, when the fetcher said nothing — a record
/// of a URL not fetched, an external fetcher — the history it had, as of `now`). `false`
/// under [`Schedule::None`]: the URL is done.
pub(super) fn reschedule(
    policy: &Policy,
    entry: &mut Entry,
    visited: Option<&Visited>,
    outcome: &Outcome,
    now: u64,
    fingerprint: u128,
    host_secs: Option<u32>,
) -> bool {
    if policy.schedule == Schedule::None {
        return false;
    }
    let before = entry.visit.take();
    let (mut history, seen) = match visited {
        Some(v) => (v.history.clone(), v.seen),
        None => {
            let mut h = before
                .as_ref()
                .map_or_else(History::default, |v| v.history.clone());
            h.last_fetch = u32::try_from(now).unwrap_or(u32::MAX);
            let seen = match outcome {
                Outcome::Skipped => Observation::Skipped,
                _ => Observation::Failed,
            };
            (h, seen)
        }
    };
    let interval = match &before {
        None => policy.first_interval(host_secs),
        Some(v) => policy.next_interval(v.history.interval, seen, host_secs),
    };
    let Some(interval) = interval else {
        return false;
    };
    history.interval = interval;
    let due = policy.due_at(u64::from(history.last_fetch), interval, fingerprint as u64);
    entry.attempt = 0;
    entry.visit = Some(Box::new(Visit { due, history }));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(schedule: Schedule) -> Policy {
        Policy {
            schedule,
            interval_secs: 100,
            min_interval_secs: 10,
            max_interval_secs: 1_000,
            jitter: 0.0,
        }
    }

    #[test]
    fn a_completion_becomes_the_next_due_time() {
        let mut e = Entry::new("http://a.test/".into(), 0, None);
        assert!(!reschedule(
            &policy(Schedule::None),
            &mut e,
            None,
            &Outcome::Done,
            5,
            1,
            None,
        ));
        assert_eq!(e.visit, None);
        let p = policy(Schedule::Adaptive);
        let seen = |last_fetch, seen| Visited {
            history: History {
                last_fetch,
                status: 200,
                ..History::default()
            },
            seen,
        };
        e.attempt = 2;
        let first = seen(1_000, Observation::Changed);
        assert!(reschedule(
            &p,
            &mut e,
            Some(&first),
            &Outcome::Done,
            1_000,
            1,
            None,
        ));
        let v = e.visit.clone().unwrap();
        assert_eq!((v.due, v.history.interval, e.attempt), (1_100, 100, 0));
        // Unchanged: a fifth longer, from the fetch's time.
        let again = seen(1_100, Observation::Unchanged);
        assert!(reschedule(
            &p,
            &mut e,
            Some(&again),
            &Outcome::Done,
            1_101,
            1,
            None,
        ));
        assert_eq!(e.visit.as_ref().unwrap().due, 1_100 + 120);
        // No word from the fetcher (a record of a URL not fetched): the interval is kept and
        // the history stays, as of now.
        assert!(reschedule(&p, &mut e, None, &Outcome::Done, 1_300, 1, None));
        let v = e.visit.as_ref().unwrap();
        assert_eq!((v.due, v.history.status), (1_420, 200));
        // A host's own interval replaces the crawl's (from a first fetch on).
        let mut h = Entry::new("http://b.test/".into(), 0, None);
        let first = seen(2_000, Observation::Changed);
        assert!(reschedule(
            &p,
            &mut h,
            Some(&first),
            &Outcome::Done,
            2_000,
            1,
            Some(50)
        ));
        assert_eq!(h.visit.as_ref().unwrap().due, 2_050);
        // robots.txt rules it out: backs off.
        assert!(reschedule(
            &p,
            &mut e,
            None,
            &Outcome::Skipped,
            1_500,
            1,
            None
        ));
        assert_eq!(e.visit.as_ref().unwrap().history.interval, 240);
    }

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
            s.insert("a.test".into(), e);
        }
        assert_eq!(s.next_due(), Some(10));
        // Counted to the minute.
        assert_eq!((s.due_by(0), s.due_by(59), s.due_by(60)), (3, 3, 4));
        assert!(s.take_due(9, 10).is_empty());
        let ids = |v: Vec<(String, Entry)>| v.into_iter().map(|(_, e)| e.id).collect::<Vec<_>>();
        assert_eq!(ids(s.take_due(20, 2)), vec![2, 4]);
        assert_eq!(ids(s.take_due(20, 10)), vec![3]);
        assert_eq!((s.len(), s.next_due(), s.due_by(200)), (1, Some(90), 1));
    }
}
