//! The url-frontier API on a real listener on `127.0.0.1:0`, before a running crawl, through
//! the client generated from the protocol's `.proto` over tonic's HTTP/2 channel: the token
//! is required when set, the node and crawl calls answer as the protocol says, SetActive
//! pauses the crawl, and the listener holds the HTTP API's limits — a public address without
//! a token is refused, connections beyond the cap are closed, a client that sends nothing is
//! dropped after the header timeout, an HTTP/1 client gets a plain answer, and shutdown ends
//! the server with clients connected. PutDiscovered queues each new URL once, acking every
//! batch in order; GetURLs holds what it hands out, a known URL is never handed out again,
//! and what a vanished client held is served again once its hold has passed. With the
//! frontier in a Redis that stops answering, puts are acked `FAIL` in bounded time, and
//! resent once it is back, nothing is lost.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    Active, DiscoveredBatch, DiscoveredUrlItem, Empty, GetParams, KnownUrlItem, Local,
    LogLevelParams, Pagination, QueueWithinCrawlParams, UrlInfo, UrlItem,
};
use urlfrontier_service::{serve_grpc, LogLevels, ServeError, Settings};

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

/// A crawl waiting for seeds, as `crawler serve` starts one.
struct Crawl {
    running: Option<engine::Running>,
    shutdown: CancellationToken,
    _dir: tempfile::TempDir,
}

impl Crawl {
    async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    async fn start_with(change: impl FnOnce(&mut engine::CrawlConfig)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = engine::CrawlConfig::default();
        cfg.crawl.out_dir = dir.path().join("out");
        cfg.crawl.progress_secs = 3600;
        change(&mut cfg);
        let opts = engine::RunOptions {
            progress: engine::ProgressMode::Log,
            fresh: false,
            serve: true,
        };
        let running = launch::start(cfg, opts).await.expect("engine starts");
        Self {
            running: Some(running),
            shutdown: CancellationToken::new(),
            _dir: dir,
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
            self.control(),
            settings,
            self.shutdown.clone(),
        ));
        (addr, server)
    }

    async fn stop(mut self) {
        self.shutdown.cancel();
        self.running
            .take()
            .unwrap()
            .finish(self.shutdown.clone())
            .await
            .expect("the crawl ends cleanly");
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

    // GetStats of the crawl, by its name or by none; another crawl is unknown.
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
    let e = c
        .get_stats(QueueWithinCrawlParams {
            key: String::new(),
            crawl_id: "other".into(),
            local: false,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e}");

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

    // What is not served yet says so, by name.
    let e = c.list_queues(Pagination::default()).await.unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented);
    assert!(e.message().contains("ListQueues"), "{e}");

    crawl.stop().await;
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_address_needs_a_token() {
    let crawl = Crawl::start().await;
    let listener = TcpListener::bind("0.0.0.0:0").await.unwrap();
    let e = serve_grpc(
        listener,
        crawl.control(),
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

fn batch(id: &str, urls: &[&str], crawl_id: &str) -> DiscoveredBatch {
    DiscoveredBatch {
        id: id.into(),
        items: urls
            .iter()
            .map(|u| UrlInfo {
                url: (*u).into(),
                crawl_id: crawl_id.into(),
                ..UrlInfo::default()
            })
            .collect(),
    }
}

/// The acks of `batches` sent on one PutDiscovered stream, or the error that ended it.
async fn put_discovered(
    c: &mut UrlFrontierClient<Channel>,
    batches: Vec<DiscoveredBatch>,
) -> Result<Vec<(String, Vec<i32>)>, tonic::Status> {
    let mut acks = c
        .put_discovered(tonic::codegen::tokio_stream::iter(batches))
        .await?
        .into_inner();
    let mut out = Vec::new();
    while let Some(ack) = acks.message().await? {
        out.push((ack.id, ack.statuses));
    }
    Ok(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovered_batches_queue_each_new_url_once_and_are_acked_in_order() {
    // No workers: what is queued stays queued, for GetStats to count.
    let crawl = Crawl::start_with(|cfg| cfg.crawl.workers = engine::Workers::Count(0)).await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let (ok, skipped) = (Ack::Ok as i32, Ack::Skipped as i32);

    let acks = put_discovered(
        &mut c,
        vec![
            batch("probe", &[], ""),
            batch(
                "b1",
                &[
                    "http://a.test/1",
                    "http://a.test/1",
                    "http://b.test/2",
                    "not a url",
                    "ftp://a.test/file",
                ],
                "DEFAULT",
            ),
            // Another spelling of a URL already queued is the same URL.
            batch("b2", &["HTTP://A.TEST:80/1", "http://a.test/3"], ""),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        acks,
        vec![
            ("probe".to_owned(), vec![]),
            ("b1".to_owned(), vec![ok, skipped, ok, skipped, skipped]),
            ("b2".to_owned(), vec![skipped, ok]),
        ]
    );
    let stats = c
        .get_stats(QueueWithinCrawlParams::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!((stats.size, stats.number_of_queues), (3, 2));

    // A batch over service.max_urls_per_call, or for another crawl, ends the stream with
    // an error saying so; the batches before it are acked.
    let big: Vec<String> = (0..1001).map(|i| format!("http://c.test/{i}")).collect();
    let big: Vec<&str> = big.iter().map(String::as_str).collect();
    let e = put_discovered(&mut c, vec![batch("big", &big, "")])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    assert!(e.message().contains("max_urls_per_call"), "{e}");
    let mut other = c
        .put_discovered(tonic::codegen::tokio_stream::iter(vec![
            batch("d1", &["http://d.test/1"], ""),
            batch("d2", &["http://d.test/2"], "news"),
        ]))
        .await
        .unwrap()
        .into_inner();
    let first = other.message().await.unwrap().unwrap();
    assert_eq!((first.id.as_str(), first.statuses), ("d1", vec![ok]));
    let e = other.message().await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e}");
    let stats = c
        .get_stats(QueueWithinCrawlParams::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(stats.size, 4, "nothing of the refused batches was queued");

    crawl.stop().await;
    server.await.unwrap().unwrap();
}

fn item(url: &str, known: Option<u64>, id: &str) -> UrlItem {
    let info = Some(UrlInfo {
        url: url.into(),
        ..UrlInfo::default()
    });
    UrlItem {
        item: Some(match known {
            None => Item::Discovered(DiscoveredUrlItem { info }),
            Some(date) => Item::Known(KnownUrlItem {
                info,
                refetchable_from_date: date,
            }),
        }),
        id: id.into(),
        creation_date: 0,
    }
}

/// The acks of `items` sent on one PutURLs stream, as (ID, status), or the error that ended it.
async fn put_urls(
    c: &mut UrlFrontierClient<Channel>,
    items: Vec<UrlItem>,
) -> Result<Vec<(String, i32)>, tonic::Status> {
    let mut acks = c
        .put_ur_ls(tonic::codegen::tokio_stream::iter(items))
        .await?
        .into_inner();
    let mut out = Vec::new();
    while let Some(ack) = acks.message().await? {
        out.push((ack.id, ack.status));
    }
    Ok(out)
}

/// The URLs one GetURLs hands out (held for `hold` seconds), sorted.
async fn get_urls(c: &mut UrlFrontierClient<Channel>, hold: u32) -> Vec<(String, String)> {
    let mut infos = c
        .get_ur_ls(GetParams {
            delay_requestable: hold,
            ..GetParams::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut out = Vec::new();
    while let Some(info) = infos.message().await.unwrap() {
        assert_eq!(info.crawl_id, "DEFAULT");
        out.push((info.url, info.key));
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handed_out_urls_are_held_known_ones_are_done_and_a_vanished_clients_come_back() {
    let crawl = Crawl::start_with(|cfg| {
        cfg.crawl.workers = engine::Workers::Count(0);
        cfg.politeness.delay_ms = 0;
        cfg.politeness.max_per_host = 100;
    })
    .await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let (ok, skipped) = (Ack::Ok as i32, Ack::Skipped as i32);

    // Discovered: queued once; an ack names the item's ID, or its URL when it has none.
    let acks = put_urls(
        &mut c,
        vec![
            item("http://a.test/1", None, "i1"),
            item("http://a.test:8080/2", None, ""),
            item("http://b.test/1", None, "i3"),
            item("http://a.test/1", None, "i4"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        acks,
        vec![
            ("i1".to_owned(), ok),
            ("http://a.test:8080/2".to_owned(), ok),
            ("i3".to_owned(), ok),
            ("i4".to_owned(), skipped),
        ]
    );

    // GetURLs hands each out once, keyed by host name (no port), and holds it.
    let all = vec![
        ("http://a.test/1".to_owned(), "a.test".to_owned()),
        ("http://a.test:8080/2".to_owned(), "a.test".to_owned()),
        ("http://b.test/1".to_owned(), "b.test".to_owned()),
    ];
    assert_eq!(get_urls(&mut c, 2).await, all);
    assert_eq!(get_urls(&mut c, 2).await, vec![], "all are held");

    // Known with date 0: done, never handed out again — held (a.test/1, by another
    // spelling) or not (c.test/1, never seen: a later discovery of it is a repeat).
    let acks = put_urls(
        &mut c,
        vec![
            item("HTTP://A.TEST/1", Some(0), "k1"),
            item("http://c.test/1", Some(0), "k2"),
            item("http://c.test/1", None, "k3"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        acks,
        vec![
            ("k1".to_owned(), ok),
            ("k2".to_owned(), ok),
            ("k3".to_owned(), skipped)
        ]
    );
    let stats = c
        .get_stats(QueueWithinCrawlParams::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(stats.counts.get("completed"), Some(&1));
    assert_eq!(
        stats.in_process, 2,
        "a.test:8080/2 and b.test/1 are still held"
    );

    // The client that held them vanishes: once their hold (2 s) has passed they are served
    // again, and nothing done ever is.
    let mut again = Vec::new();
    for _ in 0..300 {
        again.extend(get_urls(&mut c, 60).await);
        if again.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    again.sort();
    assert_eq!(again, vec![all[1].clone(), all[2].clone()]);
    assert_eq!(get_urls(&mut c, 60).await, vec![]);

    // A date to refetch from is not taken yet: the stream ends saying so, after the acks
    // of the items before it.
    let mut acks = c
        .put_ur_ls(tonic::codegen::tokio_stream::iter(vec![
            item("http://b.test/1", Some(0), "b"),
            item("http://a.test:8080/2", Some(1_900_000_000), "later"),
        ]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(acks.message().await.unwrap().unwrap().id, "b");
    let e = acks.message().await.unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented, "{e}");

    crawl.stop().await;
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn puts_fail_while_redis_is_stalled_and_resent_nothing_is_lost() {
    let Some(redis) = test_support::redis_server::RedisServer::for_test(&[]) else {
        return;
    };
    let url = redis.url();
    let crawl = Crawl::start_with(move |cfg| {
        cfg.crawl.workers = engine::Workers::Count(0);
        cfg.frontier.backend = engine::FrontierBackend::Redis;
        cfg.frontier.redis_url = url;
        cfg.frontier.crawl_id = "grpc-faults".into();
        cfg.politeness.delay_ms = 0;
        cfg.politeness.max_per_host = 100;
    })
    .await;
    let mut s = settings("", 16, Duration::from_secs(10));
    s.api.request_timeout = Duration::from_secs(2);
    let (addr, server) = crawl.serve(s).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let (ok, skipped, fail) = (Ack::Ok as i32, Ack::Skipped as i32, Ack::Fail as i32);

    let acks = put_discovered(&mut c, vec![batch("b1", &["http://a.test/1"], "")])
        .await
        .unwrap();
    assert_eq!(acks, vec![("b1".to_owned(), vec![ok])]);

    // Redis stops answering (SIGSTOP): the next batch and item are acked FAIL, not held.
    redis.pause().unwrap();
    let acks = put_discovered(
        &mut c,
        vec![batch("b2", &["http://a.test/2", "http://b.test/3"], "")],
    )
    .await;
    let acks_items = put_urls(&mut c, vec![item("http://c.test/4", None, "i4")]).await;
    let leased = c
        .get_ur_ls(GetParams {
            delay_requestable: 2,
            ..GetParams::default()
        })
        .await;
    redis.resume().unwrap();
    assert_eq!(leased.unwrap_err().code(), Code::Unavailable);
    assert_eq!(acks.unwrap(), vec![("b2".to_owned(), vec![fail, fail])]);
    assert_eq!(acks_items.unwrap(), vec![("i4".to_owned(), fail)]);

    // Resent: each is queued now or was by the call that timed out (a repeat, SKIPPED);
    // none is lost.
    let acks = put_discovered(
        &mut c,
        vec![batch("b2", &["http://a.test/2", "http://b.test/3"], "")],
    )
    .await
    .unwrap();
    assert!(
        acks[0].1.iter().all(|s| *s == ok || *s == skipped),
        "{acks:?}"
    );
    let acks = put_urls(&mut c, vec![item("http://c.test/4", None, "i4")])
        .await
        .unwrap();
    assert!(acks[0].1 == ok || acks[0].1 == skipped, "{acks:?}");
    // (What the stalled GetURLs leased once Redis went on, if anything, comes back when its
    // 2 s hold has passed.)
    let mut got = Vec::new();
    for _ in 0..300 {
        got.extend(get_urls(&mut c, 60).await);
        if got.len() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    got.sort();
    let urls: Vec<&str> = got.iter().map(|(u, _)| u.as_str()).collect();
    assert_eq!(
        urls,
        [
            "http://a.test/1",
            "http://a.test/2",
            "http://b.test/3",
            "http://c.test/4"
        ]
    );

    crawl.stop().await;
    server.await.unwrap().unwrap();
}
