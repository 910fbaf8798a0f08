//! How a final outcome under a recrawl schedule becomes a URL's next visit: the interval its
//! policy gives after what the fetch observed (or, when the fetcher said nothing, after a
//! failure or a skip), and the due time drawn from it. One function, shared by the local and
//! the Redis frontier, so both schedule alike.

use recrawl::{History, Observation, Policy, Schedule};

use crate::api::Outcome;
use crate::entry::Entry;
use crate::visit::{Visit, Visited};

/// Schedules `entry` again after a final `outcome` under `policy`: its visit becomes the next
/// due time and the history `visited` reports (or, when the fetcher said nothing — a record
/// of a URL not fetched, an external fetcher — the history it had, as of `now`). `false`
/// under [`Schedule::None`]: the URL is done.
pub fn reschedule(
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
}
