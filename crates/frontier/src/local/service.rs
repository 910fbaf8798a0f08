//! `LocalFrontier` behind the [`Frontier`] trait, and the calls a running service makes:
//! seeds that widen the scope, leases without waiting (external fetchers), the host listing
//! and an operator's host controls.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::LocalFrontier;
use crate::api::{
    Admission, BoxFuture, Frontier, FrontierError, Lease, Link, Next, Outcome, Recrawled, Stats,
};
use crate::entry::Entry;
use crate::hosts::{paginate, HostControls, HostPage, HostQuery};

impl LocalFrontier {
    /// Seeds from the operator: their hosts and domains join the host scope, then they are
    /// offered (parent none, depth 0).
    pub fn seed_links(&self, links: Vec<Link>) -> Vec<Admission> {
        let (canonical, seeds) = crate::api::prepare_seeds(&self.canon, links);
        if !canonical.is_empty() {
            let mut scope = self.scope.write().unwrap_or_else(|e| e.into_inner());
            for u in &canonical {
                scope.add_seed(u);
            }
        }
        self.offer_links(None, seeds)
    }

    /// Queues `links` again although they were seen (see [`Frontier::requeue`]); budgets
    /// and scope are not applied again: an operator asked for them.
    pub fn requeue_links(&self, links: Vec<Link>) -> Vec<bool> {
        links
            .into_iter()
            .map(|l| {
                let Ok(canonical) = self.canon.canonicalize_url(l.url) else {
                    return false;
                };
                let host = super::queue_key(l.client.as_deref(), &canonical).to_owned();
                let fp = super::fingerprint(canonical.as_str());
                self.filter.put_hash(super::fp_hash(fp));
                let client = l
                    .client
                    .and_then(|c| c.settle(canonical.as_str(), super::host_key(&canonical)));
                let mut entry = crate::Entry::new(canonical.into(), l.depth, None);
                entry.client = client;
                entry.created = crate::Entry::now_secs();
                if let Some(due) = l.due {
                    entry.visit = Some(Box::new(crate::visit::Visit {
                        due,
                        history: recrawl::History::default(),
                    }));
                }
                if let Some(journal) = &self.journal {
                    journal.admitted(fp, &host, &mut entry);
                }
                if l.due.is_some() {
                    self.sched().know_host(&host);
                    self.sleeping().insert(&host, &entry, fp);
                    self.notify.notify_waiters();
                } else if self.sched().push(&host, entry) {
                    self.notify.notify_waiters();
                }
                true
            })
            .collect()
    }

    /// Makes each of `urls` (canonical) due at `at` (Unix seconds; now when `None` or past),
    /// if it sleeps until a due time (see [`Frontier::recrawl`]). The new due time is
    /// journaled like a completion's.
    pub fn recrawl_urls(&self, urls: &[url::Url], at: Option<u64>) -> Vec<Recrawled> {
        let now = super::unix_now();
        let due = at.unwrap_or(now).max(now);
        // One hold of the lock: the URL is never in neither place, where the crawl could
        // look finished.
        let mut sleeping = self.sleeping();
        let answers = urls
            .iter()
            .map(|u| {
                let fp = super::fingerprint(u.as_str());
                let Some((host, mut entry)) = sleeping.remove(fp) else {
                    return if self.filter.might_contain_hash(super::fp_hash(fp)) {
                        Recrawled::Queued
                    } else {
                        Recrawled::NeverSeen
                    };
                };
                if let Some(v) = entry.visit.as_mut() {
                    v.due = due;
                }
                if let Some(journal) = &self.journal {
                    journal.rescheduled(entry.id, false, &entry);
                }
                sleeping.insert(&host, &entry, fp);
                Recrawled::Scheduled
            })
            .collect();
        drop(sleeping);
        self.notify.notify_waiters();
        answers
    }

    /// A lease whose host is ready now, without waiting; `None` when none is due, the page
    /// budget is spent or the frontier is closed.
    pub fn try_lease(&self) -> Option<Lease> {
        self.lease_now(|sched, now| sched.next_ready(now).ok())
    }

    /// As [`try_lease`](Self::try_lease), from `host`'s queue alone.
    pub fn try_lease_from(&self, host: &str) -> Option<Lease> {
        self.lease_now(|sched, now| sched.next_of(host, now))
    }

    /// What `take` hands out now, unless the frontier is closed or the page budget spent.
    fn lease_now(
        &self,
        take: impl FnOnce(&mut crate::scheduler::Scheduler, Instant) -> Option<Lease>,
    ) -> Option<Lease> {
        if self.closed.load(Ordering::Acquire) {
            return None;
        }
        let mut sched = self.sched();
        // URLs due again are served here too: an external fetcher may be the only taker.
        self.promote_due(&mut sched);
        if self.budget_left(&sched) == Some(0) {
            return None;
        }
        take(&mut sched, Instant::now())
    }

    /// A page of hosts (see [`HostQuery`]).
    pub fn host_page(&self, query: &HostQuery) -> HostPage {
        // One host asked for: that host alone (a client may poll it), not every host.
        let mut all = match &query.host {
            Some(host) => self
                .sched()
                .host_info(host, Instant::now())
                .into_iter()
                .collect(),
            None => self.sched().host_infos(Instant::now()),
        };
        for h in &mut all {
            h.admitted = self.per_host.get(h.host.as_str()).map_or(0, |n| *n);
            h.max_pages = match self.host_budgets.get(h.host.as_str()) {
                Some(b) => Some(*b),
                None => self.cfg.max_pages_per_host,
            };
        }
        paginate(all, query)
    }

    /// Applies an operator's controls to `host`; `false` if no URL of it was ever queued.
    pub fn control_host(&self, host: &str, controls: &HostControls) -> bool {
        let known = self.sched().control(host, controls, Instant::now());
        if !known {
            return false;
        }
        if let Some(max) = controls.max_pages {
            self.host_budgets.insert(Arc::from(host), max);
        }
        match controls.recrawl_secs {
            Some(0) => {
                self.host_recrawl.remove(host);
            }
            Some(secs) => {
                self.host_recrawl.insert(Arc::from(host), secs);
            }
            None => {}
        }
        self.notify.notify_waiters();
        true
    }

    /// Politeness per address: `lease`'s host is fetched at address group `key` (see
    /// [`Frontier::place_host`](crate::Frontier::place_host)).
    pub fn place_host(&self, lease: &Lease, key: crate::AddressKey) -> bool {
        let (go, woke) =
            self.sched()
                .place(lease.host(), key, lease.handed_in_group(), Instant::now());
        if woke {
            self.notify.notify_waiters();
        }
        go
    }

    /// Drops every URL queued for `host` or asleep in its queue (an operator's delete of its
    /// queue) — with `days` > 0 those admitted more than `days` days ago only — : each is
    /// done, unfetched, for a resumed crawl too, and stays in the visited set. Returns how
    /// many were dropped (0 for an unknown host); leases out are not touched.
    pub fn delete_queue(&self, host: &str, days: u32) -> u64 {
        let before = Entry::purge_cutoff(days);
        let dropped = {
            let mut sched = self.sched();
            let drained = match before {
                None => sched.drain_host(host, self.journal.is_some()),
                Some(t) => sched.drain_created_before(host, t),
            };
            let Some((mut dropped, mut ids)) = drained else {
                return 0;
            };
            let asleep = self.sleeping().drain_key(host, |e| e.purged_by(before));
            dropped += asleep.len() as u64;
            ids.extend(asleep.iter().map(|e| e.id));
            // Under the scheduler lock, as a completion's done mark, so that a resumed crawl
            // sees the journal in the order the scheduler did.
            if let Some(journal) = &self.journal {
                for id in ids {
                    journal.done(id, false);
                }
            }
            dropped
        };
        // The crawl may have nothing left: waiting consumers see it end.
        self.notify.notify_waiters();
        dropped
    }
}

impl Frontier for LocalFrontier {
    fn offer<'a>(
        &'a self,
        parent: Option<&'a str>,
        links: Vec<Link>,
    ) -> BoxFuture<'a, Result<Vec<Admission>, FrontierError>> {
        Box::pin(std::future::ready(Ok(self.offer_links(parent, links))))
    }

    fn seed(&self, links: Vec<Link>) -> BoxFuture<'_, Result<Vec<Admission>, FrontierError>> {
        Box::pin(std::future::ready(Ok(self.seed_links(links))))
    }

    fn next(&self) -> BoxFuture<'_, Result<Next, FrontierError>> {
        Box::pin(async move { Ok(self.next_or_end().await) })
    }

    fn try_next(&self) -> BoxFuture<'_, Result<Option<Lease>, FrontierError>> {
        Box::pin(std::future::ready(Ok(self.try_lease())))
    }

    fn try_next_from<'a>(
        &'a self,
        host: &'a str,
    ) -> BoxFuture<'a, Result<Option<Lease>, FrontierError>> {
        Box::pin(std::future::ready(Ok(self.try_lease_from(host))))
    }

    fn requeue(&self, links: Vec<Link>) -> BoxFuture<'_, Result<Vec<bool>, FrontierError>> {
        Box::pin(std::future::ready(Ok(self.requeue_links(links))))
    }

    fn recrawl(
        &self,
        urls: Vec<url::Url>,
        at: Option<u64>,
    ) -> BoxFuture<'_, Result<Vec<Recrawled>, FrontierError>> {
        // Without a schedule only URLs a client gave a date sleep; they move all the same.
        Box::pin(std::future::ready(Ok(self.recrawl_urls(&urls, at))))
    }

    fn hosts(&self, query: HostQuery) -> BoxFuture<'_, Result<HostPage, FrontierError>> {
        Box::pin(std::future::ready(Ok(self.host_page(&query))))
    }

    fn set_host<'a>(
        &'a self,
        host: &'a str,
        controls: HostControls,
    ) -> BoxFuture<'a, Result<bool, FrontierError>> {
        Box::pin(std::future::ready(Ok(self.control_host(host, &controls))))
    }

    fn set_default_delay(&self, delay: Duration) -> BoxFuture<'_, Result<(), FrontierError>> {
        self.sched().set_default_delay(delay);
        Box::pin(std::future::ready(Ok(())))
    }

    fn set_memory_capacity(&self, entries: usize) -> bool {
        self.sched().set_capacity(entries);
        true
    }

    fn delete_queue<'a>(
        &'a self,
        host: &'a str,
        days: u32,
    ) -> BoxFuture<'a, Result<u64, FrontierError>> {
        Box::pin(std::future::ready(Ok(LocalFrontier::delete_queue(
            self, host, days,
        ))))
    }

    fn find_url<'a>(
        &'a self,
        url: &'a url::Url,
        key: &'a str,
    ) -> BoxFuture<'a, Result<crate::Found, FrontierError>> {
        Box::pin(std::future::ready(Ok(LocalFrontier::find_url(
            self, url, key,
        ))))
    }

    fn list_urls(
        &self,
        query: crate::UrlQuery,
    ) -> BoxFuture<'_, Result<crate::UrlPage, FrontierError>> {
        Box::pin(std::future::ready(Ok(LocalFrontier::list_urls(
            self, &query,
        ))))
    }

    fn complete(&self, lease: Lease, outcome: Outcome) -> BoxFuture<'_, Result<(), FrontierError>> {
        LocalFrontier::complete(self, lease, outcome);
        Box::pin(std::future::ready(Ok(())))
    }

    fn set_crawl_delay<'a>(
        &'a self,
        host: &'a str,
        delay: Duration,
    ) -> BoxFuture<'a, Result<(), FrontierError>> {
        LocalFrontier::set_crawl_delay(self, host, delay);
        Box::pin(std::future::ready(Ok(())))
    }

    fn host_contacted<'a>(&'a self, host: &'a str) -> BoxFuture<'a, Result<(), FrontierError>> {
        LocalFrontier::host_contacted(self, host);
        Box::pin(std::future::ready(Ok(())))
    }

    fn place_host<'a>(
        &'a self,
        lease: &'a Lease,
        key: crate::AddressKey,
    ) -> BoxFuture<'a, Result<bool, FrontierError>> {
        let go = LocalFrontier::place_host(self, lease, key);
        Box::pin(std::future::ready(Ok(go)))
    }

    fn groups_by_address(&self) -> bool {
        true
    }

    fn calls_can_fail(&self) -> bool {
        false
    }

    fn close(&self) {
        LocalFrontier::close(self);
    }

    fn stats(&self) -> BoxFuture<'_, Result<Stats, FrontierError>> {
        Box::pin(std::future::ready(Ok(LocalFrontier::stats(self))))
    }
}
