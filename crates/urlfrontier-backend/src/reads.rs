//! The backend's reads and figures: the queues as a listing (every queue's GetStats, cut as
//! the other frontiers cut a page), a URL's place (GetURLStatus), pages of URLs (ListURLs
//! with CountURLs), the crawl's figures; and robots.txt, which is not shared.

use std::sync::atomic::Ordering;
use std::time::Duration;

use frontier::{
    BoxFuture, Found, FrontierError, HostInfo, HostPage, HostQuery, OutOfScope, Stats, UrlPage,
    UrlQuery,
};
use url::Url;
use urlfrontier_proto::v2::url_item::Item;
use urlfrontier_proto::v2::{CountUrlParams, ListUrlParams, UrlStatusRequest};

use crate::fields::entry_of;
use crate::frontier_impl::{unix_now, QUEUES_AT_ONCE};
use crate::{frontier_error, UrlFrontierBackend};

impl UrlFrontierBackend {
    pub(crate) async fn info_of_queue(&self, key: &str) -> Result<Option<HostInfo>, FrontierError> {
        let s = self.stats_of(key).await?;
        if s.number_of_queues == 0 && s.size == 0 {
            return Ok(None);
        }
        let in_flight = s.in_process;
        Ok(Some(HostInfo {
            host: key.to_owned(),
            queued: s.size.saturating_sub(u64::from(in_flight)),
            in_flight,
            done: s.counts.get("completed").copied().unwrap_or(0),
            max_in_flight: self.cfg.politeness.max_per_host,
            max_pages: self.cfg.max_pages_per_host,
            max_done: self
                .limits
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(key)
                .copied(),
            backoff: self
                .backoff
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(key)
                .map(|(b, _)| *b)
                .unwrap_or_default(),
            blocked_for: self
                .blocked
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(key)
                .and_then(|until| until.checked_sub(unix_now()))
                .filter(|left| *left > 0)
                .map(Duration::from_secs),
            ready_in: self
                .held_until
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(key)
                .map(|until| Duration::from_secs(until.saturating_sub(unix_now())))
                .unwrap_or_default(),
            ..HostInfo::default()
        }))
    }

    /// A page of the queues as the other frontiers cut it ([`Frontier::hosts`]).
    pub(crate) async fn hosts_page(&self, query: HostQuery) -> Result<HostPage, FrontierError> {
        if let Some(key) = &query.host {
            let hosts: Vec<HostInfo> = self.info_of_queue(key).await?.into_iter().collect();
            let total = hosts.len() as u64;
            return Ok(HostPage {
                hosts,
                next: None,
                total,
            });
        }
        // Every queue's figures, then the page as the other frontiers cut it (sorted by
        // any figure, from a cursor): a GetStats per queue, an operator's call.
        let mut all = Vec::new();
        let mut start = 0u32;
        loop {
            let (keys, _) = self.queues(start, QUEUES_AT_ONCE, true).await?;
            let n = keys.len();
            for key in keys {
                all.extend(self.info_of_queue(&key).await?);
            }
            if n < QUEUES_AT_ONCE as usize {
                break;
            }
            start = start.saturating_add(QUEUES_AT_ONCE);
        }
        Ok(frontier::paginate(all, &query))
    }

    /// Where the service says `url` is ([`Frontier::find_url`]).
    pub(crate) async fn find(&self, url: &Url, key: &str) -> Result<Found, FrontierError> {
        let request = UrlStatusRequest {
            url: url.to_string(),
            key: key.to_owned(),
            crawl_id: self.settings.crawl_id.clone(),
        };
        let item = match self
            .client
            .clone()
            .get_url_status(self.request(request))
            .await
        {
            Ok(r) => r.into_inner(),
            Err(s) if s.code() == tonic::Code::NotFound => return Ok(Found::Unseen),
            Err(s) => return Err(frontier_error(s)),
        };
        let Some(Item::Known(k)) = item.item else {
            return Ok(Found::Seen);
        };
        if k.refetchable_from_date == 0 {
            return Ok(Found::Seen);
        }
        let Some((_, mut entry)) = k.info.and_then(|i| entry_of(&self.canon, i)) else {
            return Ok(Found::Seen);
        };
        entry.created = u32::try_from(item.creation_date).unwrap_or(0);
        if k.refetchable_from_date > unix_now() {
            entry.visit = Some(Box::new(frontier::Visit {
                due: k.refetchable_from_date,
                history: Default::default(),
            }));
            return Ok(Found::Asleep(entry));
        }
        Ok(Found::Queued(entry))
    }

    /// A page of the service's URLs and how many match ([`Frontier::list_urls`]).
    pub(crate) async fn list(&self, query: UrlQuery) -> Result<UrlPage, FrontierError> {
        let key = query.key.clone().unwrap_or_default();
        let crawl_id = self.settings.crawl_id.clone();
        let count = CountUrlParams {
            key: key.clone(),
            crawl_id: crawl_id.clone(),
            filter: query.filter.clone(),
            ignore_case: Some(query.ignore_case),
            local: None,
        };
        let matched = self
            .client
            .clone()
            .count_ur_ls(self.request(count))
            .await
            .map_err(frontier_error)?
            .into_inner()
            .value;
        let mut page = UrlPage {
            urls: Vec::new(),
            matched,
        };
        if query.limit == 0 {
            return Ok(page);
        }
        let list = ListUrlParams {
            start: u32::try_from(query.skip).unwrap_or(u32::MAX),
            size: u32::try_from(query.limit).unwrap_or(u32::MAX),
            key,
            crawl_id,
            local: false,
            filter: query.filter.clone(),
            ignore_case: Some(query.ignore_case),
        };
        let mut items = self
            .client
            .clone()
            .list_ur_ls(self.request(list))
            .await
            .map_err(frontier_error)?
            .into_inner();
        let now = unix_now();
        while let Some(item) = items.message().await.map_err(frontier_error)? {
            let Some(Item::Known(k)) = item.item else {
                continue;
            };
            let date = k.refetchable_from_date;
            if let Some((key, mut entry)) = k.info.and_then(|i| entry_of(&self.canon, i)) {
                entry.created = u32::try_from(item.creation_date).unwrap_or(0);
                let asleep = date > now;
                if asleep {
                    entry.visit = Some(Box::new(frontier::Visit {
                        due: date,
                        history: Default::default(),
                    }));
                }
                page.urls.push(frontier::ListedUrl { key, entry, asleep });
            }
        }
        Ok(page)
    }

    /// The service's figures with this process' own ([`Frontier::stats`]).
    pub(crate) async fn figures(&self) -> Result<Stats, FrontierError> {
        let s = self.stats_of("").await?;
        let refused = self
            .out_of_scope
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut stats = Stats {
            offered: self.offered.load(Ordering::Relaxed),
            admitted: self.admitted.load(Ordering::Relaxed),
            duplicates: self.duplicates.load(Ordering::Relaxed),
            out_of_scope: OutOfScope::ALL
                .iter()
                .zip(refused)
                .filter(|(_, n)| *n > 0)
                .map(|(r, n)| (*r, n))
                .collect(),
            queued: s.size.saturating_sub(u64::from(s.in_process)),
            in_flight: u64::from(s.in_process),
            hosts: s.number_of_queues,
            pages: self.pages.load(Ordering::Relaxed),
            ..Stats::default()
        };
        stats
            .extra
            .insert("scheduled", s.counts.get("scheduled").copied().unwrap_or(0));
        Ok(stats)
    }
}

/// robots.txt is not shared through a url-frontier service: each process fetches the
/// verdicts it needs (the client decides robots.txt, in the protocol's terms).
impl frontier::RobotsShare for UrlFrontierBackend {
    fn robots_shared<'a>(
        &'a self,
        _origin: &'a str,
    ) -> BoxFuture<'a, Result<frontier::SharedRobots, FrontierError>> {
        Box::pin(std::future::ready(Ok(frontier::SharedRobots::Fetch)))
    }

    fn share_robots<'a>(
        &'a self,
        _origin: &'a str,
        _record: Vec<u8>,
        _ttl: Duration,
    ) -> BoxFuture<'a, Result<(), FrontierError>> {
        Box::pin(std::future::ready(Ok(())))
    }
}
