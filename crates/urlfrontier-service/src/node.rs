//! The RPCs: each one [`engine::Control`] call on the crawl the request names ([`crate::crawls`]:
//! `DEFAULT`, the crawl the service was started with, or one its clients made). This
//! service is one node, so the protocol's `local` flags change nothing.
//!
//! The per-URL calls (GetURLStatus, ListURLs, CountURLs, PurgeURLs) are in
//! [`crate::url_reads`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use engine::crawls::{crawl_id, DEFAULT_CRAWL};
use engine::Control;
use frontier::{is_active, HostControls, HostPage, HostQuery, HostSort};
use tonic::codegen::BoxStream;
use tonic::{Request, Response, Status, Streaming};
use urlfrontier_proto::v2::log_level_params::Level;
use urlfrontier_proto::v2::url_frontier_server::UrlFrontier;
use urlfrontier_proto::v2::{
    Active, BatchAck, BlockQueueParams, Boolean, CountUrlParams, CrawlLimitParams,
    DeleteCrawlMessage, DiscoveredBatch, Empty, GetParams, ListUrlParams, Local, LogLevelParams,
    Long, Pagination, PurgeUrlParams, QueueDelayParams, QueueList, QueueWithinCrawlParams, Stats,
    StringList, UrlInfo, UrlItem, UrlStatusRequest,
};

use crate::crawls::CrawlUrls;
use crate::url_reads;
use crate::urls::{bounded, unix_now, LATEST_DATE};
use crate::LogLevels;

/// This service as a url-frontier node.
#[derive(Debug)]
pub(crate) struct Node {
    /// `host:port` of the gRPC listener (ListNodes).
    address: String,
    log_levels: Option<Arc<dyn LogLevels>>,
    crawls: Arc<CrawlUrls>,
}

impl Node {
    pub(crate) fn new(
        crawls: Arc<CrawlUrls>,
        address: String,
        log_levels: Option<Arc<dyn LogLevels>>,
    ) -> Self {
        Self {
            address,
            log_levels,
            crawls,
        }
    }

    /// The handle of the crawl `crawl_id` names, `None` when nobody made it.
    fn control(&self, crawl_id: &str) -> Result<Option<Control>, Status> {
        Ok(self.crawls.read(crawl_id)?.map(|u| u.control().clone()))
    }

    /// Applies `controls` to the queue `key` of the crawl `crawl_id`, as
    /// `PUT /api/v1/hosts/{host}` does; `false` when the crawl knows no such queue (SetDelay
    /// and BlockQueueUntil ignore it, as upstream; SetCrawlLimit says so).
    async fn set_queue(
        &self,
        crawl_id: &str,
        key: &str,
        controls: HostControls,
    ) -> Result<bool, Status> {
        match self.control(crawl_id)? {
            Some(control) => Ok(control.set_host(key, controls).await),
            None => Ok(false),
        }
    }

    /// A page of the crawl's hosts; `UNAVAILABLE` when the frontier does not answer.
    async fn hosts(control: &Control, query: HostQuery) -> Result<HostPage, Status> {
        control.host_page(query).await.ok_or_else(|| {
            Status::unavailable("the frontier cannot list its queues now; try again")
        })
    }

    /// Empties the queue `key` of the crawl `crawl_id`, or every queue of it (a page of
    /// hosts at a time): how many URLs were dropped.
    async fn empty(&self, crawl_id: &str, key: Option<String>, days: u32) -> Result<u64, Status> {
        let Some(urls) = self.crawls.read(crawl_id)? else {
            return Ok(0);
        };
        if let Some(key) = key {
            return urls.delete_queue(key, days).await;
        }
        let (mut dropped, mut skip) = (0, 0);
        loop {
            let query = HostQuery {
                sort: HostSort::Name,
                limit: MAX_QUEUES_LISTED as usize,
                skip,
                ..HostQuery::default()
            };
            let page = Self::hosts(urls.control(), query).await?;
            let listed = page.hosts.len();
            for host in page.hosts {
                dropped += urls.delete_queue(host.host, days).await?;
            }
            if listed < MAX_QUEUES_LISTED as usize {
                return Ok(dropped);
            }
            skip += listed;
        }
    }

    /// One queue's figures: `size` = URLs queued or held, `inProcess` = held,
    /// `counts.completed` = done, `counts.active_queues` = 1 when it is active (as in
    /// ListQueues); `numberOfQueues` = 1 while it holds URLs or has finished some (0 and
    /// zeros for a queue the crawl does not know, or whose URLs were all deleted).
    async fn queue_stats(control: &Control, crawl_id: &str, key: String) -> Result<Stats, Status> {
        let query = HostQuery {
            sort: HostSort::Name,
            limit: 1,
            host: Some(key),
            ..HostQuery::default()
        };
        let page = Self::hosts(control, query).await?;
        let mut stats = Stats {
            crawl_id: crawl_id.to_owned(),
            ..Stats::default()
        };
        if let Some(h) = page.hosts.first() {
            stats.size = h.queued + u64::from(h.in_flight);
            stats.in_process = h.in_flight;
            // A queue is there while it holds URLs or has finished some: one whose URLs
            // DeleteQueue dropped is gone, as upstream's.
            stats.number_of_queues = u64::from(stats.size > 0 || h.done > 0);
            stats.counts = HashMap::from([
                ("completed".to_owned(), h.done),
                ("active_queues".to_owned(), u64::from(is_active(h))),
            ]);
        }
        Ok(stats)
    }
}

/// The name a request's crawl ID gives back: `DEFAULT` for an empty one.
fn crawl_name(id: &str) -> String {
    crawl_id(id).unwrap_or(id).to_owned()
}

/// Most queue keys in one ListQueues answer.
const MAX_QUEUES_LISTED: u32 = 10_000;

/// The longest delay between a queue's hand-outs: a year, as the HTTP API's `delay_ms`.
const MAX_DELAY_SECS: u32 = 365 * 86_400;

/// Whether `target` can name a `tracing` target: a module path (`engine`,
/// `redis_frontier::lease`), or empty for every target.
fn is_target(target: &str) -> bool {
    target.len() <= 200
        && target
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':' || b == b'-')
}

#[tonic::codegen::async_trait]
impl UrlFrontier for Node {
    async fn list_nodes(&self, _: Request<Empty>) -> Result<Response<StringList>, Status> {
        Ok(Response::new(StringList {
            values: vec![self.address.clone()],
        }))
    }

    /// `DEFAULT` first, then the crawls clients made, by name.
    async fn list_crawls(&self, _: Request<Local>) -> Result<Response<StringList>, Status> {
        Ok(Response::new(StringList {
            values: self.crawls.crawls().ids(),
        }))
    }

    /// A crawl a client made is stopped and removed whole (its queues, visited set, state
    /// and output; in Redis, its keys); a put naming it later makes a new, empty one. The
    /// crawl the service runs on (`DEFAULT`) keeps running: its queues are emptied as
    /// DeleteQueue does, its visited set stays. Answers how many URLs were dropped (0 for a
    /// crawl nobody made).
    async fn delete_crawl(
        &self,
        request: Request<DeleteCrawlMessage>,
    ) -> Result<Response<Long>, Status> {
        let id = request.into_inner().value;
        let value = if id.is_empty() || id == DEFAULT_CRAWL {
            self.empty(DEFAULT_CRAWL, None, 0).await?
        } else {
            self.crawls.delete(&id).await?
        };
        Ok(Response::new(Long { value }))
    }

    /// The crawl's queue keys by name from offset `start`, at most `size` (0: 100; at most
    /// [`MAX_QUEUES_LISTED`]); only active queues (URLs queued or held, not blocked, not at
    /// their crawl limit: [`frontier::is_active`]), unless `include_inactive`. `total` counts the crawl's queues in any state.
    async fn list_queues(
        &self,
        request: Request<Pagination>,
    ) -> Result<Response<QueueList>, Status> {
        let params = request.into_inner();
        let size = match params.size {
            0 => 100,
            n => n.min(MAX_QUEUES_LISTED),
        };
        let mut list = QueueList {
            start: params.start,
            size,
            crawl_id: crawl_name(&params.crawl_id),
            ..QueueList::default()
        };
        let Some(control) = self.control(&params.crawl_id)? else {
            return Ok(Response::new(list));
        };
        let query = HostQuery {
            sort: HostSort::Name,
            limit: size as usize,
            skip: params.start as usize,
            active_only: !params.include_inactive,
            ..HostQuery::default()
        };
        let page = Self::hosts(&control, query).await?;
        list.values = page.hosts.into_iter().map(|h| h.host).collect();
        list.total = page.total;
        Ok(Response::new(list))
    }

    type GetURLsStream = BoxStream<UrlInfo>;

    async fn get_ur_ls(
        &self,
        request: Request<GetParams>,
    ) -> Result<Response<Self::GetURLsStream>, Status> {
        Ok(Response::new(
            self.crawls.get_urls(request.into_inner()).await?,
        ))
    }

    type PutURLsStream = BoxStream<urlfrontier_proto::v2::AckMessage>;

    async fn put_ur_ls(
        &self,
        request: Request<Streaming<UrlItem>>,
    ) -> Result<Response<Self::PutURLsStream>, Status> {
        Ok(Response::new(self.crawls.put_urls(request.into_inner())))
    }

    type PutDiscoveredStream = BoxStream<BatchAck>;

    /// Each batch's URLs are offered as the HTTP API's seeds are (canonicalised, checked
    /// against the visited set, queued by host; the client decides scope, so each widens the
    /// crawl's as a seed does), see [`CrawlUrls::put_discovered`]. A client `key` is not kept
    /// yet: queues are by host.
    async fn put_discovered(
        &self,
        request: Request<Streaming<DiscoveredBatch>>,
    ) -> Result<Response<Self::PutDiscoveredStream>, Status> {
        Ok(Response::new(
            self.crawls.put_discovered(request.into_inner()),
        ))
    }

    /// A whole crawl's figures: `size` = URLs queued or held, `inProcess` = held,
    /// `numberOfQueues` = queues, `counts.completed` = URLs done (pages: records written
    /// here, and URLs a client reported known), `counts.active_queues` = queues ListQueues
    /// lists without `include_inactive` (counted as it lists them: a pass over the queues),
    /// `counts.scheduled` = URLs asleep until a date. With a key, that queue's
    /// ([`Node::queue_stats`]).
    async fn get_stats(
        &self,
        request: Request<QueueWithinCrawlParams>,
    ) -> Result<Response<Stats>, Status> {
        let params = request.into_inner();
        let crawl_id = crawl_name(&params.crawl_id);
        let Some(control) = self.control(&params.crawl_id)? else {
            return Ok(Response::new(Stats {
                crawl_id,
                ..Stats::default()
            }));
        };
        // A hold that has passed counts as queued, not held, as soon as it passes.
        let releasing = control.clone();
        bounded(self.crawls.limits(), async move {
            releasing.release_expired().await
        })
        .await;
        if !params.key.is_empty() {
            return Self::queue_stats(&control, &crawl_id, params.key)
                .await
                .map(Response::new);
        }
        let stats = control.frontier_stats().await.map_err(|e| {
            Status::unavailable(format!("the frontier cannot give its figures now: {e}"))
        })?;
        // Every host's figures are read for any page (both frontiers), so all of them at
        // once costs what one ListQueues does.
        let active = HostQuery {
            sort: HostSort::Name,
            limit: usize::MAX,
            active_only: true,
            ..HostQuery::default()
        };
        let active = Self::hosts(&control, active).await?.hosts.len() as u64;
        let counts = HashMap::from([
            ("completed".to_owned(), stats.pages),
            ("active_queues".to_owned(), active),
            ("scheduled".to_owned(), stats.extra("scheduled")),
        ]);
        Ok(Response::new(Stats {
            size: stats.queued + stats.in_flight,
            in_process: u32::try_from(stats.in_flight).unwrap_or(u32::MAX),
            counts,
            number_of_queues: stats.hosts,
            crawl_id,
        }))
    }

    /// Drops every URL queued for the key and answers how many (0 for an unknown key).
    /// URLs held by clients stay held and are updated as usual; the dropped ones stay known
    /// to the visited set (a put of one again is SKIPPED), and the queue keeps its figures.
    async fn delete_queue(
        &self,
        request: Request<QueueWithinCrawlParams>,
    ) -> Result<Response<Long>, Status> {
        let params = request.into_inner();
        if params.key.is_empty() {
            return Err(Status::invalid_argument("DeleteQueue needs a key"));
        }
        let value = match self.crawls.read(&params.crawl_id)? {
            Some(urls) => urls.delete_queue(params.key, 0).await?,
            None => 0,
        };
        Ok(Response::new(Long { value }))
    }

    /// Nothing of a queue is handed out (or fetched) until `time` (Unix seconds; 0 or a past
    /// time lifts the block), as `PUT /api/v1/hosts/{host}`'s `blocked_until`. An unknown
    /// queue is ignored, as upstream.
    async fn block_queue_until(
        &self,
        request: Request<BlockQueueParams>,
    ) -> Result<Response<Empty>, Status> {
        let params = request.into_inner();
        if params.key.is_empty() {
            return Err(Status::invalid_argument("BlockQueueUntil needs a key"));
        }
        if params.time > LATEST_DATE {
            return Err(Status::invalid_argument(format!(
                "time {}: after 2100-01-01 (Unix seconds expected)",
                params.time
            )));
        }
        let controls = HostControls {
            block_for: Some(Duration::from_secs(params.time.saturating_sub(unix_now()))),
            ..HostControls::default()
        };
        self.set_queue(&params.crawl_id, &params.key, controls)
            .await
            .map(|_| Response::new(Empty {}))
    }

    /// `false` pauses every crawl (and those made later) as `POST /api/v1/pause` does (no
    /// fetch or hand-out starts; URLs are still taken), `true` resumes them.
    async fn set_active(&self, request: Request<Active>) -> Result<Response<Empty>, Status> {
        self.crawls.crawls().set_paused(!request.into_inner().state);
        Ok(Response::new(Empty {}))
    }

    /// Whether the crawl the service runs on hands out URLs (not paused, here or over HTTP).
    async fn get_active(&self, _: Request<Local>) -> Result<Response<Boolean>, Status> {
        Ok(Response::new(Boolean {
            state: !self.crawls.crawls().default_crawl().control.paused(),
        }))
    }

    /// A queue's delay between hand-outs, as `PUT /api/v1/hosts/{host}`'s `delay_ms` (a
    /// Crawl-delay or back-off still wins when longer). An unknown queue is ignored, as
    /// upstream. An empty key sets the delay of every queue without its own (in place of
    /// `politeness.delay_ms`; for every process of a shared frontier), from each queue's next
    /// hand-out.
    async fn set_delay(
        &self,
        request: Request<QueueDelayParams>,
    ) -> Result<Response<Empty>, Status> {
        let params = request.into_inner();
        if params.delay_requestable > MAX_DELAY_SECS {
            return Err(Status::invalid_argument(format!(
                "delay_requestable {}: at most {MAX_DELAY_SECS} s (a year), as over HTTP",
                params.delay_requestable
            )));
        }
        let delay = Duration::from_secs(u64::from(params.delay_requestable));
        if params.key.is_empty() {
            // Every queue without a delay of its own, from its next hand-out.
            let Some(control) = self.control(&params.crawl_id)? else {
                return Ok(Response::new(Empty {}));
            };
            return match bounded(self.crawls.limits(), async move {
                control.set_default_delay(delay).await
            })
            .await
            {
                Some(true) => Ok(Response::new(Empty {})),
                Some(false) => Err(Status::unavailable(
                    "the frontier refused the delay (the crawl is stopping); try again",
                )),
                None => Err(Status::unavailable(
                    "the frontier did not answer within service.request_timeout_secs",
                )),
            };
        }
        let controls = HostControls {
            delay: Some(delay),
            ..HostControls::default()
        };
        self.set_queue(&params.crawl_id, &params.key, controls)
            .await
            .map(|_| Response::new(Empty {}))
    }

    /// The protocol names Java packages; here `package` is a `tracing` target (a module
    /// path such as `engine` or `redis_frontier`), empty for every target.
    async fn set_log_level(
        &self,
        request: Request<LogLevelParams>,
    ) -> Result<Response<Empty>, Status> {
        let params = request.into_inner();
        let Some(levels) = &self.log_levels else {
            return Err(Status::unimplemented(
                "this process's log levels cannot be changed while it runs",
            ));
        };
        if !is_target(&params.package) {
            return Err(Status::invalid_argument(format!(
                "package `{}`: expected a module path such as `engine` or \
                 `redis_frontier::lease` (or empty: every module)",
                params.package.escape_debug()
            )));
        }
        let level = match Level::try_from(params.level) {
            Ok(Level::Trace) => tracing::Level::TRACE,
            Ok(Level::Debug) => tracing::Level::DEBUG,
            Ok(Level::Info) => tracing::Level::INFO,
            Ok(Level::Warn) => tracing::Level::WARN,
            Ok(Level::Error) => tracing::Level::ERROR,
            Err(_) => {
                return Err(Status::invalid_argument(format!(
                    "level {}: expected TRACE, DEBUG, INFO, WARN or ERROR",
                    params.level
                )))
            }
        };
        levels
            .set(&params.package, level)
            .map_err(Status::failed_precondition)?;
        tracing::info!(target = %params.package, %level, "log level set over gRPC");
        Ok(Response::new(Empty {}))
    }

    /// Most URLs of a queue completed, as `PUT /api/v1/hosts/{host}`'s `max_done`: reached
    /// (URLs held counted), the queue hands out nothing more and its URLs stay; 0 lifts the
    /// limit. A queue the crawl does not know is `NOT_FOUND`, as in upstream's newest tests.
    async fn set_crawl_limit(
        &self,
        request: Request<CrawlLimitParams>,
    ) -> Result<Response<Empty>, Status> {
        let params = request.into_inner();
        if params.key.is_empty() {
            return Err(Status::invalid_argument("SetCrawlLimit needs a key"));
        }
        let controls = HostControls {
            max_done: Some(u64::from(params.limit)),
            ..HostControls::default()
        };
        if self
            .set_queue(&params.crawl_id, &params.key, controls)
            .await?
        {
            Ok(Response::new(Empty {}))
        } else {
            Err(Status::not_found(format!(
                "no queue `{}` in this crawl",
                params.key
            )))
        }
    }

    /// Where a URL is ([`url_reads::status`]); `NOT_FOUND` for a crawl nobody made.
    async fn get_url_status(
        &self,
        request: Request<UrlStatusRequest>,
    ) -> Result<Response<UrlItem>, Status> {
        let r = request.into_inner();
        let crawl_id = crawl_name(&r.crawl_id);
        let Some(control) = self.control(&r.crawl_id)? else {
            return Err(Status::not_found(format!("no crawl `{crawl_id}`")));
        };
        let limits = self.crawls.limits();
        url_reads::status(&control, &crawl_id, &r.url, &r.key, limits)
            .await
            .map(Response::new)
    }

    type ListURLsStream = BoxStream<UrlItem>;

    /// A page of the URLs held, queued or asleep ([`url_reads::list`]).
    async fn list_ur_ls(
        &self,
        request: Request<ListUrlParams>,
    ) -> Result<Response<Self::ListURLsStream>, Status> {
        let r = request.into_inner();
        let crawl_id = crawl_name(&r.crawl_id);
        let limits = self.crawls.limits();
        let items = match self.control(&r.crawl_id)? {
            Some(control) => {
                let query =
                    url_reads::query(r.key, r.filter, r.ignore_case, r.start, r.size, limits);
                url_reads::list(&control, &crawl_id, query, limits).await?
            }
            None => Vec::new(),
        };
        let stream = tonic::codegen::tokio_stream::iter(items.into_iter().map(Ok));
        Ok(Response::new(Box::pin(stream)))
    }

    /// How many URLs ListURLs would list ([`url_reads::count`]).
    async fn count_ur_ls(
        &self,
        request: Request<CountUrlParams>,
    ) -> Result<Response<Long>, Status> {
        let r = request.into_inner();
        let limits = self.crawls.limits();
        let value = match self.control(&r.crawl_id)? {
            Some(control) => {
                let query = url_reads::query(r.key, r.filter, r.ignore_case, 0, 0, limits);
                url_reads::count(&control, query, limits).await?
            }
            None => 0,
        };
        Ok(Response::new(Long { value }))
    }

    /// Drops the URLs queued or asleep in the queue, or in every queue, created (admitted)
    /// more than `days` days ago — every one with `days` = 0. A URL admitted by a version
    /// that kept no creation date stays ([`frontier::Entry::purged_by`]); held URLs stay.
    async fn purge_ur_ls(
        &self,
        request: Request<PurgeUrlParams>,
    ) -> Result<Response<Long>, Status> {
        let r = request.into_inner();
        let key = (!r.key.is_empty()).then_some(r.key);
        let value = self.empty(&r.crawl_id, key, r.days).await?;
        Ok(Response::new(Long { value }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_module_paths() {
        for ok in ["", "engine", "redis_frontier::lease", "urlfrontier-service"] {
            assert!(is_target(ok), "{ok}");
        }
        for bad in ["a=b", "engine,warn", "x y", "é"] {
            assert!(!is_target(bad), "{bad}");
        }
    }
}
