//! The crawl-wide page budget over several partitions, the client's side: a partition whose
//! share is spent answers `quota` when it would hand out a URL, and this process asks
//! partition 0 for a share (the scripts' design is in `scripts/budget.rs`), sending every
//! partition's totals with it (a few calls, a few hundred times a crawl). When partition 0
//! has none left, every other partition gives back what it holds unused, and the grant is
//! asked again; when the pages of every partition reach the budget, the crawl ends
//! (`End::Budget`).
//!
//! Design choice: a share is the unspent budget over twice the partitions (at least one
//! page), so early grants are large (few calls) and the last pages go one at a time to
//! whichever partition has URLs. A process that found no share anywhere asks again only
//! after [`DRY`], so waiting workers do not make every partition give back in a loop.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use frontier::FrontierError;

use super::lease::Leased;
use super::Shared;

/// How long a process that found no share anywhere waits before asking again (a lease out
/// elsewhere may be given back meanwhile; a completion wakes the workers sooner).
const DRY: Duration = Duration::from_millis(100);

/// What asking for a share gave.
enum Share {
    /// Partition p has more: ask it again.
    Granted,
    /// Every partition's pages together reached the budget.
    Spent,
    /// Nothing free now (leases out hold the rest).
    None,
}

/// A partition's totals as partition 0 records them: `(partition, in, out)`.
type Report = (usize, u64, u64);

impl Shared {
    /// Whether the budget is split over partitions (several, and `max_pages` set).
    pub(super) fn shared_budget(&self) -> Option<u64> {
        self.cfg.max_pages.filter(|_| self.parts() > 1)
    }

    /// The lease script's `max_pages` argument: the budget with one partition, its negative
    /// (shares) with several, 0 for none.
    pub(super) fn budget_arg(&self) -> i64 {
        let max = i64::try_from(self.cfg.max_pages.unwrap_or(0)).unwrap_or(i64::MAX);
        if self.parts() > 1 {
            -max
        } else {
            max
        }
    }

    /// `leased`, partition `p`'s answer, with a spent share dealt with: a share asked for and
    /// the lease asked again (of `only` when given), or the budget's end, or a wait of
    /// [`DRY`] when no share is free. A waiting worker (`waiting`) asks no more than once per
    /// [`DRY`] (a lease call without waiting always asks).
    pub(super) async fn with_share(
        &self,
        mut leased: Leased,
        only: Option<&str>,
        p: usize,
        waiting: bool,
    ) -> Result<Leased, FrontierError> {
        for _ in 0..2 {
            if !leased.starved() {
                return Ok(leased);
            }
            let dry = *self.dry_until.lock().unwrap_or_else(|e| e.into_inner());
            if waiting && dry.is_some_and(|t| Instant::now() < t) {
                break;
            }
            // Workers starved together ask once: one that waited for another's share asks
            // the partition again instead (else each would take its own share, and the first
            // partition asked would hold most of the budget).
            let got = self.shares_got[p].load(Ordering::Acquire);
            let share = {
                let _asking = self.share_lock.lock().await;
                if self.shares_got[p].load(Ordering::Acquire) != got {
                    Share::Granted
                } else {
                    let share = self.share(p).await?;
                    if matches!(share, Share::Granted) {
                        self.shares_got[p].fetch_add(1, Ordering::AcqRel);
                    }
                    share
                }
            };
            match share {
                Share::Granted => leased = self.lease_once(None, only, p).await?,
                Share::Spent => return Ok(Leased::Budget),
                Share::None => {
                    *self.dry_until.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some(Instant::now() + DRY);
                    break;
                }
            }
        }
        Ok(leased.due_after(DRY))
    }

    /// Asks partition 0 for a share for partition `p`, with every partition's totals (so
    /// partition 0 first takes back what a failover of its master lost of them); when none
    /// is left, takes back what every other partition holds unused and asks again.
    async fn share(&self, p: usize) -> Result<Share, FrontierError> {
        let max = self.shared_budget().unwrap_or(0);
        let (reports, pages) = self.reports(p, false).await?;
        if pages >= max {
            return Ok(Share::Spent);
        }
        if self.grant(p, &reports).await? {
            return Ok(Share::Granted);
        }
        let (reports, _) = self.reports(p, true).await?;
        Ok(if self.grant(p, &reports).await? {
            Share::Granted
        } else {
            Share::None
        })
    }

    /// Every partition's totals (asked together) and their pages; with `give_back`, every
    /// partition but `p` gives back what it holds unused first.
    async fn reports(
        &self,
        p: usize,
        give_back: bool,
    ) -> Result<(Vec<Report>, u64), FrontierError> {
        let asked = (0..self.parts())
            .map(|q| self.quota(q, (0, 0), give_back && q != p))
            .collect();
        let mut reports = Vec::with_capacity(self.parts());
        let mut pages = 0;
        for (q, answer) in super::parts::join_all(asked).await.into_iter().enumerate() {
            let (qin, qout, q_pages) = answer?;
            pages += q_pages;
            reports.push((q, qin, qout));
        }
        Ok((reports, pages))
    }

    /// One grant for partition `p` (recording `reports` first), and `p` told its totals.
    /// Whether anything was granted.
    async fn grant(&self, p: usize, reports: &[Report]) -> Result<bool, FrontierError> {
        let max = self.shared_budget().unwrap_or(0);
        let mut call = self.invoke_on(0, &self.scripts.grant);
        call.arg(max).arg(p).arg(2 * self.parts());
        for (q, qin, qout) in reports {
            call.arg(*q).arg(*qin).arg(*qout);
        }
        let (g, r, n): (u64, u64, u64) = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        // Told even when nothing was granted: a partition whose master lost its totals in a
        // failover learns them again.
        self.quota(p, (g, r), false).await?;
        Ok(n > 0)
    }

    /// Partition `q` told its totals as partition 0 has them (`(0, 0)`: none known), giving
    /// back what it holds unused when `give_back`. Returns its `in`, `out` and pages.
    async fn quota(
        &self,
        q: usize,
        (g, r): (u64, u64),
        give_back: bool,
    ) -> Result<(u64, u64, u64), FrontierError> {
        let mut call = self.invoke_on(q, &self.scripts.quota);
        call.arg(g).arg(r).arg(u8::from(give_back));
        let (qin, qout, pages): (u64, u64, u64) = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        Ok((qin, qout, pages))
    }

    /// Every partition's pages together, when the budget is split and they reached it: the
    /// crawl's end is then the budget's, not a finished frontier's.
    pub(super) async fn budget_spent(&self) -> Result<bool, FrontierError> {
        let Some(max) = self.shared_budget() else {
            return Ok(false);
        };
        Ok(self.reports(0, false).await?.1 >= max)
    }
}
