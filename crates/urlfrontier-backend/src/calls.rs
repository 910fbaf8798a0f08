//! The RPCs this backend makes, each a method that answers in the engine's terms: the
//! token on every request, a deadline, and failures as [`FrontierError`]s.

use std::time::Duration;

use frontier::FrontierError;
use tonic::Request;
use urlfrontier_proto::v2::ack_message::Status as Ack;
use urlfrontier_proto::v2::url_item::Item;
use urlfrontier_proto::v2::{
    get_params, BlockQueueParams, CrawlLimitParams, GetParams, KnownUrlItem, Pagination,
    PurgeUrlParams, QueueDelayParams, QueueWithinCrawlParams, Stats, UrlInfo, UrlItem,
};

use crate::{frontier_error, UrlFrontierBackend};

/// Longest wait for one call.
const CALL_DEADLINE: Duration = Duration::from_secs(30);

/// A known item of `info`, refetchable from `date` (0: never).
pub(crate) fn known(info: UrlInfo, date: u64) -> UrlItem {
    UrlItem {
        item: Some(Item::Known(KnownUrlItem {
            info: Some(info),
            refetchable_from_date: date,
        })),
        id: String::new(),
        creation_date: 0,
    }
}

impl UrlFrontierBackend {
    /// `message` with the token and a deadline.
    pub(crate) fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        request.set_timeout(CALL_DEADLINE);
        if let Some(token) = &self.settings.token {
            if let Ok(value) = format!("Bearer {token}").parse() {
                request.metadata_mut().insert("authorization", value);
            }
        }
        request
    }

    /// PutURLs of `items` on one stream: each one's ack, in order (`FAIL` for one the
    /// service did not ack).
    pub(crate) async fn put(&self, mut items: Vec<UrlItem>) -> Result<Vec<Ack>, FrontierError> {
        for (i, item) in items.iter_mut().enumerate() {
            item.id = i.to_string();
        }
        let n = items.len();
        let stream = tonic::codegen::tokio_stream::iter(items);
        let mut acks = self
            .client
            .clone()
            .put_ur_ls(self.request(stream))
            .await
            .map_err(frontier_error)?
            .into_inner();
        let mut out = vec![Ack::Fail; n];
        while let Some(ack) = acks.message().await.map_err(frontier_error)? {
            if let Some(slot) = ack.id.parse::<usize>().ok().and_then(|i| out.get_mut(i)) {
                *slot = Ack::try_from(ack.status).unwrap_or(Ack::Fail);
            }
        }
        Ok(out)
    }

    /// GetURLs of at most `max` URLs (of queue `key` alone when not empty), held for the
    /// backend's hold.
    pub(crate) async fn get(&self, key: &str, max: u32) -> Result<Vec<UrlInfo>, FrontierError> {
        let params = GetParams {
            max_urls_per_queue: max,
            max_queues: max,
            key: key.to_owned(),
            delay_requestable: u32::try_from(self.settings.hold.as_secs().max(1))
                .unwrap_or(u32::MAX),
            item: Some(get_params::Item::CrawlId(self.settings.crawl_id.clone())),
        };
        let mut infos = self
            .client
            .clone()
            .get_ur_ls(self.request(params))
            .await
            .map_err(frontier_error)?
            .into_inner();
        let mut out = Vec::new();
        while let Some(info) = infos.message().await.map_err(frontier_error)? {
            out.push(info);
        }
        Ok(out)
    }

    /// GetStats of queue `key`, or of the whole crawl when empty.
    pub(crate) async fn stats_of(&self, key: &str) -> Result<Stats, FrontierError> {
        let params = QueueWithinCrawlParams {
            key: key.to_owned(),
            crawl_id: self.settings.crawl_id.clone(),
            local: false,
        };
        Ok(self
            .client
            .clone()
            .get_stats(self.request(params))
            .await
            .map_err(frontier_error)?
            .into_inner())
    }

    /// The crawl's queue keys from `start`, at most `size` (all when `inactive`).
    pub(crate) async fn queues(
        &self,
        start: u32,
        size: u32,
        inactive: bool,
    ) -> Result<(Vec<String>, u64), FrontierError> {
        let params = Pagination {
            start,
            size,
            include_inactive: inactive,
            crawl_id: self.settings.crawl_id.clone(),
            local: false,
        };
        let list = self
            .client
            .clone()
            .list_queues(self.request(params))
            .await
            .map_err(frontier_error)?
            .into_inner();
        Ok((list.values, list.total))
    }

    /// BlockQueueUntil `until` (Unix seconds; 0 lifts the block).
    pub(crate) async fn block(&self, key: &str, until: u64) -> Result<(), FrontierError> {
        let params = BlockQueueParams {
            key: key.to_owned(),
            time: until,
            crawl_id: self.settings.crawl_id.clone(),
            local: false,
        };
        self.client
            .clone()
            .block_queue_until(self.request(params))
            .await
            .map_err(frontier_error)?;
        Ok(())
    }

    /// SetDelay of queue `key` (every queue without its own when empty), whole seconds.
    pub(crate) async fn set_delay(&self, key: &str, delay: Duration) -> Result<(), FrontierError> {
        let secs = delay.as_secs() + u64::from(delay.subsec_nanos() > 0);
        let params = QueueDelayParams {
            key: key.to_owned(),
            delay_requestable: u32::try_from(secs).unwrap_or(u32::MAX),
            crawl_id: self.settings.crawl_id.clone(),
            local: false,
        };
        self.client
            .clone()
            .set_delay(self.request(params))
            .await
            .map_err(frontier_error)?;
        Ok(())
    }

    /// SetCrawlLimit of queue `key` (0 lifts it); `false` for a queue the service does not
    /// know.
    pub(crate) async fn limit(&self, key: &str, limit: u64) -> Result<bool, FrontierError> {
        let params = CrawlLimitParams {
            key: key.to_owned(),
            limit: u32::try_from(limit).unwrap_or(u32::MAX),
            crawl_id: self.settings.crawl_id.clone(),
            local: false,
        };
        match self
            .client
            .clone()
            .set_crawl_limit(self.request(params))
            .await
        {
            Ok(_) => Ok(true),
            Err(s) if s.code() == tonic::Code::NotFound => Ok(false),
            Err(s) => Err(frontier_error(s)),
        }
    }

    /// DeleteQueue of `key` — PurgeURLs of it with `days` > 0 (the URLs created more than
    /// `days` days ago): how many URLs it dropped.
    pub(crate) async fn delete(&self, key: &str, days: u32) -> Result<u64, FrontierError> {
        if days > 0 {
            let params = PurgeUrlParams {
                key: key.to_owned(),
                crawl_id: self.settings.crawl_id.clone(),
                days,
            };
            return Ok(self
                .client
                .clone()
                .purge_ur_ls(self.request(params))
                .await
                .map_err(frontier_error)?
                .into_inner()
                .value);
        }
        let params = QueueWithinCrawlParams {
            key: key.to_owned(),
            crawl_id: self.settings.crawl_id.clone(),
            local: false,
        };
        Ok(self
            .client
            .clone()
            .delete_queue(self.request(params))
            .await
            .map_err(frontier_error)?
            .into_inner()
            .value)
    }
}
