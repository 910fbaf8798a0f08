//! `crawler serve`: the crawl of `crawler crawl` (same flags, configuration, state and
//! output) kept running as a service, with the HTTP API of `crates/service` on
//! `service.listen`. It stops on SIGINT/SIGTERM, draining as a crawl does.
//!
//! `crawler demo` is the same service with the bundled test site started in-process and
//! seeded: the first thing to run on a fresh machine, with nothing else to start.

use std::net::SocketAddr;

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
/// first): the connection cap lowered when the limit could not hold it.
fn settings_within_limits(cfg: &engine::CrawlConfig) -> service::Settings {
    let mut settings = service::Settings::from_config(cfg);
    let nofile = crate::limits::raise_open_files();
    let cap = crate::limits::connection_cap(settings.max_connections, nofile);
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

/// Runs the crawl of `cfg` as a service on `listener` until SIGINT/SIGTERM.
async fn run_service(
    cfg: engine::CrawlConfig,
    settings: service::Settings,
    listener: tokio::net::TcpListener,
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
    let running = launch::start(cfg, opts).await.map_err(engine_failure)?;
    let server = tokio::spawn(service::serve(
        listener,
        running.control(),
        settings,
        shutdown.clone(),
    ));
    tracing::info!("serving on http://{bound}/ (dashboard), API under /api/v1, /metrics");
    eprintln!("crawler: dashboard on http://{bound}/ (Ctrl-C stops)");
    let summary = running.finish(shutdown.clone()).await;
    shutdown.cancel();
    match server.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "the API server ended with an error"),
        Err(e) => tracing::warn!(error = %e, "the API server task failed"),
    }
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
    let settings = settings_within_limits(&cfg);
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
        run_service(cfg, settings, listener, true).await
    })
}

pub fn serve(args: ServeArgs) -> Result<(), Failure> {
    let listen = args.listen.clone();
    let cfg = load_with(&args.crawl, |loader| match listen {
        Some(addr) => loader.flag("--listen", "service", "listen", Value::String(addr)),
        None => loader,
    })?;
    crate::telemetry::init(cfg.crawl.log_format);
    let addr: SocketAddr = cfg
        .service
        .listen
        .parse()
        .map_err(|e| Failure::new(USAGE, format!("service.listen: {e}")))?;
    let settings = settings_within_limits(&cfg);
    service::check_exposure(addr, &settings).map_err(|e| Failure::new(USAGE, e))?;
    runtime()?.block_on(async move {
        let listener = bind(addr, false).await?;
        run_service(cfg, settings, listener, args.crawl.fresh).await
    })
}
