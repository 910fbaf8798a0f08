//! `crawler serve`: the crawl of `crawler crawl` (same flags, configuration, state and
//! output) kept running as a service, with the HTTP API of `crates/service` on
//! `service.listen` and, when `service.grpc_listen` is set, the url-frontier gRPC API of
//! `crates/urlfrontier-service`. It stops on SIGINT/SIGTERM, draining as a crawl does.
//!
//! `crawler demo` is the same service with the bundled test site started in-process and
//! seeded: the first thing to run on a fresh machine, with nothing else to start.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toml::Value;

use crate::cli::{DemoArgs, ServeArgs};
use crate::crawl_cmd::{engine_failure, load_with, runtime, watch_signals};
use crate::exit::{Failure, IO, UNAVAILABLE, USAGE};

/// Binds `addr`, or (when `fallback`) any free port of the same address when it is taken —
/// and then says so, loudly: the dashboard is not where the user was told.
async fn bind(addr: SocketAddr, fallback: bool) -> Result<tokio::net::TcpListener, Failure> {
    match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => Ok(l),
        Err(e) if fallback && e.kind() == std::io::ErrorKind::AddrInUse => {
            let l = tokio::net::TcpListener::bind(SocketAddr::new(addr.ip(), 0))
                .await
                .map_err(|e| Failure::new(UNAVAILABLE, format!("cannot listen on {addr}: {e}")))?;
            let taken = l.local_addr().map_err(|e| Failure::new(IO, e))?;
            eprintln!(
                "crawler: WARNING: {addr} is taken by another program; listening on {taken} \
                 instead (--listen ADDR:PORT picks one)"
            );
            tracing::warn!(wanted = %addr, listening = %taken, "the asked address is taken");
            Ok(l)
        }
        Err(e) => Err(Failure::new(
            UNAVAILABLE,
            format!("cannot listen on {addr}: {e}"),
        )),
    }
}

/// The service's settings under this process's open-file limit (raised to its hard limit
/// first): the connection cap lowered when the limit could not hold it (each of the
/// `listeners`, HTTP and gRPC, has the cap; together they keep within the quarter).
fn settings_within_limits(cfg: &engine::CrawlConfig, grpc: bool) -> service::Settings {
    let mut settings = service::Settings::from_config(cfg);
    let nofile = crate::limits::raise_open_files();
    let listeners = if grpc { 2 } else { 1 };
    let cap =
        crate::limits::connection_cap(settings.max_connections, nofile.map(|n| n / listeners));
    if cap < settings.max_connections {
        tracing::warn!(
            configured = settings.max_connections,
            cap,
            open_file_limit = nofile,
            "service.max_connections lowered to a quarter of the open-file limit (the rest \
             is the crawl's)"
        );
        settings.max_connections = cap;
    }
    settings
}

/// How often a service on a Redis frontier reads which named crawls its replicas made or
/// deleted.
const SYNC_PERIOD: std::time::Duration = std::time::Duration::from_secs(5);

/// The url-frontier gRPC API's listener and what it needs, when `service.grpc_listen` is set.
struct Grpc {
    listener: tokio::net::TcpListener,
    log_levels: Option<Arc<crate::telemetry::Levels>>,
}

/// Runs the crawl of `cfg` as a service on `listener` (and `grpc`'s) until SIGINT/SIGTERM.
async fn run_service(
    cfg: engine::CrawlConfig,
    settings: service::Settings,
    listener: tokio::net::TcpListener,
    grpc: Option<Grpc>,
    fresh: bool,
) -> Result<(), Failure> {
    let bound = listener.local_addr().map_err(|e| Failure::new(IO, e))?;
    let shutdown = CancellationToken::new();
    tokio::spawn(watch_signals(shutdown.clone()));
    let opts = engine::RunOptions {
        progress: engine::ProgressMode::Log,
        fresh,
        serve: true,
    };
    let grpc_at = match &grpc {
        Some(g) => Some(g.listener.local_addr().map_err(|e| Failure::new(IO, e))?),
        None => None,
    };
    let maker = Arc::new(launch::crawls::Maker::new(cfg.clone(), opts));
    let max_crawls = usize::try_from(cfg.service.max_crawls).unwrap_or(usize::MAX);
    let running = launch::start(cfg, opts).await.map_err(engine_failure)?;
    // The crawls url-frontier clients made, taken up before the APIs answer.
    let crawls = Arc::new(engine::crawls::Crawls::new(
        running.control(),
        Some(maker),
        max_crawls,
    ));
    match crawls.restore(fresh).await {
        Ok(ids) if !ids.is_empty() => tracing::info!(crawls = ?ids, "named crawls taken up"),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "no named crawl taken up"),
    }
    // With a frontier in Redis, the crawls other replicas make and delete.
    let sync = tokio::spawn(crawls.clone().sync_every(SYNC_PERIOD, shutdown.clone()));
    let grpc_server = match grpc.zip(grpc_at) {
        Some((grpc, at)) => {
            let grpc_settings = urlfrontier_service::Settings {
                api: settings.clone(),
                log_levels: grpc
                    .log_levels
                    .map(|l| l as Arc<dyn urlfrontier_service::LogLevels>),
            };
            let task = tokio::spawn(urlfrontier_service::serve_grpc(
                grpc.listener,
                crawls.clone(),
                grpc_settings,
                shutdown.clone(),
            ));
            tracing::info!("url-frontier gRPC API on {at}");
            eprintln!("crawler: url-frontier gRPC API on grpc://{at}");
            Some(task)
        }
        None => None,
    };
    let server = tokio::spawn(service::serve(
        listener,
        crawls.clone(),
        settings,
        shutdown.clone(),
    ));
    tracing::info!("serving on http://{bound}/ (dashboard), API under /api/v1, /metrics");
    eprintln!("crawler: dashboard on http://{bound}/ (Ctrl-C stops)");
    let summary = running.finish(shutdown.clone()).await;
    shutdown.cancel();
    if let Some(task) = grpc_server {
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the gRPC API ended with an error"),
            Err(e) => tracing::warn!(error = %e, "the gRPC API task failed"),
        }
    }
    match server.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "the API server ended with an error"),
        Err(e) => tracing::warn!(error = %e, "the API server task failed"),
    }
    let _ = sync.await;
    crawls.finish_all().await;
    let summary = summary.map_err(engine_failure)?;
    tracing::info!(
        pages = summary.pages,
        "service stopped: the crawl {}",
        summary.stopped_by.describe()
    );
    Ok(())
}

/// A fresh random API token (32 hex digits from the kernel's random source).
fn random_token() -> Result<String, Failure> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| Failure::new(IO, format!("cannot make an API token: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// `crawler demo`.
pub fn demo(args: DemoArgs) -> Result<(), Failure> {
    let addr: SocketAddr = args
        .listen
        .parse()
        .map_err(|e| Failure::new(USAGE, format!("--listen {}: {e}", args.listen)))?;
    let mut cfg = engine::CrawlConfig::default();
    cfg.crawl.out_dir = args.out.clone();
    cfg.crawl.concurrency = 16;
    cfg.politeness.delay_ms = args.delay_ms;
    cfg.politeness.max_per_host = 1;
    // The demo's API, like any: off loopback only with a token. None given: one is made,
    // and printed where only the person who started the demo sees it.
    let token = std::env::var("CRAWLER_SERVICE_API_TOKEN").unwrap_or_default();
    if !token.is_empty() {
        cfg.service.api_token = token;
    } else if !addr.ip().is_loopback() {
        cfg.service.api_token = random_token()?;
        eprintln!(
            "crawler: {addr} is not a loopback address, so the API needs a token; this demo's \
             is {} (the dashboard asks for it; set CRAWLER_SERVICE_API_TOKEN to choose one)",
            cfg.service.api_token
        );
    }
    cfg.frontier.scope = engine::ScopeKind::Domains;
    cfg.frontier.domains = vec!["test".into()];
    cfg.fetch.resolve = [("*.test".to_owned(), "127.0.0.1".to_owned())].into();
    cfg.fetch.retry_base_ms = 50;
    cfg.service.listen = addr.to_string();
    crate::telemetry::init(cfg.crawl.log_format);
    let settings = settings_within_limits(&cfg, false);
    service::check_exposure(addr, &settings).map_err(|e| Failure::new(USAGE, e))?;
    runtime()?.block_on(async move {
        let site = testsite::TestSite::start(testsite::SiteConfig {
            pages: args.pages,
            hosts: args.hosts,
            ..testsite::SiteConfig::default()
        })
        .await
        .map_err(|e| Failure::new(UNAVAILABLE, format!("cannot start the test site: {e}")))?;
        let seed = site.site().seed_url();
        eprintln!(
            "crawler: test site of {} pages on {} hosts at {seed} (*.test → 127.0.0.1), \
             paced at one fetch per host every {} ms so there is a crawl to watch \
             (--delay-ms 0 for full speed)",
            args.pages, args.hosts, args.delay_ms
        );
        let listener = bind(addr, true).await?;
        // The operator's seed (the SSRF guard allows the test site's address and port).
        cfg.crawl.seeds = vec![seed];
        run_service(cfg, settings, listener, None, true).await
    })
}

pub fn serve(args: ServeArgs) -> Result<(), Failure> {
    let (listen, grpc_listen) = (args.listen.clone(), args.grpc_listen.clone());
    let cfg = load_with(&args.crawl, |mut loader| {
        if let Some(addr) = listen {
            loader = loader.flag("--listen", "service", "listen", Value::String(addr));
        }
        if let Some(addr) = grpc_listen {
            loader = loader.flag(
                "--grpc-listen",
                "service",
                "grpc_listen",
                Value::String(addr),
            );
        }
        loader
    })?;
    let log_levels = crate::telemetry::init(cfg.crawl.log_format);
    let addr: SocketAddr = cfg
        .service
        .listen
        .parse()
        .map_err(|e| Failure::new(USAGE, format!("service.listen: {e}")))?;
    let grpc_addr: Option<SocketAddr> = match cfg.service.grpc_listen.as_str() {
        "" => None,
        a => Some(
            a.parse()
                .map_err(|e| Failure::new(USAGE, format!("service.grpc_listen: {e}")))?,
        ),
    };
    let settings = settings_within_limits(&cfg, grpc_addr.is_some());
    service::check_exposure(addr, &settings).map_err(|e| Failure::new(USAGE, e))?;
    if let Some(grpc) = grpc_addr {
        service::check_exposure(grpc, &settings)
            .map_err(|e| Failure::new(USAGE, format!("service.grpc_listen: {e}")))?;
    }
    runtime()?.block_on(async move {
        let listener = bind(addr, false).await?;
        let grpc = match grpc_addr {
            Some(at) => Some(Grpc {
                listener: bind(at, false).await?,
                log_levels,
            }),
            None => None,
        };
        run_service(cfg, settings, listener, grpc, args.crawl.fresh).await
    })
}
