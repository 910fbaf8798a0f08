//! The RPCs: each one [`engine::Control`] call on the running crawl, named `DEFAULT`
//! ([`crate::DEFAULT_CRAWL`]; an empty crawl ID means it too, as in the protocol). This
//! service is one node, so the protocol's `local` flags change nothing.
//!
//! An RPC this frontier does not serve yet answers `UNIMPLEMENTED` naming itself, which the
//! protocol's clients already handle (they probe PutDiscovered that way).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use engine::{Control, SeedResult};
use tonic::codegen::tokio_stream::wrappers::ReceiverStream;
use tonic::codegen::BoxStream;
use tonic::{Request, Response, Status, Streaming};
use urlfrontier_proto::v2::ack_message::Status as Ack;
use urlfrontier_proto::v2::log_level_params::Level;
use urlfrontier_proto::v2::url_frontier_server::UrlFrontier;
use urlfrontier_proto::v2::{
    Active, BatchAck, BlockQueueParams, Boolean, CountUrlParams, CrawlLimitParams,
    DeleteCrawlMessage, DiscoveredBatch, Empty, GetParams, ListUrlParams, Local, LogLevelParams,
    Long, Pagination, PurgeUrlParams, QueueDelayParams, QueueList, QueueWithinCrawlParams, Stats,
    StringList, UrlInfo, UrlItem, UrlStatusRequest,
};

use crate::{LogLevels, DEFAULT_CRAWL};

/// What bounds the work of one call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Most URLs in one batch (`service.max_urls_per_call`).
    pub(crate) max_urls: usize,
    /// Longest wait for the frontier on one batch (`service.request_timeout_secs`): past it
    /// the batch is acked `FAIL` (resend).
    pub(crate) frontier_wait: Duration,
}

/// This service as a url-frontier node.
#[derive(Debug)]
pub(crate) struct Node {
    control: Control,
    /// `host:port` of the gRPC listener (ListNodes).
    address: String,
    log_levels: Option<Arc<dyn LogLevels>>,
    limits: Limits,
}

impl Node {
    pub(crate) fn new(
        control: Control,
        address: String,
        log_levels: Option<Arc<dyn LogLevels>>,
        limits: Limits,
    ) -> Self {
        Self {
            control,
            address,
            log_levels,
            limits,
        }
    }
}

/// Acks not yet read by the client before the next batch waits (backpressure).
const ACKS_AHEAD: usize = 4;

/// The statuses of one batch of discovered URLs, in its order: `OK` for a URL queued,
/// `SKIPPED` for one the crawl has seen (a repeat within the batch too) or cannot crawl,
/// `FAIL` for every URL when the frontier took none of them in time (resend).
async fn offer_batch(control: &Control, urls: &[String], limits: Limits) -> Vec<i32> {
    let offered = tokio::time::timeout(limits.frontier_wait, control.try_add_seeds(urls)).await;
    match offered {
        Ok(Some(results)) => results
            .iter()
            .map(|r| match r {
                SeedResult::Admitted => Ack::Ok,
                SeedResult::Duplicate | SeedResult::OutOfScope(_) | SeedResult::Invalid(_) => {
                    Ack::Skipped
                }
            } as i32)
            .collect(),
        Ok(None) | Err(_) => vec![Ack::Fail as i32; urls.len()],
    }
}

/// The crawl a request names: `DEFAULT` for an empty ID; any other is unknown (one crawl
/// per service for now).
fn crawl(id: &str) -> Result<&'static str, Status> {
    if id.is_empty() || id == DEFAULT_CRAWL {
        Ok(DEFAULT_CRAWL)
    } else {
        Err(Status::not_found(format!(
            "no crawl `{id}`: this service holds the crawl {DEFAULT_CRAWL} only"
        )))
    }
}

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

    async fn list_queues(&self, _: Request<Pagination>) -> Result<Response<QueueList>, Status> {
        Err(not_yet("ListQueues"))
    }

    type GetURLsStream = BoxStream<UrlInfo>;

    async fn get_ur_ls(
        &self,
        _: Request<GetParams>,
    ) -> Result<Response<Self::GetURLsStream>, Status> {
        Err(not_yet("GetURLs"))
    }

    type PutURLsStream = BoxStream<urlfrontier_proto::v2::AckMessage>;

    async fn put_ur_ls(
        &self,
        _: Request<Streaming<UrlItem>>,
    ) -> Result<Response<Self::PutURLsStream>, Status> {
        Err(not_yet("PutURLs"))
    }

    type PutDiscoveredStream = BoxStream<BatchAck>;

    /// Each batch's URLs are offered as the HTTP API's seeds are (canonicalised, checked
    /// against the visited set, queued by host; the client decides scope, so each widens the
    /// crawl's as a seed does) and acked in one `BatchAck`, in order. An empty batch is acked
    /// (clients probe with one). The batches are taken one after another; a client that stops
    /// reading its acks stops the intake after [`ACKS_AHEAD`] of them. A client `key` is not
    /// kept yet: queues are by host.
    async fn put_discovered(
        &self,
        request: Request<Streaming<DiscoveredBatch>>,
    ) -> Result<Response<Self::PutDiscoveredStream>, Status> {
        let mut batches = request.into_inner();
        let (tx, rx) = tokio::sync::mpsc::channel(ACKS_AHEAD);
        let control = self.control.clone();
        let limits = self.limits;
        tokio::spawn(async move {
            loop {
                let batch = match batches.message().await {
                    Ok(Some(b)) => b,
                    Ok(None) => return,
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                };
                if batch.items.len() > limits.max_urls {
                    let e = Status::invalid_argument(format!(
                        "batch `{}` holds {} URLs; at most {} (service.max_urls_per_call)",
                        batch.id,
                        batch.items.len(),
                        limits.max_urls
                    ));
                    let _ = tx.send(Err(e)).await;
                    return;
                }
                if let Some(other) = batch.items.iter().find_map(|i| crawl(&i.crawl_id).err()) {
                    let _ = tx.send(Err(other)).await;
                    return;
                }
                let urls: Vec<String> = batch.items.into_iter().map(|i| i.url).collect();
                let statuses = if urls.is_empty() {
                    Vec::new()
                } else {
                    offer_batch(&control, &urls, limits).await
                };
                let ack = BatchAck {
                    id: batch.id,
                    statuses,
                };
                if tx.send(Ok(ack)).await.is_err() {
                    return; // The client is gone.
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    /// A whole crawl's figures: `size` = URLs queued or held, `inProcess` = held,
    /// `numberOfQueues` = hosts, `counts.completed` = URLs done (records written). One
    /// queue's (a key given) are not served yet.
    async fn get_stats(
        &self,
        request: Request<QueueWithinCrawlParams>,
    ) -> Result<Response<Stats>, Status> {
        let params = request.into_inner();
        let crawl_id = crawl(&params.crawl_id)?;
        if !params.key.is_empty() {
            return Err(not_yet("GetStats of one queue"));
        }
        let status = self.control.status().await;
        let counts = HashMap::from([
            ("completed".to_owned(), status.pages_total),
            ("scheduled".to_owned(), status.scheduled),
        ]);
        Ok(Response::new(Stats {
            size: status.queued + status.in_flight,
            in_process: u32::try_from(status.in_flight).unwrap_or(u32::MAX),
            counts,
            number_of_queues: status.hosts,
            crawl_id: crawl_id.to_owned(),
        }))
    }

    async fn delete_queue(
        &self,
        _: Request<QueueWithinCrawlParams>,
    ) -> Result<Response<Long>, Status> {
        Err(not_yet("DeleteQueue"))
    }

    async fn block_queue_until(
        &self,
        _: Request<BlockQueueParams>,
    ) -> Result<Response<Empty>, Status> {
        Err(not_yet("BlockQueueUntil"))
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

    async fn set_delay(&self, _: Request<QueueDelayParams>) -> Result<Response<Empty>, Status> {
        Err(not_yet("SetDelay"))
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

    async fn set_crawl_limit(
        &self,
        _: Request<CrawlLimitParams>,
    ) -> Result<Response<Empty>, Status> {
        Err(not_yet("SetCrawlLimit"))
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
    fn an_empty_crawl_id_is_the_default_and_others_are_unknown() {
        assert_eq!(crawl("").unwrap(), DEFAULT_CRAWL);
        assert_eq!(crawl("DEFAULT").unwrap(), DEFAULT_CRAWL);
        assert_eq!(crawl("other").unwrap_err().code(), tonic::Code::NotFound);
    }

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
