//! [`Frontier`] over the service's RPCs ([`crate::calls`]).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use frontier::{
    host_key, prepare_seeds, queue_key, Admission, BoxFuture, End, Entry, Found, Frontier,
    FrontierError, HostControls, HostPage, HostQuery, Lease, Link, Next, OutOfScope, Outcome,
    Recrawled, Stats, UrlPage, UrlQuery,
};
use url::Url;
use urlfrontier_proto::v2::ack_message::Status as Ack;
use urlfrontier_proto::v2::url_item::Item;
use urlfrontier_proto::v2::{DiscoveredUrlItem, UrlInfo, UrlItem};

use crate::calls::known;
use crate::fields::{entry_of, info_of, set_attempt};
use crate::UrlFrontierBackend;

/// How long a waiting `next` goes without asking the service again.
const POLL: Duration = Duration::from_millis(25);

/// The longest a waiting `next` goes without asking the service again.
const MAX_POLL: Duration = Duration::from_millis(400);

/// The latest date the service takes (2100-01-01, Unix seconds).
const LATEST_DATE: u64 = 4_102_444_800;

/// Queue keys asked per ListQueues.
pub(crate) const QUEUES_AT_ONCE: u32 = 10_000;

pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whole seconds of `d`, rounded up.
fn secs_up(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

impl UrlFrontierBackend {
    /// Offers `links` found on `parent`: refused here by the scope, or put as discovered (as
    /// known with its date when a link has one).
    async fn offer_links(
        &self,
        parent: Option<&str>,
        links: Vec<Link>,
    ) -> Result<Vec<Admission>, FrontierError> {
        let mut out: Vec<Option<Admission>> = vec![None; links.len()];
        let mut put = Vec::new();
        {
            let scope = self.scope.read().unwrap_or_else(|e| e.into_inner());
            let mut refused = self.out_of_scope.lock().unwrap_or_else(|e| e.into_inner());
            for (i, l) in links.into_iter().enumerate() {
                let reason = match self.canon.canonicalize_url(l.url.clone()) {
                    Err(_) => Err(OutOfScope::Invalid),
                    Ok(_) if l.hops > self.cfg.max_redirects => Err(OutOfScope::Redirects),
                    Ok(c) => scope.check(&c, l.depth).map(|()| c),
                };
                let canonical = match reason {
                    Ok(c) => c,
                    Err(reason) => {
                        refused[reason.index()] += 1;
                        out[i] = Some(Admission::OutOfScope(reason));
                        continue;
                    }
                };
                let key = queue_key(l.client.as_deref(), &canonical).to_owned();
                let mut entry =
                    Entry::new(canonical.to_string(), l.depth, parent.map(str::to_owned));
                entry.hops = l.hops;
                entry.via = l.via;
                entry.sitemap = l.sitemap;
                entry.lastmod = l.lastmod;
                entry.client = l
                    .client
                    .and_then(|c| c.settle(canonical.as_str(), host_key(&canonical)));
                let info = info_of(&entry, &key, &self.settings.crawl_id);
                let item = match l.due {
                    Some(date) => known(info, date.max(1)),
                    None => UrlItem {
                        item: Some(Item::Discovered(DiscoveredUrlItem { info: Some(info) })),
                        id: String::new(),
                        creation_date: 0,
                    },
                };
                put.push((i, key, item));
            }
        }
        self.offered.fetch_add(out.len() as u64, Ordering::Relaxed);
        if !put.is_empty() {
            let mut at = Vec::with_capacity(put.len());
            let mut items = Vec::with_capacity(put.len());
            for (i, key, item) in put {
                at.push((i, key));
                items.push(item);
            }
            let acks = self.put(items).await?;
            if acks.contains(&Ack::Fail) {
                return Err(FrontierError::Unavailable(
                    "the url-frontier service did not take every URL in time".into(),
                ));
            }
            let mut full: HashMap<String, bool> = HashMap::new();
            for ((i, key), ack) in at.into_iter().zip(acks) {
                if ack == Ack::Ok {
                    self.over.store(false, Ordering::Release);
                    self.admitted.fetch_add(1, Ordering::Relaxed);
                    out[i] = Some(Admission::Admitted);
                    continue;
                }
                // SKIPPED is a URL seen or one the service refused: with a budget per queue,
                // a queue at it says which.
                let at_budget = match (self.cfg.max_pages_per_host, full.get(&key)) {
                    (None, _) => false,
                    (Some(_), Some(f)) => *f,
                    (Some(max), None) => {
                        let s = self.stats_of(&key).await?;
                        let admitted = s.size + s.counts.get("completed").copied().unwrap_or(0);
                        let f = admitted >= max;
                        full.insert(key.clone(), f);
                        f
                    }
                };
                out[i] = Some(if at_budget {
                    let mut refused = self.out_of_scope.lock().unwrap_or_else(|e| e.into_inner());
                    refused[OutOfScope::HostBudget.index()] += 1;
                    Admission::OutOfScope(OutOfScope::HostBudget)
                } else {
                    self.duplicates.fetch_add(1, Ordering::Relaxed);
                    Admission::Duplicate
                });
            }
        }
        Ok(out
            .into_iter()
            .map(|a| a.unwrap_or(Admission::Duplicate))
            .collect())
    }

    /// Leases left under `max_pages` (`None`: no budget): records written and leases out
    /// count.
    fn budget_left(&self) -> Option<u64> {
        let used = self.pages.load(Ordering::Relaxed)
            + self.out().len() as u64
            + self.taking.load(Ordering::Acquire);
        self.cfg.max_pages.map(|max| max.saturating_sub(used))
    }

    /// Reads the service's count of completed URLs once, as the pages done so far.
    async fn read_pages(&self) -> Result<(), FrontierError> {
        if !self.pages_read.load(Ordering::Acquire) {
            let s = self.stats_of("").await?;
            let done = s.counts.get("completed").copied().unwrap_or(0);
            if !self.pages_read.swap(true, Ordering::AcqRel) {
                self.pages.fetch_add(done, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// One URL of queue `key` (any queue when empty) handed out now, as a lease. Its place
    /// under `max_pages` is taken before the service is asked (workers ask at once).
    async fn take(&self, key: &str) -> Result<Option<Lease>, FrontierError> {
        self.read_pages().await?;
        if self.closed.load(Ordering::Acquire) {
            return Ok(None);
        }
        self.taking.fetch_add(1, Ordering::AcqRel);
        let over = self.cfg.max_pages.is_some_and(|max| {
            let used = self.pages.load(Ordering::Relaxed)
                + self.out().len() as u64
                + self.taking.load(Ordering::Acquire);
            used > max
        });
        let got = if over {
            Ok(Vec::new())
        } else {
            self.get(key, 1).await
        };
        let mut lease = None;
        let mut unusable = Vec::new();
        for info in got.as_ref().map_or(&[][..], Vec::as_slice) {
            match self.lease_of(info.clone()) {
                Some(l) if lease.is_none() => lease = Some(l),
                Some(_) => {}
                None => unusable.push(info.clone()),
            }
        }
        self.taking.fetch_sub(1, Ordering::AcqRel);
        got?;
        if !unusable.is_empty() {
            // Not a URL this crawl's canonicaliser takes: finished at the service, as put,
            // or it would be handed out again after every hold.
            self.out_of_scope.lock().unwrap_or_else(|e| e.into_inner())
                [OutOfScope::Invalid.index()] += unusable.len() as u64;
            self.put(unusable.into_iter().map(|i| known(i, 0)).collect())
                .await?;
        }
        Ok(lease)
    }

    fn lease_of(&self, info: UrlInfo) -> Option<Lease> {
        let (key, entry) = entry_of(&self.canon, info.clone())?;
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let handed = tokio::time::Instant::now();
        self.out().insert(token, crate::Out { info, handed });
        Some(Lease::new(entry, Arc::from(key.as_str()), token))
    }

    /// The operator's block of `key` set here, if it still holds (Unix seconds).
    fn operator_block(&self, key: &str) -> Option<u64> {
        let now = unix_now();
        self.blocked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .copied()
            .filter(|until| *until > now)
    }

    /// The back-off of `key` after a failure of the fetch of lease `token`: from the base,
    /// doubled to the most by a fetch handed out since it last grew; the same for one
    /// handed out before (in flight together with the failure that grew it).
    fn back_off(&self, key: &str, token: u64) -> Duration {
        let p = &self.cfg.politeness;
        let mut backoff = self.backoff.lock().unwrap_or_else(|e| e.into_inner());
        let next = match backoff.get(key) {
            Some((b, since)) if token < *since => return *b,
            Some((b, _)) if !b.is_zero() => (*b * 2).min(p.max_backoff),
            _ => p.backoff_base,
        };
        let since = self.next_token.load(Ordering::Relaxed);
        backoff.insert(key.to_owned(), (next, since));
        next
    }

    /// Whether a success of lease `token` ends `key`'s back-off (it was handed out since the
    /// back-off last grew). The round is kept: a failure of a fetch from before it is not
    /// a new one.
    fn ends_back_off(&self, key: &str, token: u64) -> bool {
        let mut backoff = self.backoff.lock().unwrap_or_else(|e| e.into_inner());
        match backoff.get_mut(key) {
            Some((b, since)) if token >= *since && !b.is_zero() => {
                *b = Duration::ZERO;
                *since = self.next_token.load(Ordering::Relaxed);
                true
            }
            _ => false,
        }
    }
}

impl Frontier for UrlFrontierBackend {
    fn offer<'a>(
        &'a self,
        parent: Option<&'a str>,
        links: Vec<Link>,
    ) -> BoxFuture<'a, Result<Vec<Admission>, FrontierError>> {
        Box::pin(self.offer_links(parent, links))
    }

    fn seed(&self, links: Vec<Link>) -> BoxFuture<'_, Result<Vec<Admission>, FrontierError>> {
        Box::pin(async move {
            let (canonical, seeds) = prepare_seeds(&self.canon, links);
            {
                let mut scope = self.scope.write().unwrap_or_else(|e| e.into_inner());
                for u in &canonical {
                    scope.add_seed(u);
                }
            }
            self.offer_links(None, seeds).await
        })
    }

    fn next(&self) -> BoxFuture<'_, Result<Next, FrontierError>> {
        Box::pin(async move {
            // While nothing is due, ask less often: 25 ms doubling to 400 ms.
            let mut poll = POLL;
            loop {
                if self.closed.load(Ordering::Acquire) {
                    return Ok(Next::End(End::Closed));
                }
                if self.budget_left() == Some(0) && self.out().is_empty() {
                    return Ok(Next::End(End::Budget));
                }
                if let Some(lease) = self.take("").await? {
                    return Ok(Next::Lease(lease));
                }
                if !self.cfg.keep_open && self.out().is_empty() {
                    if self.over.load(Ordering::Acquire) {
                        return Ok(Next::End(End::Finished));
                    }
                    if let Ok(_asking) = self.asking.try_lock() {
                        let s = self.stats_of("").await?;
                        let asleep = s.counts.get("scheduled").copied().unwrap_or(0);
                        if s.size == 0 && asleep == 0 {
                            self.over.store(true, Ordering::Release);
                            return Ok(Next::End(End::Finished));
                        }
                    }
                }
                tokio::time::sleep(poll).await;
                poll = (poll * 2).min(MAX_POLL);
            }
        })
    }

    fn try_next(&self) -> BoxFuture<'_, Result<Option<Lease>, FrontierError>> {
        Box::pin(self.take(""))
    }

    fn try_next_from<'a>(
        &'a self,
        host: &'a str,
    ) -> BoxFuture<'a, Result<Option<Lease>, FrontierError>> {
        Box::pin(self.take(host))
    }

    fn complete(&self, lease: Lease, outcome: Outcome) -> BoxFuture<'_, Result<(), FrontierError>> {
        Box::pin(async move {
            let Some(out) = self.out().remove(&lease.token()) else {
                return Ok(()); // completed already
            };
            let key = lease.host().to_owned();
            let now = unix_now();
            // Named as the service gave it, so that it finds it whatever this process made of
            // it; a retry carries its attempt.
            let mut info = out.info.clone();
            let handed = entry_of(&self.canon, out.info.clone()).map(|(_, e)| e.client);
            if handed.as_ref() != Some(&lease.entry().client) {
                // Its string and metadata were replaced (a client's update, when this crawl
                // is itself a url-frontier service): those go back.
                let fresh = info_of(lease.entry(), &key, &self.settings.crawl_id);
                info.url = fresh.url;
                info.metadata = fresh.metadata;
            }
            let date = match &outcome {
                Outcome::Done | Outcome::HostError { .. } | Outcome::Skipped => {
                    lease.due_at().unwrap_or(0)
                }
                Outcome::Retry { after } => {
                    set_attempt(&mut info, lease.entry().attempt.saturating_add(1));
                    let p = &self.cfg.politeness;
                    let wait = after
                        .unwrap_or_default()
                        .clamp(p.backoff_base, p.max_backoff);
                    now.saturating_add(secs_up(wait).max(1)).min(LATEST_DATE)
                }
                Outcome::Released => now.max(1),
            };
            let acks = match self.put(vec![known(info, date)]).await {
                Ok(acks) => acks,
                Err(e) => {
                    self.out().insert(lease.token(), out);
                    return Err(e);
                }
            };
            if acks.first() == Some(&Ack::Fail) {
                self.out().insert(lease.token(), out);
                return Err(FrontierError::Unavailable(
                    "the url-frontier service did not take the completion in time".into(),
                ));
            }
            // The completion is made: what follows is this process' own, and does not fail it.
            if outcome.is_recorded() {
                let _ = self.read_pages().await;
                self.pages.fetch_add(1, Ordering::Relaxed);
            }
            let backed_off = match outcome {
                Outcome::HostError { retry_after } | Outcome::Retry { after: retry_after } => {
                    let p = &self.cfg.politeness;
                    let wait = self
                        .back_off(&key, lease.token())
                        .max(retry_after.unwrap_or_default().min(p.max_backoff));
                    if wait.is_zero() {
                        Ok(())
                    } else {
                        // An operator's longer block stays.
                        let until = now
                            .saturating_add(secs_up(wait))
                            .max(self.operator_block(&key).unwrap_or(0))
                            .min(LATEST_DATE);
                        self.held_until
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(key.clone(), until);
                        self.block(&key, until).await
                    }
                }
                Outcome::Done if self.ends_back_off(&key, lease.token()) => {
                    self.held_until
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&key);
                    // Lifted, but not past an operator's block.
                    let until = self.operator_block(&key).unwrap_or(0);
                    self.block(&key, until).await
                }
                _ => Ok(()),
            };
            if let Err(e) = backed_off {
                tracing::warn!(error = %e, queue = %key, "the url-frontier service did not take a back-off");
            }
            Ok(())
        })
    }

    /// Whether the service still holds the URL for this process: handed out less than its
    /// hold ago, less a margin for the record's write (the protocol renews no hold: past it,
    /// the URL may be another fetcher's, and its record is not written here).
    fn hold<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<bool, FrontierError>> {
        let hold = self.settings.hold;
        let margin = (hold / 4).min(Duration::from_secs(5));
        let held = self
            .out()
            .get(&lease.token())
            .is_some_and(|o| o.handed.elapsed() + margin < hold);
        Box::pin(std::future::ready(Ok(held)))
    }

    fn set_crawl_delay<'a>(
        &'a self,
        host: &'a str,
        delay: Duration,
    ) -> BoxFuture<'a, Result<(), FrontierError>> {
        Box::pin(self.set_delay(host, delay))
    }

    fn host_contacted<'a>(&'a self, _host: &'a str) -> BoxFuture<'a, Result<(), FrontierError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn requeue(&self, links: Vec<Link>) -> BoxFuture<'_, Result<Vec<bool>, FrontierError>> {
        Box::pin(async move {
            let now = unix_now().max(1);
            let mut put = Vec::new();
            let mut out = vec![false; links.len()];
            for (i, l) in links.into_iter().enumerate() {
                let Ok(canonical) = self.canon.canonicalize_url(l.url.clone()) else {
                    continue;
                };
                let key = queue_key(l.client.as_deref(), &canonical).to_owned();
                let mut entry = Entry::new(canonical.to_string(), l.depth, None);
                entry.client = l
                    .client
                    .and_then(|c| c.settle(canonical.as_str(), host_key(&canonical)));
                let info = info_of(&entry, &key, &self.settings.crawl_id);
                put.push((i, known(info, l.due.unwrap_or(now).max(1))));
            }
            let (at, items): (Vec<usize>, Vec<UrlItem>) = put.into_iter().unzip();
            for (i, ack) in at.into_iter().zip(self.put(items).await?) {
                out[i] = ack == Ack::Ok;
            }
            if out.contains(&true) {
                self.over.store(false, Ordering::Release);
            }
            Ok(out)
        })
    }

    fn recrawl(
        &self,
        urls: Vec<Url>,
        at: Option<u64>,
    ) -> BoxFuture<'_, Result<Vec<Recrawled>, FrontierError>> {
        Box::pin(async move {
            // Only a URL asleep is moved: one queued or out keeps its turn, one never seen
            // stays unseen (a known item with a date would admit it).
            let date = at.unwrap_or(0).max(unix_now()).max(1);
            let mut out = Vec::with_capacity(urls.len());
            for u in &urls {
                out.push(match self.find_url(u, host_key(u)).await? {
                    Found::Asleep(entry) => {
                        let key = queue_key(entry.client.as_deref(), u).to_owned();
                        let info = info_of(&entry, &key, &self.settings.crawl_id);
                        match self.put(vec![known(info, date)]).await?.first() {
                            Some(Ack::Ok) => {
                                self.over.store(false, Ordering::Release);
                                Recrawled::Scheduled
                            }
                            _ => Recrawled::Queued,
                        }
                    }
                    Found::Queued(_) | Found::Seen => Recrawled::Queued,
                    Found::Unseen => Recrawled::NeverSeen,
                });
            }
            Ok(out)
        })
    }

    fn hosts(&self, query: HostQuery) -> BoxFuture<'_, Result<HostPage, FrontierError>> {
        Box::pin(self.hosts_page(query))
    }

    fn set_host<'a>(
        &'a self,
        host: &'a str,
        controls: HostControls,
    ) -> BoxFuture<'a, Result<bool, FrontierError>> {
        Box::pin(async move {
            if self.info_of_queue(host).await?.is_none() {
                return Ok(false);
            }
            if let Some(delay) = controls.delay {
                self.set_delay(host, delay).await?;
            }
            if let Some(block) = controls.block_for {
                let until = if block.is_zero() {
                    0
                } else {
                    unix_now() + secs_up(block)
                };
                self.block(host, until).await?;
                let mut blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
                match until {
                    0 => blocked.remove(host),
                    until => blocked.insert(host.to_owned(), until),
                };
            }
            if let Some(max) = controls.max_done {
                self.limit(host, max).await?;
                let mut limits = self.limits.lock().unwrap_or_else(|e| e.into_inner());
                match max {
                    0 => limits.remove(host),
                    max => limits.insert(host.to_owned(), max),
                };
            }
            Ok(true)
        })
    }

    fn set_default_delay(&self, delay: Duration) -> BoxFuture<'_, Result<(), FrontierError>> {
        Box::pin(self.set_delay("", delay))
    }

    fn delete_queue<'a>(
        &'a self,
        host: &'a str,
        days: u32,
    ) -> BoxFuture<'a, Result<u64, FrontierError>> {
        Box::pin(self.delete(host, days))
    }

    fn find_url<'a>(
        &'a self,
        url: &'a Url,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Found, FrontierError>> {
        Box::pin(self.find(url, key))
    }

    fn list_urls(&self, query: UrlQuery) -> BoxFuture<'_, Result<UrlPage, FrontierError>> {
        Box::pin(async move { self.list(query).await })
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    fn stats(&self) -> BoxFuture<'_, Result<Stats, FrontierError>> {
        Box::pin(self.figures())
    }
}
