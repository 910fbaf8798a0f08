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

/// Binds `addr`, or (when `fallback`) any free port of the same address when it is taken.
async fn bind(addr: SocketAddr, fallback: bool) -> Result<tokio::net::TcpListener, Failure> {
    match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => Ok(l),
        Err(e) if fallback && e.kind() == std::io::ErrorKind::AddrInUse => {
            tokio::net::TcpListener::bind(SocketAddr::new(addr.ip(), 0))
                .await
                .map_err(|e| Failure::new(UNAVAILABLE, format!("cannot listen on {addr}: {e}")))
        }
        Err(e) => Err(Failure::new(
            UNAVAILABLE,
            format!("cannot listen on {addr}: {e}"),
        )),
    }
}

/// Runs the crawl of `cfg` as a service on `listener` until SIGINT/SIGTERM; `seeds` are
/// given to it over its control once it runs.
async fn run_service(
    cfg: engine::CrawlConfig,
    listener: tokio::net::TcpListener,
    fresh: bool,
    seeds: Vec<String>,
) -> Result<(), Failure> {
    let settings = service::Settings::from_config(&cfg);
    let bound = listener.local_addr().map_err(|e| Failure::new(IO, e))?;
    let shutdown = CancellationToken::new();
    tokio::spawn(watch_signals(shutdown.clone()));
    let opts = engine::RunOptions {
        progress: engine::ProgressMode::Log,
        fresh,
        serve: true,
    };
    let running = engine::start(cfg, opts).await.map_err(engine_failure)?;
    let control = running.control();
    let server = tokio::spawn(service::serve(
        listener,
        running.control(),
        settings,
        shutdown.clone(),
    ));
    if !seeds.is_empty() {
        control.add_seeds(&seeds).await;
    }
    drop(control);
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
        stopped_by = ?summary.stopped_by,
        "service stopped"
    );
    Ok(())
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
    cfg.frontier.scope = engine::ScopeKind::Domains;
    cfg.frontier.domains = vec!["test".into()];
    cfg.fetch.resolve = [("*.test".to_owned(), "127.0.0.1".to_owned())].into();
    cfg.fetch.retry_base_ms = 50;
    cfg.service.listen = addr.to_string();
    crate::telemetry::init(cfg.crawl.log_format);
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
            "crawler: test site of {} pages on {} hosts at {seed} (*.test → 127.0.0.1)",
            args.pages, args.hosts
        );
        let listener = bind(addr, true).await?;
        run_service(cfg, listener, true, vec![seed]).await
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
    let settings = service::Settings::from_config(&cfg);
    service::check_exposure(addr, &settings).map_err(|e| Failure::new(USAGE, e))?;
    runtime()?.block_on(async move {
        let listener = bind(addr, false).await?;
        run_service(cfg, listener, args.crawl.fresh, Vec::new()).await
    })
}
