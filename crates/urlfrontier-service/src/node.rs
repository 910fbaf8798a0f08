//! The RPCs: each one [`engine::Control`] call on the running crawl, named `DEFAULT`
//! ([`crate::DEFAULT_CRAWL`]; an empty crawl ID means it too, as in the protocol). This
//! service is one node, so the protocol's `local` flags change nothing.
//!
//! An RPC this frontier does not serve yet answers `UNIMPLEMENTED` naming itself, which the
//! protocol's clients already handle (they probe PutDiscovered that way).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

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

use crate::crawl_id::{crawl, DEFAULT_CRAWL};
use crate::urls::{bounded, unix_now, Limits, Urls, LATEST_DATE};
use crate::LogLevels;

/// This service as a url-frontier node.
#[derive(Debug)]
pub(crate) struct Node {
    control: Control,
    /// `host:port` of the gRPC listener (ListNodes).
    address: String,
    log_levels: Option<Arc<dyn LogLevels>>,
    urls: Arc<Urls>,
}

impl Node {
    pub(crate) fn new(
        control: Control,
        address: String,
        log_levels: Option<Arc<dyn LogLevels>>,
        limits: Limits,
    ) -> Self {
        Self {
            urls: Arc::new(Urls::new(control.clone(), limits)),
            control,
            address,
            log_levels,
        }
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
        crawl(crawl_id)?;
        Ok(self.control.set_host(key, controls).await)
    }

    /// A page of the crawl's hosts; `UNAVAILABLE` when the frontier does not answer.
    async fn hosts(&self, query: HostQuery) -> Result<HostPage, Status> {
        self.control.host_page(query).await.ok_or_else(|| {
            Status::unavailable("the frontier cannot list its queues now; try again")
        })
    }

    /// One queue's figures: `size` = URLs queued or held, `inProcess` = held,
    /// `counts.completed` = done, `counts.active_queues` = 1 when it is active (as in
    /// ListQueues); `numberOfQueues` = 1 (0 and zeros for a queue the crawl does not know).
    async fn queue_stats(&self, crawl_id: &str, key: String) -> Result<Stats, Status> {
        let query = HostQuery {
            sort: HostSort::Name,
            limit: 1,
            host: Some(key),
            ..HostQuery::default()
        };
        let page = self.hosts(query).await?;
        let mut stats = Stats {
            crawl_id: crawl_id.to_owned(),
            ..Stats::default()
        };
        if let Some(h) = page.hosts.first() {
            stats.size = h.queued + u64::from(h.in_flight);
            stats.in_process = h.in_flight;
            stats.number_of_queues = 1;
            stats.counts = HashMap::from([
                ("completed".to_owned(), h.done),
                ("active_queues".to_owned(), u64::from(is_active(h))),
            ]);
        }
        Ok(stats)
    }
}

/// Most queue keys in one ListQueues answer.
const MAX_QUEUES_LISTED: u32 = 10_000;

/// The longest delay between a queue's hand-outs: a year, as the HTTP API's `delay_ms`.
const MAX_DELAY_SECS: u32 = 365 * 86_400;

/// The answer of an RPC this frontier does not serve yet.
fn not_yet(rpc: &str) -> Status {
    Status::unimplemented(format!("{rpc} is not served by this frontier yet"))
}

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

    async fn list_crawls(&self, _: Request<Local>) -> Result<Response<StringList>, Status> {
        Ok(Response::new(StringList {
            values: vec![DEFAULT_CRAWL.to_owned()],
        }))
    }

    async fn delete_crawl(&self, _: Request<DeleteCrawlMessage>) -> Result<Response<Long>, Status> {
        Err(not_yet("DeleteCrawl"))
    }

    /// The crawl's queue keys by name from offset `start`, at most `size` (0: 100; at most
    /// [`MAX_QUEUES_LISTED`]); only active queues (URLs queued or held, not blocked, not at
    /// their crawl limit: [`frontier::is_active`]), unless `include_inactive`. `total` counts the crawl's queues in any state.
    async fn list_queues(
        &self,
        request: Request<Pagination>,
    ) -> Result<Response<QueueList>, Status> {
        let params = request.into_inner();
        let crawl_id = crawl(&params.crawl_id)?;
        let size = match params.size {
            0 => 100,
            n => n.min(MAX_QUEUES_LISTED),
        };
        let query = HostQuery {
            sort: HostSort::Name,
            limit: size as usize,
            skip: params.start as usize,
            active_only: !params.include_inactive,
            ..HostQuery::default()
        };
        let page = self.hosts(query).await?;
        Ok(Response::new(QueueList {
            values: page.hosts.into_iter().map(|h| h.host).collect(),
            total: page.total,
            start: params.start,
            size,
            crawl_id: crawl_id.to_owned(),
        }))
    }

    type GetURLsStream = BoxStream<UrlInfo>;

    async fn get_ur_ls(
        &self,
        request: Request<GetParams>,
    ) -> Result<Response<Self::GetURLsStream>, Status> {
        Ok(Response::new(
            self.urls.get_urls(request.into_inner()).await?,
        ))
    }

    type PutURLsStream = BoxStream<urlfrontier_proto::v2::AckMessage>;

    async fn put_ur_ls(
        &self,
        request: Request<Streaming<UrlItem>>,
    ) -> Result<Response<Self::PutURLsStream>, Status> {
        Ok(Response::new(self.urls.put_urls(request.into_inner())))
    }

    type PutDiscoveredStream = BoxStream<BatchAck>;

    /// Each batch's URLs are offered as the HTTP API's seeds are (canonicalised, checked
    /// against the visited set, queued by host; the client decides scope, so each widens the
    /// crawl's as a seed does), see [`Urls::put_discovered`]. A client `key` is not kept yet:
    /// queues are by host.
    async fn put_discovered(
        &self,
        request: Request<Streaming<DiscoveredBatch>>,
    ) -> Result<Response<Self::PutDiscoveredStream>, Status> {
        Ok(Response::new(
            self.urls.put_discovered(request.into_inner()),
        ))
    }

    /// A whole crawl's figures: `size` = URLs queued or held, `inProcess` = held,
    /// `numberOfQueues` = hosts, `counts.completed` = URLs done (pages: records written here,
    /// and URLs a client reported known). With a key, that queue's ([`Node::queue_stats`]).
    async fn get_stats(
        &self,
        request: Request<QueueWithinCrawlParams>,
    ) -> Result<Response<Stats>, Status> {
        let params = request.into_inner();
        let crawl_id = crawl(&params.crawl_id)?;
        if !params.key.is_empty() {
            return self
                .queue_stats(crawl_id, params.key)
                .await
                .map(Response::new);
        }
        let stats = self.control.frontier_stats().await.map_err(|e| {
            Status::unavailable(format!("the frontier cannot give its figures now: {e}"))
        })?;
        let counts = HashMap::from([
            ("completed".to_owned(), stats.pages),
            ("scheduled".to_owned(), stats.extra("scheduled")),
        ]);
        Ok(Response::new(Stats {
            size: stats.queued + stats.in_flight,
            in_process: u32::try_from(stats.in_flight).unwrap_or(u32::MAX),
            counts,
            number_of_queues: stats.hosts,
            crawl_id: crawl_id.to_owned(),
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
        crawl(&params.crawl_id)?;
        if params.key.is_empty() {
            return Err(Status::invalid_argument("DeleteQueue needs a key"));
        }
        let value = self.urls.delete_queue(params.key).await?;
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

    /// `false` pauses the crawl as `POST /api/v1/pause` does (no fetch or hand-out starts;
    /// URLs are still taken), `true` resumes it.
    async fn set_active(&self, request: Request<Active>) -> Result<Response<Empty>, Status> {
        if request.into_inner().state {
            self.control.resume();
        } else {
            self.control.pause();
        }
        Ok(Response::new(Empty {}))
    }

    async fn get_active(&self, _: Request<Local>) -> Result<Response<Boolean>, Status> {
        Ok(Response::new(Boolean {
            state: !self.control.paused(),
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
            crawl(&params.crawl_id)?;
            let control = self.control.clone();
            return match bounded(self.urls.limits(), async move {
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

    async fn get_url_status(
        &self,
        _: Request<UrlStatusRequest>,
    ) -> Result<Response<UrlItem>, Status> {
        Err(not_yet("GetURLStatus"))
    }

    type ListURLsStream = BoxStream<UrlItem>;

    async fn list_ur_ls(
        &self,
        _: Request<ListUrlParams>,
    ) -> Result<Response<Self::ListURLsStream>, Status> {
        Err(not_yet("ListURLs"))
    }

    async fn count_ur_ls(&self, _: Request<CountUrlParams>) -> Result<Response<Long>, Status> {
        Err(not_yet("CountURLs"))
    }

    async fn purge_ur_ls(&self, _: Request<PurgeUrlParams>) -> Result<Response<Long>, Status> {
        Err(not_yet("PurgeURLs"))
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
