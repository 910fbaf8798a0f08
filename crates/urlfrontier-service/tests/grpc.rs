//! The url-frontier API on a real listener on `127.0.0.1:0`, before a running crawl, through
//! the client generated from the protocol's `.proto` over tonic's HTTP/2 channel: the token
//! is required when set, the node and crawl calls answer as the protocol says, SetActive
//! pauses the crawl, and the listener holds the HTTP API's limits — a public address without
//! a token is refused, connections beyond the cap are closed, a client that sends nothing is
//! dropped after the header timeout, an HTTP/2 connection that starts no call is closed with
//! GOAWAY, an HTTP/1 client gets a plain answer, and shutdown ends the server with clients
//! connected. PutDiscovered queues each new URL once, acking every
//! batch in order; GetURLs holds what it hands out, a known URL is never handed out again,
//! and what a vanished client held is served again once its hold has passed. With the
//! frontier in a Redis that stops answering, puts are acked `FAIL` in bounded time, and
//! resent once it is back, nothing is lost.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::crawls::Crawls;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint};
use tonic::Code;
use urlfrontier_proto::v2::ack_message::Status as Ack;
use urlfrontier_proto::v2::log_level_params::Level;
use urlfrontier_proto::v2::url_frontier_client::UrlFrontierClient;
use urlfrontier_proto::v2::url_item::Item;
use urlfrontier_proto::v2::{
    Active, BlockQueueParams, CountUrlParams, CrawlLimitParams, DeleteCrawlMessage,
    DiscoveredBatch, DiscoveredUrlItem, Empty, GetParams, KnownUrlItem, Local, LogLevelParams,
    Pagination, QueueDelayParams, QueueWithinCrawlParams, UrlInfo, UrlItem,
};
use urlfrontier_service::{serve_grpc, LogLevels, ServeError, Settings};

#[path = "grpc/crawls.rs"]
mod crawls;
#[path = "grpc/keys.rs"]
mod keys;
#[path = "grpc/queues.rs"]
mod queues;
#[path = "grpc/url_reads.rs"]
mod url_reads;
#[path = "grpc/urls.rs"]
mod urls;

const TOKEN: &str = "0123456789abcdef0123";

/// The levels SetLogLevel asked for.
#[derive(Debug, Default)]
struct Recorded(Mutex<Vec<(String, tracing::Level)>>);

impl LogLevels for Recorded {
    fn set(&self, target: &str, level: tracing::Level) -> Result<(), String> {
        self.0.lock().unwrap().push((target.to_owned(), level));
        Ok(())
    }
}

fn settings(token: &str, max_connections: usize, header_timeout: Duration) -> Settings {
    Settings {
        api: service::Settings {
            api_token: token.into(),
            protect_metrics: true,
            max_body_bytes: 1 << 20,
            max_urls_per_call: 1000,
            allowed_hosts: Vec::new(),
            max_connections,
            max_event_streams: 2,
            header_timeout,
            request_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
        },
        log_levels: None,
    }
}

/// A crawl waiting for seeds, as `crawler serve` starts one, with the crawls clients make
/// beside it.
struct Crawl {
    running: Option<engine::Running>,
    crawls: Arc<Crawls>,
    shutdown: CancellationToken,
    dir: tempfile::TempDir,
}

impl Crawl {
    async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    async fn start_with(change: impl FnOnce(&mut engine::CrawlConfig)) -> Self {
        Self::start_in(tempfile::tempdir().unwrap(), change).await
    }

    /// The crawl whose output is under `dir` (a restart when an earlier one left it).
    async fn start_in(
        dir: tempfile::TempDir,
        change: impl FnOnce(&mut engine::CrawlConfig),
    ) -> Self {
        let mut cfg = engine::CrawlConfig::default();
        cfg.crawl.out_dir = dir.path().join("out");
        cfg.crawl.progress_secs = 3600;
        change(&mut cfg);
        let opts = engine::RunOptions {
            progress: engine::ProgressMode::Log,
            fresh: false,
            serve: true,
        };
        let maker = Arc::new(launch::crawls::Maker::new(cfg.clone(), opts));
        let max_crawls = cfg.service.max_crawls as usize;
        let running = launch::start(cfg, opts).await.expect("engine starts");
        let crawls = Arc::new(Crawls::new(running.control(), Some(maker), max_crawls));
        crawls.restore(false).await.expect("stored crawls listed");
        let shutdown = CancellationToken::new();
        // Replicas on one Redis converge quickly here (5 s in `crawler serve`).
        tokio::spawn(
            crawls
                .clone()
                .sync_every(Duration::from_millis(200), shutdown.clone()),
        );
        Self {
            running: Some(running),
            crawls,
            shutdown,
            dir,
        }
    }

    fn control(&self) -> engine::Control {
        self.running.as_ref().unwrap().control()
    }

    /// Serves the gRPC API with `settings` on a fresh loopback port.
    async fn serve(
        &self,
        settings: Settings,
    ) -> (SocketAddr, tokio::task::JoinHandle<Result<(), ServeError>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(serve_grpc(
            listener,
            self.crawls.clone(),
            settings,
            self.shutdown.clone(),
        ));
        (addr, server)
    }

    /// Stops the service's crawls, handing back the directory they wrote.
    async fn stop(mut self) -> tempfile::TempDir {
        self.shutdown.cancel();
        self.running
            .take()
            .unwrap()
            .finish(self.shutdown.clone())
            .await
            .expect("the crawl ends cleanly");
        self.crawls.finish_all().await;
        self.dir
    }
}

async fn channel(addr: SocketAddr) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .expect("connects")
}

type Authed = UrlFrontierClient<
    tonic::service::interceptor::InterceptedService<
        Channel,
        Box<dyn FnMut(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> + Send>,
    >,
>;

/// A client that sends `token` with every call.
fn with_token(channel: Channel, token: &str) -> Authed {
    let value: MetadataValue<_> = format!("Bearer {token}").parse().unwrap();
    UrlFrontierClient::with_interceptor(
        channel,
        Box::new(move |mut req: tonic::Request<()>| {
            req.metadata_mut().insert("authorization", value.clone());
            Ok(req)
        }),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_need_the_token_and_the_node_calls_answer_as_the_protocol_says() {
    let crawl = Crawl::start().await;
    let mut s = settings(TOKEN, 16, Duration::from_secs(10));
    let levels = Arc::new(Recorded::default());
    s.log_levels = Some(levels.clone() as Arc<dyn LogLevels>);
    let (addr, server) = crawl.serve(s).await;

    // No token, a wrong one: UNAUTHENTICATED, saying what to send.
    let mut bare = UrlFrontierClient::new(channel(addr).await);
    let e = bare.get_active(Local::default()).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated, "{e}");
    assert!(e.message().contains("authorization"), "{e}");
    let mut wrong = with_token(channel(addr).await, "0123456789abcdef0124");
    let e = wrong.list_nodes(Empty {}).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated, "{e}");
    assert!(!crawl.control().paused());
    let e = wrong
        .set_active(Active {
            state: false,
            local: false,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    assert!(!crawl.control().paused(), "a refused call changes nothing");

    let mut c = with_token(channel(addr).await, TOKEN);
    let nodes = c.list_nodes(Empty {}).await.unwrap().into_inner();
    assert_eq!(nodes.values, vec![addr.to_string()]);
    let crawls = c.list_crawls(Local::default()).await.unwrap().into_inner();
    assert_eq!(crawls.values, vec!["DEFAULT".to_owned()]);

    // SetActive(false) pauses the crawl as the HTTP API's pause does; true resumes it.
    assert!(
        c.get_active(Local::default())
            .await
            .unwrap()
            .into_inner()
            .state
    );
    c.set_active(Active {
        state: false,
        local: false,
    })
    .await
    .unwrap();
    assert!(crawl.control().paused());
    assert_eq!(crawl.control().status().await.state, "paused");
    assert!(
        !c.get_active(Local::default())
            .await
            .unwrap()
            .into_inner()
            .state
    );
    c.set_active(Active {
        state: true,
        local: true,
    })
    .await
    .unwrap();
    assert!(!crawl.control().paused());
    assert!(
        c.get_active(Local::default())
            .await
            .unwrap()
            .into_inner()
            .state
    );

    // GetStats of the crawl, by its name or by none; a crawl nobody made is empty (its ID
    // echoed, as upstream), and a name that cannot be a crawl ID is refused.
    for id in ["", "DEFAULT"] {
        let stats = c
            .get_stats(QueueWithinCrawlParams {
                key: String::new(),
                crawl_id: id.into(),
                local: false,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(stats.crawl_id, "DEFAULT");
        assert_eq!((stats.size, stats.in_process), (0, 0));
        assert_eq!(stats.counts.get("completed"), Some(&0));
    }
    let stats = c
        .get_stats(QueueWithinCrawlParams {
            key: String::new(),
            crawl_id: "other".into(),
            local: false,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((stats.crawl_id.as_str(), stats.size), ("other", 0));
    let e = c
        .get_stats(QueueWithinCrawlParams {
            key: String::new(),
            crawl_id: "../other".into(),
            local: false,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    let crawls = c.list_crawls(Local::default()).await.unwrap().into_inner();
    assert_eq!(crawls.values, ["DEFAULT"], "reads make no crawl");

    // SetLogLevel: a module path and a level; anything else is refused.
    c.set_log_level(LogLevelParams {
        package: "engine".into(),
        level: Level::Warn as i32,
        local: false,
    })
    .await
    .unwrap();
    assert_eq!(
        *levels.0.lock().unwrap(),
        vec![("engine".to_owned(), tracing::Level::WARN)]
    );
    for (package, level) in [("a=b", Level::Info as i32), ("engine", 9)] {
        let e = c
            .set_log_level(LogLevelParams {
                package: package.into(),
                level,
                local: false,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{package} {level}: {e}");
    }
    assert_eq!(levels.0.lock().unwrap().len(), 1);

    // No queues yet: none listed, an unknown queue's figures are zeros.
    let queues = c
        .list_queues(Pagination::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (queues.values.len(), queues.total, queues.size),
        (0, 0, 100)
    );
    let stats = c
        .get_stats(QueueWithinCrawlParams {
            key: "nowhere.test".into(),
            crawl_id: String::new(),
            local: false,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((stats.number_of_queues, stats.size), (0, 0));

    // The per-URL calls of a crawl nobody made: nothing to list or count, no URL found.
    let none = CountUrlParams {
        crawl_id: "nobody".into(),
        ..CountUrlParams::default()
    };
    assert_eq!(c.count_ur_ls(none).await.unwrap().into_inner().value, 0);

    crawl.stop().await;
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_address_needs_a_token() {
    let crawl = Crawl::start().await;
    let listener = TcpListener::bind("0.0.0.0:0").await.unwrap();
    let e = serve_grpc(
        listener,
        crawl.crawls.clone(),
        settings("", 16, Duration::from_secs(10)),
        crawl.shutdown.clone(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, ServeError::OpenWithoutToken(_)), "{e}");
    crawl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_are_closed_until_one_closes() {
    let crawl = Crawl::start().await;
    let (addr, server) = crawl.serve(settings("", 1, Duration::from_secs(600))).await;
    let mut first = UrlFrontierClient::new(channel(addr).await);
    first
        .list_nodes(Empty {})
        .await
        .expect("the first is served");

    // The one slot is taken: another client's call fails, the first's still work.
    let refused = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await;
    if let Ok(ch) = refused {
        // Closed by the server before any call. How a client reports that depends on when
        // it notices (tonic: Cancelled, or Unknown with a broken pipe; grpcio: UNAVAILABLE).
        let answer = UrlFrontierClient::new(ch).list_nodes(Empty {}).await;
        assert!(answer.is_err(), "served beyond the cap: {answer:?}");
    }
    first.list_nodes(Empty {}).await.unwrap();

    // Once it closes, the next client is served.
    drop(first);
    let mut next = None;
    for _ in 0..100 {
        if let Ok(ch) = Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
        {
            if UrlFrontierClient::new(ch.clone())
                .list_nodes(Empty {})
                .await
                .is_ok()
            {
                next = Some(ch);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(next.is_some(), "the freed slot serves the next client");
    crawl.stop().await;
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_and_http1_clients_are_answered_and_closed() {
    let crawl = Crawl::start().await;
    let (addr, server) = crawl.serve(settings("", 4, Duration::from_secs(1))).await;

    // Half a preface, then nothing: closed once the header timeout has passed.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    silent.write_all(b"PRI * HTTP/2").await.unwrap();
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(60), silent.read_to_end(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "the server closed it"
    );

    // HTTP/1: a plain 400 naming the protocol of the port.
    let mut h1 = TcpStream::connect(addr).await.unwrap();
    h1.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(60), h1.read_to_string(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
    assert!(answer.contains("gRPC"), "{answer}");

    // The server still serves gRPC.
    let mut c = UrlFrontierClient::new(channel(addr).await);
    c.list_nodes(Empty {}).await.unwrap();

    // Shutdown ends the server with that client still connected.
    crawl.shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(30), server)
        .await
        .expect("the server ends with the shutdown")
        .unwrap()
        .unwrap();
    assert!(c.list_nodes(Empty {}).await.is_err());
    crawl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_starts_no_call_is_closed_with_goaway() {
    let crawl = Crawl::start().await;
    let mut s = settings(TOKEN, 4, Duration::from_secs(10));
    s.api.request_timeout = Duration::from_secs(1);
    let (addr, server) = crawl.serve(s).await;
    // A whole HTTP/2 preface and an empty SETTINGS frame — and then no call (no token
    // needed to get this far).
    let mut idle = TcpStream::connect(addr).await.unwrap();
    idle.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .await
        .unwrap();
    // Frames: 3 bytes of length, 1 of type; GOAWAY is type 7. (A client that also answers
    // the server's PING is then closed; this one answers nothing, so keep-alive closes it.)
    let mut got = Vec::new();
    let mut types = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !types.contains(&7) {
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout_at(deadline, idle.read(&mut buf))
            .await
            .expect("a GOAWAY in time")
            .unwrap();
        assert!(n > 0, "closed without GOAWAY: frame types {types:?}");
        got.extend_from_slice(&buf[..n]);
        types.clear();
        let mut at = 0;
        while at + 9 <= got.len() {
            let len = (usize::from(got[at]) << 16)
                | (usize::from(got[at + 1]) << 8)
                | usize::from(got[at + 2]);
            types.push(got[at + 3]);
            at += 9 + len;
        }
    }
    assert!(types.contains(&7), "frame types {types:?}");
    crawl.stop().await;
    server.await.unwrap().unwrap();
}
