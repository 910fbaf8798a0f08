//! The heartbeat that keeps this process' leases alive: every third of a lease, each
//! partition's leases renewed in one call. And, with several partitions, the ticker: a
//! partition this process has not asked for a lease for a quarter of a clock step gets a *tick*
//! (the lease script handing nothing out), so that every partition's crawl clock, lease
//! expiry and due URLs keep moving while this process' workers are busy elsewhere — a
//! partition left uncalled for longer than a step would count the silence as an outage and
//! hold back its expiries (the grace after an outage), and a dead process' leases there
//! would never go back.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{ms, Shared};

/// Renews this process' leases every third of a lease, until the frontier is dropped; after
/// a failed renewal, every quarter of that (at most 250 ms) until one goes through, so that
/// leases are renewed at once when Redis answers again after an outage.
pub(super) async fn heartbeat(shared: std::sync::Weak<Shared>) {
    let period = match shared.upgrade() {
        Some(s) => s.lease / 3,
        None => return,
    };
    let mut wait = period;
    loop {
        tokio::time::sleep(wait).await;
        wait = period;
        let Some(s) = shared.upgrade() else { return };
        let ids: Vec<u64> = s
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .copied()
            .collect();
        if ids.is_empty() {
            continue;
        }
        let (lost, failed) = s.renew(&ids).await;
        if !lost.is_empty() {
            let mut held = s.held.lock().unwrap_or_else(|e| e.into_inner());
            let gone: Vec<u64> = lost.into_iter().filter(|id| held.remove(id)).collect();
            drop(held);
            if !gone.is_empty() {
                s.lost.fetch_add(gone.len() as u64, Ordering::Relaxed);
                tracing::warn!(
                    leases = gone.len(),
                    "leases expired before their heartbeat; other processes fetch those URLs"
                );
            }
        }
        if let Some(e) = failed {
            // Under the crawl clock, leases do not expire while Redis is unreachable or
            // full (no script runs); a renewal soon after it answers again keeps them.
            tracing::debug!(error = %e, "lease heartbeat failed; retrying");
            wait = (period / 4).min(Duration::from_millis(250));
        }
    }
}

/// Ticks every partition not asked for a lease for a quarter of a clock step (so none goes a
/// step without a call), until the frontier is dropped. Each tick runs on its own, at most
/// one per partition at a time: a master failing over holds up no other partition's ticks.
pub(super) async fn ticker(shared: std::sync::Weak<Shared>) {
    let period = match shared.upgrade() {
        Some(s) => (s.lease / 16).max(Duration::from_millis(10)),
        None => return,
    };
    loop {
        tokio::time::sleep(period).await;
        let Some(s) = shared.upgrade() else { return };
        for p in s.not_asked_for(period) {
            if s.ticking[p].swap(true, Ordering::AcqRel) {
                continue;
            }
            let weak = std::sync::Arc::downgrade(&s);
            tokio::spawn(async move {
                let Some(s) = weak.upgrade() else { return };
                match s.lease_once(None, Some("\n"), p).await {
                    Ok(answer) => s.note(p, &answer),
                    Err(e) => tracing::debug!(error = %e, partition = p, "tick failed"),
                }
                s.ticking[p].store(false, Ordering::Release);
            });
        }
    }
}

impl Shared {
    /// Renews this process' leases `tokens`, each partition's in one call, the partitions
    /// together (one that fails — its master failing over — holds up no other's): the
    /// tokens no longer held, and a failure if any.
    async fn renew(&self, tokens: &[u64]) -> (Vec<u64>, Option<redis::RedisError>) {
        let by_part: Vec<(usize, Vec<u64>)> = (0..self.parts())
            .map(|p| {
                let ids = tokens
                    .iter()
                    .map(|t| self.untoken(*t))
                    .filter(|(tp, _)| *tp == p)
                    .map(|(_, id)| id)
                    .collect();
                (p, ids)
            })
            .filter(|(_, ids): &(usize, Vec<u64>)| !ids.is_empty())
            .collect();
        let calls = by_part
            .iter()
            .map(|(p, ids)| async move {
                let mut call = self.invoke_on(*p, &self.scripts.renew);
                call.arg(self.holder.as_str()).arg(ms(self.lease));
                for id in ids {
                    call.arg(*id);
                }
                let gone: Result<Vec<u64>, _> = call.invoke_async(&mut self.conn.clone()).await;
                gone.map(|g| {
                    g.into_iter()
                        .map(|id| self.token(*p, id))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut lost = Vec::new();
        let mut failed = None;
        for r in super::parts::join_all(calls).await {
            match r {
                Ok(gone) => lost.extend(gone),
                Err(e) => failed = Some(e),
            }
        }
        (lost, failed)
    }
}
