//! `crawler serve`: the crawl of `crawler crawl` (same flags, configuration, state and
//! output) kept running as a service, with the HTTP API of `crates/service` on
//! `service.listen`. It stops on SIGINT/SIGTERM, draining as a crawl does.

use std::net::SocketAddr;

use tokio_util::sync::CancellationToken;
use toml::Value;

use crate::cli::ServeArgs;
use crate::crawl_cmd::{engine_failure, load_with, watch_signals};
use crate::exit::{Failure, IO, UNAVAILABLE, USAGE};

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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(IO, format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Failure::new(UNAVAILABLE, format!("cannot listen on {addr}: {e}")))?;
        let bound = listener.local_addr().unwrap_or(addr);
        let shutdown = CancellationToken::new();
        tokio::spawn(watch_signals(shutdown.clone()));
        let opts = engine::RunOptions {
            progress: engine::ProgressMode::Log,
            fresh: args.crawl.fresh,
            serve: true,
        };
        let running = engine::start(cfg, opts).await.map_err(engine_failure)?;
        let server = tokio::spawn(service::serve(
            listener,
            running.control(),
            settings,
            shutdown.clone(),
        ));
        tracing::info!("serving on http://{bound}/ (dashboard), API under /api/v1, /metrics");
        eprintln!("crawler: serving on http://{bound}/");
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
    })
}
