//! Partitions (`frontier.partitions`, see [`crate::visited`]): which partition a call goes to,
//! lease tokens that name their partition, and where a waiting process asks for a lease.
//!
//! A host's queue, state, leases, schedule and visited bits live in its partition, so every
//! script still runs in one partition (one hash slot). What spans partitions is the
//! client's: an admission is one call per partition its links touch (sent together), the
//! figures are sums, and a lease is asked of one partition at a time — the one whose last
//! answer said it has a URL due first (`Hint`), every partition at least once per poll
//! interval so that leases of a dead process expire everywhere.
//!
//! **The end, without one atomic answer**: with one partition, one lease script's reply that
//! shows nothing queued, leased or asleep ends the crawl. With several, the poller collects
//! every partition's answer in a *round*, and the crawl ends after two consecutive rounds
//! that both show every partition empty with the same newest lease id and admitted count:
//! every new queue entry needs an admission or a lease (a requeue's entry stays queued until
//! leased), so each partition was empty through the instant between the two rounds —
//! together, the one consistent cut that one reply gives.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use super::{Shared, POLL};

/// A partition's last answer to a lease call, as the choice of the next one reads it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hint {
    /// When it has a URL due (`None`: nothing queued or asleep there).
    pub ready_at: Option<Instant>,
    /// When this process last asked it.
    pub asked: Option<Instant>,
}

impl Hint {
    pub(super) const NEW: Hint = Hint {
        ready_at: None,
        asked: None,
    };

    /// Worth a lease call at `now`: a URL may be due, or the partition was not asked for a
    /// poll interval (another process' admissions, expired leases).
    fn worth_asking(&self, now: Instant) -> bool {
        self.ready_at.is_some_and(|t| t <= now) || self.asked.is_none_or(|t| now >= t + POLL)
    }
}

/// A partition's figures in a wait answer, for the end's double collect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Quiet {
    /// The newest lease id handed out there.
    pub lease_seq: u64,
    /// URLs admitted there.
    pub admitted: u64,
}

impl Shared {
    /// Partitions of the crawl.
    pub(super) fn parts(&self) -> usize {
        self.parts.len()
    }

    /// The partition of queue `key`.
    pub(super) fn part_of(&self, key: &str) -> usize {
        crate::visited::partition_of(key, self.parts.len() as u32) as usize
    }

    /// The key prefix of partition `p`.
    pub(super) fn prefix(&self, p: usize) -> &str {
        self.parts[p].prefix()
    }

    /// The token of lease `id` of partition `p` (the id itself with one partition).
    pub(super) fn token(&self, p: usize, id: u64) -> u64 {
        let n = self.parts.len() as u64;
        id.saturating_mul(n) + p as u64
    }

    /// The partition and lease id of `token`.
    pub(super) fn untoken(&self, token: u64) -> (usize, u64) {
        let n = self.parts.len() as u64;
        ((token % n) as usize, token / n)
    }

    /// A call of `script` on partition `p`, with the arguments every script takes.
    pub(super) fn invoke_on<'s>(
        &self,
        p: usize,
        script: &'s redis::Script,
    ) -> redis::ScriptInvocation<'s> {
        let pol = &self.cfg.politeness;
        let prefix = self.prefix(p);
        let mut call = script.key(format!("{prefix}stats"));
        call.arg(prefix)
            .arg(super::ms(pol.delay))
            .arg(pol.max_per_host.max(1))
            .arg(super::ms(pol.backoff_base))
            .arg(super::ms(pol.max_backoff));
        call
    }

    /// The `EVALSHA` of `script` on partition `p` as a command (to send in a pipeline), with
    /// the arguments every script takes: the same call as [`Shared::invoke_on`]'s.
    pub(super) fn script_cmd(&self, p: usize, script: &redis::Script) -> redis::Cmd {
        let pol = &self.cfg.politeness;
        let prefix = self.prefix(p);
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(script.get_hash())
            .arg(1)
            .arg(format!("{prefix}stats"))
            .arg(prefix)
            .arg(super::ms(pol.delay))
            .arg(pol.max_per_host.max(1))
            .arg(super::ms(pol.backoff_base))
            .arg(super::ms(pol.max_backoff));
        cmd
    }

    /// The partitions to ask for a lease now, best first: those with a URL due (earliest
    /// first), then those not asked for a poll interval, from a rotating start so that the
    /// processes of a crawl do not all ask the same one.
    pub(super) fn lease_order(&self) -> Vec<usize> {
        let now = Instant::now();
        let hints = self.hints.lock().unwrap_or_else(|e| e.into_inner());
        let start = self
            .rotor
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let n = hints.len();
        let mut order: Vec<usize> = (0..n)
            .map(|i| (start + i) % n)
            .filter(|p| hints[*p].worth_asking(now))
            .collect();
        // Earliest due first; those due at no known time after (stable: the rotation stays).
        order.sort_by_key(|p| (hints[*p].ready_at.is_none(), hints[*p].ready_at));
        order
    }

    /// The partitions this process has not asked for a lease for `period`.
    pub(super) fn not_asked_for(&self, period: Duration) -> Vec<usize> {
        let now = Instant::now();
        let hints = self.hints.lock().unwrap_or_else(|e| e.into_inner());
        (0..hints.len())
            .filter(|p| hints[*p].asked.is_none_or(|t| now >= t + period))
            .collect()
    }

    /// Records partition `p`'s answer: a lease (more may be due: ask again first) or a wait
    /// until `due` ms from now (`None`: nothing due there).
    pub(super) fn answered(&self, p: usize, due_in: Option<Option<Duration>>) {
        let now = Instant::now();
        let mut hints = self.hints.lock().unwrap_or_else(|e| e.into_inner());
        hints[p] = Hint {
            ready_at: match due_in {
                None => Some(now),
                Some(d) => d.map(|d| now + d),
            },
            asked: Some(now),
        };
    }

    /// An admission into partition `p` here: it has a URL due now.
    pub(super) fn admitted_into(&self, p: usize) {
        let mut hints = self.hints.lock().unwrap_or_else(|e| e.into_inner());
        hints[p].ready_at = Some(Instant::now());
    }

    /// Whether the poller's round is due (at most one per poll interval); if so, it begins.
    pub(super) fn round_due(&self) -> bool {
        let now = Instant::now();
        let mut at = self.round_at.lock().unwrap_or_else(|e| e.into_inner());
        if at.is_some_and(|t| now < t + POLL) {
            return false;
        }
        *at = Some(now);
        true
    }

    /// How long the poller may sleep: until the first hint comes due, at most a poll interval.
    pub(super) fn nap(&self) -> Duration {
        let now = Instant::now();
        let hints = self.hints.lock().unwrap_or_else(|e| e.into_inner());
        hints
            .iter()
            .filter_map(|h| h.ready_at)
            .map(|t| t.saturating_duration_since(now))
            .min()
            .map_or(POLL, |d| d.clamp(Duration::from_millis(1), POLL))
    }
}

/// Runs `futures` together on this task: their outputs, in order.
pub(super) async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, o) in futures.iter_mut().zip(out.iter_mut()) {
            if o.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *o = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}
