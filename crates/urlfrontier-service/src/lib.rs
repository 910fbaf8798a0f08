//! `crawler serve`'s url-frontier v2 gRPC API (crawler-commons/url-frontier): the service's
//! crawls behind the protocol's `URLFrontier` service, on `service.grpc_listen`, so that the
//! protocol's clients (its Java client and tools, StormCrawler's module, any program
//! generated from `urlfrontier.proto`) can use this frontier.
//!
//! Design choices:
//! - **[`serve_grpc`]`(listener, control, settings, shutdown)`**, the shape of
//!   [`service::serve`]: the caller binds and owns the shutdown, and the exposure rule
//!   ([`service::check_exposure`]) is checked first, so no gRPC listener can skip it.
//! - **One set of rules for both APIs**: the HTTP API's token (sent as `authorization: Bearer
//!   …` metadata, compared in constant time by [`service::authorized`]), its connection cap,
//!   its write timeout and its body limit (the largest message decoded) apply as they are;
//!   the token check runs before any RPC ([`auth`]).
//! - **Our own accept loop, not tonic's transport server** ([`connection`]): the HTTP API's
//!   loop ([`service::listener::accept_loop`]) with HTTP/2 connections, so the cap, the
//!   timeouts and shutdown behave the same on both ports, and a client that is not speaking
//!   gRPC gets a plain answer instead of a hang.
//! - **A thin layer** ([`node`]): each RPC is one [`engine::Control`] call, as each HTTP
//!   handler is; the frontier's rules live in the engine.
//! - **Crawl IDs are the engine's crawls** ([`crawls`]): `DEFAULT` is the crawl the service
//!   was started with; a put naming another ID makes a crawl of its own
//!   ([`engine::crawls::Crawls`]), which DeleteCrawl removes whole.
//!
//! Served now: ListNodes, ListCrawls, DeleteCrawl, GetActive/SetActive, SetLogLevel,
//! GetStats, ListQueues, DeleteQueue, SetDelay, BlockQueueUntil, SetCrawlLimit,
//! PutDiscovered, PutURLs and GetURLs ([`urls`]). Every other RPC answers `UNIMPLEMENTED`,
//! naming itself.

#![forbid(unsafe_code)]

mod auth;
mod connection;
mod crawls;
mod node;
mod url_reads;
mod urls;

use std::fmt;
use std::sync::Arc;

use engine::crawls::Crawls;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use urlfrontier_proto::v2::url_frontier_server::UrlFrontierServer;

pub use service::ServeError;

pub use engine::crawls::DEFAULT_CRAWL;

/// Changes which log lines are written while the process runs (SetLogLevel).
pub trait LogLevels: Send + Sync + fmt::Debug {
    /// Sets the level of `target` (a module path such as `engine` or `redis_frontier::lease`;
    /// empty: every target without a level of its own). An error says why it cannot.
    fn set(&self, target: &str, level: tracing::Level) -> Result<(), String>;
}

/// What the gRPC API needs besides the crawl.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `[service]`: token, connection cap, timeouts, body limit.
    pub api: service::Settings,
    /// SetLogLevel's handle on the process's logging (`None`: SetLogLevel is refused).
    pub log_levels: Option<Arc<dyn LogLevels>>,
}

/// Serves the url-frontier API of `crawls` on `listener` until `shutdown`, under the exposure
/// rule and the connection limits of `settings.api`. Open calls end with the shutdown: a call
/// still running 5 s after it is cut off with its connection.
pub async fn serve_grpc(
    listener: TcpListener,
    crawls: Arc<Crawls>,
    settings: Settings,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let addr = listener.local_addr()?;
    service::check_exposure(addr, &settings.api)?;
    let limits = urls::Limits {
        max_urls: usize::try_from(settings.api.max_urls_per_call).unwrap_or(usize::MAX),
        frontier_wait: settings.api.request_timeout,
    };
    let node = node::Node::new(
        Arc::new(crawls::CrawlUrls::new(crawls, limits)),
        addr.to_string(),
        settings.log_levels.clone(),
    );
    let max_message = settings.api.max_body_bytes;
    let server = UrlFrontierServer::new(node)
        .max_decoding_message_size(max_message)
        .max_encoding_message_size(max_message.max(4 << 20));
    let rpc = tonic::service::interceptor::InterceptedService::new(
        server,
        auth::Token::new(&settings.api.api_token),
    );
    let limits = service::listener::ConnLimits {
        name: "the gRPC API",
        max_connections: settings.api.max_connections.max(1),
        header_timeout: settings.api.header_timeout,
        write_timeout: settings.api.write_timeout,
        // An HTTP/2 client cannot read an HTTP/1 answer: it sees the connection closed.
        over_capacity: b"",
    };
    let idle = settings.api.request_timeout;
    service::listener::accept_loop(
        listener,
        limits,
        Arc::default(),
        shutdown,
        move |s, stop| connection::serve(s, rpc.clone(), limits, idle, stop),
    )
    .await;
    Ok(())
}
