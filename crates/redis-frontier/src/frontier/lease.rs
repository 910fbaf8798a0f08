//! Leases: handing out URLs (waiting, with one poller per process) and completing them.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use frontier::{reschedule, End, Entry, FrontierError, Lease, Next, Outcome};
use redis::Value;

use super::completion::{hint_ms, unix_now, Again, Completion};
use super::parts::Quiet;
use super::{ms, Shared, IDLE};

/// What the lease script answered.
pub(super) enum Leased {
    Lease(Lease),
    Budget,
    Wait {
        due: Option<u64>,
        queued: u64,
        leases: u64,
        now: u64,
        /// URLs sleeping until due again (a recrawl schedule).
        scheduled: u64,
        /// When the first of them is due, on the crawl clock (ms).
        wake: Option<u64>,
        /// The partition's newest lease id and admitted count (the end's double collect).
        quiet: Quiet,
        /// A URL was due but the partition's share of the page budget is spent (see
        /// `budget.rs`).
        starved: bool,
    },
}

impl Leased {
    /// A wait answer's figures when the partition has nothing queued, leased or asleep.
    fn empty(&self) -> Option<Quiet> {
        match self {
            Leased::Wait {
                queued: 0,
                leases: 0,
                scheduled: 0,
                quiet,
                ..
            } => Some(*quiet),
            _ => None,
        }
    }

    /// A wait answer of a partition whose share of the budget is spent.
    pub(super) fn starved(&self) -> bool {
        matches!(self, Leased::Wait { starved: true, .. })
    }

    /// A starved answer, its due URL put off by `after` (no share free until then).
    pub(super) fn due_after(self, after: Duration) -> Self {
        match self {
            Leased::Wait {
                starved: true,
                now,
                queued,
                leases,
                scheduled,
                wake,
                quiet,
                ..
            } => Leased::Wait {
                due: Some(now + ms(after)),
                queued,
                leases,
                now,
                scheduled,
                wake,
                quiet,
                starved: true,
            },
            other => other,
        }
    }

    /// When a wait answer says a URL is due, from now (`None`: nothing due).
    fn due_in(&self) -> Option<Duration> {
        match self {
            Leased::Wait { due, now, wake, .. } => {
                let due = match (due, wake) {
                    (Some(a), Some(b)) => Some(*a.min(b)),
                    (a, b) => a.or(*b),
                };
                due.map(|d| Duration::from_millis(d.saturating_sub(*now)))
            }
            _ => None,
        }
    }
}

impl Shared {
    /// One call of the lease script, making `completion` first if given.
    /// One call of the lease script on partition `p` (the completion's, if given).
    pub(super) async fn lease_once(
        &self,
        completion: Option<&Completion>,
        only: Option<&str>,
        p: usize,
    ) -> Result<Leased, FrontierError> {
        let mut call = self.invoke_on(p, &self.scripts.lease);
        call.arg(self.holder.as_str())
            .arg(ms(self.lease))
            .arg(self.budget_arg())
            .arg(only.unwrap_or(""));
        if let Some(c) = completion {
            call.arg(self.untoken(c.id).1)
                .arg(c.kind)
                .arg(hint_ms(c.kind, c.hint))
                .arg(c.retry.as_slice())
                .arg(c.again.as_slice())
                .arg(c.again_secs)
                .arg(c.index.0.as_str())
                .arg(c.index.1.as_slice());
        }
        let reply: Vec<Value> = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        let bad = || FrontierError::Failed("unexpected reply of the lease script".into());
        let text = |v: &Value| match v {
            Value::BulkString(b) => Some(b.clone()),
            Value::SimpleString(s) => Some(s.clone().into_bytes()),
            _ => None,
        };
        let int = |v: &Value| match v {
            Value::Int(n) => Some(*n),
            _ => None,
        };
        match reply.first().and_then(text).as_deref() {
            Some(b"lease") if reply.len() == 7 => {
                let id = int(&reply[1])
                    .and_then(|n| u64::try_from(n).ok())
                    .map(|id| self.token(p, id))
                    .ok_or_else(bad)?;
                let host = text(&reply[2])
                    .and_then(|h| String::from_utf8(h).ok())
                    .ok_or_else(bad)?;
                let bytes = text(&reply[3]).ok_or_else(bad)?;
                let last = int(&reply[4]) == Some(1);
                let recrawl_secs = int(&reply[5]).and_then(|n| u32::try_from(n).ok());
                let grouped = int(&reply[6]) == Some(1);
                let Some(mut entry) = Entry::decode_all(&bytes, 1).and_then(|mut v| v.pop()) else {
                    // Not an entry this version writes: give it up rather than loop on it.
                    self.finish(id, "skip", None, None).await?;
                    return Err(FrontierError::Failed(format!(
                        "an undecodable queue entry of {host} was dropped"
                    )));
                };
                // Asleep until a client's date, never fetched: its fetch is the first.
                entry.woken();
                self.held
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(id);
                if let Some(secs) = recrawl_secs.filter(|s| *s > 0) {
                    self.host_recrawl
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(id, secs);
                }
                Ok(Leased::Lease(
                    Lease::new(entry, Arc::from(host), id)
                        .with_last_of_host(last)
                        .with_handed_in_group(grouped),
                ))
            }
            Some(b"budget") => Ok(Leased::Budget),
            Some(answer @ (b"wait" | b"quota")) if reply.len() == 9 => {
                let starved = answer == b"quota";
                let n = |i: usize| int(&reply[i]).ok_or_else(bad);
                Ok(Leased::Wait {
                    due: u64::try_from(n(1)?).ok(),
                    queued: u64::try_from(n(2)?).unwrap_or(0),
                    leases: u64::try_from(n(3)?).unwrap_or(0),
                    now: u64::try_from(n(4)?).unwrap_or(0),
                    scheduled: u64::try_from(n(5)?).unwrap_or(0),
                    wake: u64::try_from(n(6)?).ok(),
                    quiet: Quiet {
                        lease_seq: u64::try_from(n(7)?).unwrap_or(0),
                        admitted: u64::try_from(n(8)?).unwrap_or(0),
                    },
                    starved,
                })
            }
            _ => Err(bad()),
        }
    }

    /// One call of the completion script; `Ok(false)`: the lease was not out.
    pub(super) async fn finish(
        &self,
        id: u64,
        kind: &str,
        hint: Option<Duration>,
        retry: Option<&Entry>,
    ) -> Result<bool, FrontierError> {
        let mut bytes = Vec::new();
        if let Some(e) = retry {
            e.encode(&mut bytes);
        }
        self.finish_encoded(id, kind, hint, &bytes, (&[], 0, ("", &[])))
            .await
    }

    async fn finish_encoded(
        &self,
        id: u64,
        kind: &str,
        hint: Option<Duration>,
        retry: &[u8],
        again: (&[u8], u64, (&str, &[u8])),
    ) -> Result<bool, FrontierError> {
        let (p, lua_id) = self.untoken(id);
        let mut call = self.invoke_on(p, &self.scripts.complete);
        call.arg(lua_id)
            .arg(kind)
            .arg(hint_ms(kind, hint))
            .arg(retry)
            .arg(self.holder.as_str())
            .arg(again.0)
            .arg(again.1)
            .arg(again.2 .0)
            .arg(again.2 .1);
        let done: u8 = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        Ok(done == 1)
    }

    /// Under a recrawl schedule, what a final `outcome` of `lease` makes of it: its entry with
    /// the next visit, encoded, and the seconds until it is due (the script adds them to the
    /// server's clock, so every process agrees on due times). `None` when the URL is done.
    fn next_visit(&self, lease: &Lease, outcome: &Outcome) -> Option<Again> {
        let host_secs = self
            .host_recrawl
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&lease.token());
        let policy = &self.cfg.recrawl;
        if !outcome.is_final() {
            return None;
        }
        let mut entry = lease.entry().clone();
        let fp = frontier::fingerprint(&entry.url);
        let now = unix_now();
        let again = reschedule(
            policy,
            &mut entry,
            lease.visited(),
            outcome,
            now,
            fp,
            host_secs,
        );
        // A client's date applies with a schedule or without.
        if !(lease.apply_due_at(&mut entry, now) || again) {
            return None;
        }
        let due = entry.visit.as_ref().map_or(now, |v| v.due);
        let mut bytes = Vec::new();
        entry.encode(&mut bytes);
        let (bucket, field) = self.due_index(fp);
        Some(Again {
            entry: bytes,
            secs: due.saturating_sub(now).max(1),
            bucket,
            field,
        })
    }

    pub(super) async fn next(&self) -> Result<Next, FrontierError> {
        self.next_after(None).await.map_err(|(e, _)| e)
    }

    /// Completes `lease` and waits for the next URL, the completion made by the first lease
    /// call (one round trip where there were two).
    pub(super) async fn complete_and_next(
        &self,
        lease: Lease,
        outcome: Outcome,
    ) -> Result<Next, FrontierError> {
        let again = self.next_visit(&lease, &outcome);
        let mut completion = Completion::of(lease, outcome, again, &self.cfg.politeness);
        completion.defer(self.end_turn(completion.id).await);
        let was_held = self.unhold(completion.id);
        self.next_after(Some(&completion))
            .await
            .map_err(|(e, made)| {
                if !made && was_held {
                    // Not made: the heartbeat keeps it until the caller's retry makes it.
                    self.rehold(completion.id);
                }
                e
            })
    }

    /// Takes `id` out of the heartbeat's set before its completion is sent (a renewal
    /// crossing it would report it lost); whether it was in.
    fn unhold(&self, id: u64) -> bool {
        // A completion may give a page of the budget back: shares are worth asking for.
        *self.dry_until.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id)
    }

    fn rehold(&self, id: u64) {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id);
    }

    /// Records partition `p`'s answer in its hint.
    pub(super) fn note(&self, p: usize, leased: &Leased) {
        match leased {
            Leased::Lease(_) => self.answered(p, None),
            Leased::Wait { .. } => self.answered(p, Some(leased.due_in())),
            Leased::Budget => {}
        }
    }

    /// Waits for a URL, the first call making `completion` if given; an error says whether
    /// the completion was made before it.
    async fn next_after(
        &self,
        completion: Option<&Completion>,
    ) -> Result<Next, (FrontierError, bool)> {
        let mut pending = completion;
        let single = self.parts() == 1;
        loop {
            if self.closed.load(Ordering::Acquire) && pending.is_none() {
                return Ok(Next::End(End::Closed));
            }
            // Registered before looking, so a wake-up while the script runs is not missed.
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // The partitions to ask: the completion's first (it rides along); with one
            // partition, always that one.
            let order = match (single, pending) {
                (true, _) => vec![0],
                (false, Some(c)) => {
                    // The completion rides along when its partition is the best to ask next;
                    // else it goes alone first, so that a worker does not stay on one
                    // partition while others have URLs due earlier.
                    let own = self.untoken(c.id).0;
                    let order = self.lease_order();
                    if order.first().is_none_or(|p| *p == own) {
                        let rest = order.into_iter().filter(|p| *p != own);
                        std::iter::once(own).chain(rest).collect()
                    } else {
                        let index = (c.index.0.as_str(), c.index.1.as_slice());
                        let again = (c.again.as_slice(), c.again_secs, index);
                        if let Err(e) = self
                            .finish_encoded(c.id, c.kind, c.hint, &c.retry, again)
                            .await
                        {
                            return Err((e, false));
                        }
                        pending = None;
                        self.wake.notify_one();
                        order
                    }
                }
                (false, None) => self.lease_order(),
            };
            for p in order {
                let leased = match self.lease_once(pending, None, p).await {
                    Ok(l) => {
                        if pending.take().is_some() {
                            self.wake.notify_one();
                        }
                        l
                    }
                    Err(e) => return Err((e, pending.is_none())),
                };
                let leased = match self.with_share(leased, None, p, true).await {
                    Ok(l) => l,
                    Err(e) => return Err((e, true)),
                };
                self.note(p, &leased);
                match leased {
                    Leased::Lease(l) => {
                        // More may be ready: let the next waiting worker look.
                        self.wake.notify_one();
                        return Ok(Next::Lease(l));
                    }
                    Leased::Budget => {
                        self.wake.notify_waiters();
                        return Ok(Next::End(End::Budget));
                    }
                    Leased::Wait { .. } => {
                        if single && leased.empty().is_some() && !self.cfg.keep_open {
                            self.wake.notify_waiters();
                            return Ok(Next::End(End::Finished));
                        }
                    }
                }
            }
            match self.poller.try_lock() {
                Ok(_polling) => {
                    if !single && self.round_due() {
                        match self.round().await {
                            Ok(Some(next)) => return Ok(next),
                            Ok(None) => {}
                            Err(e) => return Err((e, true)),
                        }
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(self.nap()) => {}
                        _ = notified => {}
                    }
                }
                Err(_) => {
                    tokio::select! {
                        _ = tokio::time::sleep(IDLE) => {}
                        _ = notified => {}
                    }
                }
            }
        }
    }

    /// The poller's round over every partition (see `parts.rs`): a lease if one has a URL
    /// due, the end if this round and the one before found the crawl over, else nothing.
    async fn round(&self) -> Result<Option<Next>, FrontierError> {
        let mut quiet = Vec::with_capacity(self.parts());
        for p in 0..self.parts() {
            let leased = self.lease_once(None, None, p).await?;
            let leased = self.with_share(leased, None, p, true).await?;
            self.note(p, &leased);
            match leased {
                Leased::Lease(l) => {
                    *self.quiet.lock().unwrap_or_else(|e| e.into_inner()) = None;
                    self.wake.notify_one();
                    return Ok(Some(Next::Lease(l)));
                }
                Leased::Budget => {
                    self.wake.notify_waiters();
                    return Ok(Some(Next::End(End::Budget)));
                }
                Leased::Wait { .. } => quiet.extend(leased.empty()),
            }
        }
        let ended = {
            let mut last = self.quiet.lock().unwrap_or_else(|e| e.into_inner());
            let ended =
                quiet.len() == self.parts() && last.as_ref() == Some(&quiet) && !self.cfg.keep_open;
            if !ended {
                *last = (quiet.len() == self.parts()).then_some(quiet);
            }
            ended
        };
        if !ended {
            return Ok(None);
        }
        let end = if self.budget_spent().await? {
            End::Budget
        } else {
            End::Finished
        };
        // The other waiting workers' next round ends too (unless something changed). Woken
        // only now: one woken while this poller still held its lock would sleep a whole idle
        // interval before its round.
        self.wake.notify_waiters();
        Ok(Some(Next::End(end)))
    }

    pub(super) async fn try_next(&self) -> Result<Option<Lease>, FrontierError> {
        self.try_next_from(None).await
    }

    /// A URL due now, of `host` alone when given, without waiting.
    pub(super) async fn try_next_from(
        &self,
        host: Option<&str>,
    ) -> Result<Option<Lease>, FrontierError> {
        if self.closed.load(Ordering::Acquire) {
            return Ok(None);
        }
        // One host: its partition. Any: every partition, the likeliest first.
        let order = match host {
            Some(h) => vec![self.part_of(h)],
            None => {
                let first = self.lease_order();
                let rest = (0..self.parts()).filter(|p| !first.contains(p));
                let rest: Vec<usize> = rest.collect();
                [first, rest].concat()
            }
        };
        for p in order {
            let leased = self.lease_once(None, host, p).await?;
            let leased = self.with_share(leased, host, p, false).await?;
            self.note(p, &leased);
            match leased {
                Leased::Lease(l) => return Ok(Some(l)),
                Leased::Budget => return Ok(None),
                Leased::Wait { .. } => {}
            }
        }
        Ok(None)
    }

    /// Whether this process still holds `lease` (renewing it); a lease found gone counts as
    /// lost, as the heartbeat's do.
    pub(super) async fn hold(&self, lease: &Lease) -> Result<bool, FrontierError> {
        let id = lease.token();
        let (p, lua_id) = self.untoken(id);
        let mut call = self.invoke_on(p, &self.scripts.hold);
        call.arg(self.holder.as_str())
            .arg(ms(self.lease))
            .arg(lua_id);
        let held: u8 = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        if held == 1 {
            return Ok(true);
        }
        self.lost_lease(id);
        Ok(false)
    }

    /// Lease `id` was found gone at its fence: counted as lost, as the heartbeat's are.
    pub(super) fn lost_lease(&self, id: u64) {
        if self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id)
        {
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
        self.forget_turn(id);
        tracing::debug!(
            lease = id,
            "a lease expired before its record was written; another process fetches the URL"
        );
    }

    pub(super) async fn complete(
        &self,
        lease: Lease,
        outcome: Outcome,
    ) -> Result<(), FrontierError> {
        let again = self.next_visit(&lease, &outcome);
        let mut c = Completion::of(lease, outcome, again, &self.cfg.politeness);
        c.defer(self.end_turn(c.id).await);
        let was_held = self.unhold(c.id);
        // A completion that comes back after the lease expired changes nothing (`false`):
        // the URL was handed to another process, which completes it.
        let index = (c.index.0.as_str(), c.index.1.as_slice());
        let again = (c.again.as_slice(), c.again_secs, index);
        if let Err(e) = self
            .finish_encoded(c.id, c.kind, c.hint, &c.retry, again)
            .await
        {
            if was_held {
                self.rehold(c.id);
            }
            return Err(e);
        }
        self.wake.notify_one();
        Ok(())
    }
}
