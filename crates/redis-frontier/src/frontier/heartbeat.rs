//! The heartbeat that keeps this process' leases alive: every third of a lease, each
//! partition's leases renewed in one call.

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
        match s.renew(&ids).await {
            Ok(lost) if !lost.is_empty() => {
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
            Ok(_) => {}
            Err(e) => {
                // Under the crawl clock, leases do not expire while Redis is unreachable or
                // full (no script runs); a renewal soon after it answers again keeps them.
                tracing::debug!(error = %e, "lease heartbeat failed; retrying");
                wait = (period / 4).min(Duration::from_millis(250));
            }
        }
    }
}

impl Shared {
    /// Renews this process' leases `tokens`, each partition's in one call: the tokens no
    /// longer held.
    async fn renew(&self, tokens: &[u64]) -> Result<Vec<u64>, redis::RedisError> {
        let mut lost = Vec::new();
        for p in 0..self.parts() {
            let ids: Vec<u64> = tokens
                .iter()
                .map(|t| self.untoken(*t))
                .filter(|(tp, _)| *tp == p)
                .map(|(_, id)| id)
                .collect();
            if ids.is_empty() {
                continue;
            }
            let mut call = self.invoke_on(p, &self.scripts.renew);
            call.arg(self.holder.as_str()).arg(ms(self.lease));
            for id in &ids {
                call.arg(*id);
            }
            let gone: Vec<u64> = call.invoke_async(&mut self.conn.clone()).await?;
            lost.extend(gone.into_iter().map(|id| self.token(p, id)));
        }
        Ok(lost)
    }
}
