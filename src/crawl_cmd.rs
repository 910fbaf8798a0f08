//! `crawler crawl` and `crawler config`: turn flags, environment and file into a
//! configuration, set up logging and signals, and run the engine.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use engine::{CrawlConfig, Loader};
use tokio_util::sync::CancellationToken;
use toml::Value;

use crate::cli::{ConfigCommand, CrawlArgs, ForgetArgs, HealthArgs};
use crate::exit::{Failure, IO, UNAVAILABLE, UNHEALTHY, USAGE};

/// The configuration file to read: `--config`, else `$CRAWLER_CONFIG`, else `./crawler.toml`
/// when it exists.
fn config_path(flag: Option<&Path>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf)
        .or_else(|| std::env::var_os("CRAWLER_CONFIG").map(PathBuf::from))
        .or_else(|| Some(PathBuf::from("crawler.toml")).filter(|p| p.exists()))
}

fn read_file(loader: Loader, path: &Path) -> Result<Loader, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::new(USAGE, format!("cannot read config {}: {e}", path.display())))?;
    Ok(loader.file(&path.display().to_string(), &text))
}

/// The layers below the flags: built-in defaults, the file ([`config_path`]) and the
/// `CRAWLER_*` environment.
fn file_and_env(config: Option<&Path>) -> Result<Loader, Failure> {
    let mut loader = Loader::new();
    if let Some(path) = config_path(config) {
        loader = read_file(loader, &path)?;
    }
    Ok(loader.env(std::env::vars()))
}

/// A string-valued flag (`--out DIR` → `[crawl] out_dir`), when given.
fn str_flag(loader: Loader, flag: &str, section: &str, key: &str, value: Option<String>) -> Loader {
    match value {
        Some(v) => loader.flag(flag, section, key, Value::String(v)),
        None => loader,
    }
}

/// `--out DIR` and `--state-dir DIR`, shared by `crawl` and `forget`.
fn dir_flags(loader: Loader, out: Option<&Path>, state_dir: Option<&Path>) -> Loader {
    let path = |p: Option<&Path>| p.map(|p| p.display().to_string());
    let loader = str_flag(loader, "--out", "crawl", "out_dir", path(out));
    str_flag(loader, "--state-dir", "crawl", "state_dir", path(state_dir))
}

/// Every layer merged and checked; a bad value is a usage error naming the key.
fn build(loader: Loader) -> Result<CrawlConfig, Failure> {
    loader
        .build()
        .map_err(|e| Failure::new(USAGE, e.to_string().trim_end()))
}

pub(crate) fn load(args: &CrawlArgs) -> Result<CrawlConfig, Failure> {
    load_with(args, |l| l)
}

/// The configuration of `args`, with `extra` flags layered last.
pub(crate) fn load_with(
    args: &CrawlArgs,
    extra: impl FnOnce(Loader) -> Loader,
) -> Result<CrawlConfig, Failure> {
    let mut loader = file_and_env(args.config.as_deref())?;
    let mut seeds: Vec<String> = args.seeds.clone();
    if let Some(file) = &args.seeds_file {
        let text = std::fs::read_to_string(file).map_err(|e| {
            Failure::new(
                USAGE,
                format!("cannot read --seeds-file {}: {e}", file.display()),
            )
        })?;
        seeds.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_owned),
        );
    }
    if !seeds.is_empty() {
        loader = loader.flag(
            "--seed",
            "crawl",
            "seeds",
            Value::Array(seeds.into_iter().map(Value::String).collect()),
        );
    }
    let int = |n: u64| Value::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    loader = dir_flags(loader, args.out.as_deref(), args.state_dir.as_deref());
    if let Some(n) = args.max_pages {
        loader = loader.flag("--max-pages", "crawl", "max_pages", int(n));
    }
    if let Some(secs) = args.max_duration {
        loader = loader.flag("--max-duration", "crawl", "max_duration_secs", int(secs));
    }
    if let Some(n) = args.max_depth {
        loader = loader.flag("--max-depth", "crawl", "max_depth", int(n.into()));
    }
    if let Some(n) = args.concurrency {
        loader = loader.flag("--concurrency", "crawl", "concurrency", int(n.into()));
    }
    if let Some(n) = args.delay_ms {
        loader = loader.flag("--delay-ms", "politeness", "delay_ms", int(n));
    }
    loader = str_flag(
        loader,
        "--user-agent",
        "crawl",
        "user_agent",
        args.user_agent.clone(),
    );
    loader = str_flag(
        loader,
        "--log-format",
        "crawl",
        "log_format",
        args.log_format.clone(),
    );
    if args.warc {
        loader = loader.flag("--warc", "output", "warc", Value::Boolean(true));
    }
    if let Some(url) = &args.frontier_redis {
        loader = loader
            .flag(
                "--frontier-redis",
                "frontier",
                "backend",
                Value::String("redis".into()),
            )
            .flag(
                "--frontier-redis",
                "frontier",
                "redis_url",
                Value::String(url.clone()),
            );
    }
    if !args.domains.is_empty() {
        let list = args.domains.iter().cloned().map(Value::String).collect();
        loader = loader.flag("--domain", "frontier", "domains", Value::Array(list));
        if args.scope.is_none() {
            loader = loader.flag(
                "--domain",
                "frontier",
                "scope",
                Value::String("domains".into()),
            );
        }
    }
    loader = str_flag(loader, "--scope", "frontier", "scope", args.scope.clone());
    if args.ignore_robots {
        loader = loader.flag(
            "--ignore-robots",
            "crawl",
            "respect_robots",
            Value::Boolean(false),
        );
    }
    if !args.resolve.is_empty() {
        let mut table = toml::Table::new();
        for r in &args.resolve {
            let Some((name, ip)) = r.split_once('=') else {
                return Err(Failure::new(
                    USAGE,
                    format!("--resolve {r}: expected NAME=IP"),
                ));
            };
            table.insert(name.trim().to_owned(), Value::String(ip.trim().to_owned()));
        }
        loader = loader.flag("--resolve", "fetch", "resolve", Value::Table(table));
    }
    build(extra(loader))
}

pub fn config(cmd: ConfigCommand) -> Result<(), Failure> {
    match cmd {
        ConfigCommand::Default => {
            print!("{}", engine::DEFAULT_TOML);
            Ok(())
        }
        ConfigCommand::Check { file } => {
            build(read_file(Loader::new(), &file)?.env(std::env::vars()))?;
            println!("{}: ok", file.display());
            Ok(())
        }
    }
}

pub fn crawl(args: CrawlArgs) -> Result<(), Failure> {
    let cfg = load(&args)?;
    crate::telemetry::init(cfg.crawl.log_format);
    crate::limits::raise_open_files();
    runtime()?.block_on(async move {
        let shutdown = CancellationToken::new();
        tokio::spawn(watch_signals(shutdown.clone()));
        let interactive = std::io::stderr().is_terminal();
        let progress = if interactive {
            engine::ProgressMode::Bar
        } else {
            engine::ProgressMode::Log
        };
        let opts = engine::RunOptions {
            progress,
            fresh: args.fresh,
            serve: false,
        };
        match launch::run(cfg, shutdown, opts).await {
            Ok(summary) => {
                let mut line = format!(
                    "crawl {}: {} pages in {:.1} s ({:.0} pages/s on average), {} disallowed \
                     by robots.txt",
                    summary.stopped_by.describe(),
                    summary.pages,
                    summary.duration_secs,
                    summary.pages_per_sec_avg,
                    summary.robots_disallowed
                );
                if summary.pages_total > summary.pages {
                    line.push_str(&format!(
                        "; {} pages in all with the earlier runs of this crawl",
                        summary.pages_total
                    ));
                }
                if !summary.robots_unreachable.is_empty() {
                    line.push_str(&format!(
                        "; robots.txt unreachable on {} host(s): {}",
                        summary.robots_unreachable.len(),
                        first_three(
                            summary
                                .robots_unreachable
                                .iter()
                                .map(|(origin, why)| format!("{origin} ({why})"))
                        )
                    ));
                }
                if !summary.crawl_delay_skipped.is_empty() {
                    line.push_str(&format!(
                        "; not crawled for a robots.txt Crawl-delay above \
                         politeness.max_backoff_secs: {}",
                        first_three(
                            summary
                                .crawl_delay_skipped
                                .iter()
                                .map(|(origin, secs)| format!("{origin} ({secs} s)"))
                        )
                    ));
                }
                if interactive {
                    eprintln!("{line}");
                } else {
                    tracing::info!("{line}");
                }
                let resumed = summary.state.as_ref().is_some_and(|s| s.resumed);
                if resumed
                    && summary.pages == 0
                    && summary.stopped_by == engine::StopReason::Finished
                {
                    eprintln!(
                        "crawler: this crawl's state says everything was fetched already \
                         ({} pages; stats.json counts them as pages_total); run with --fresh \
                         to start over",
                        summary.pages_total
                    );
                }
                if summary.stopped_by == engine::StopReason::FrontierError {
                    return Err(Failure::new(
                        UNAVAILABLE,
                        "the shared frontier refused the crawl (see the error above); what \
                         was fetched is in pages.jsonl, and the rest stays queued in Redis",
                    ));
                }
                let pages_before = summary.state.as_ref().map_or(0, |s| s.pages_before);
                if summary.stopped_by == engine::StopReason::Finished
                    && summary.seeds_fetched == 0
                    && pages_before == 0
                    && !summary.seed_errors.is_empty()
                {
                    return Err(Failure::new(
                        UNAVAILABLE,
                        format!(
                            "not one seed could be fetched: {}",
                            summary.seed_errors.join("; ")
                        ),
                    ));
                }
                Ok(())
            }
            Err(e) => Err(engine_failure(e)),
        }
    })
}

/// The multi-threaded runtime a crawl or a service runs on.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(IO, format!("cannot start the runtime: {e}")))
}

/// The exit code and message of an error launching or running a crawl.
pub(crate) fn engine_failure(e: impl Into<launch::LaunchError>) -> Failure {
    use engine::EngineError;
    use launch::LaunchError::Engine;
    match e.into() {
        Engine(EngineError::Output(dir, e)) => {
            Failure::new(IO, format!("output in {}: {e}", dir.display()))
        }
        e if e.is_unavailable() => Failure::new(UNAVAILABLE, e),
        e @ Engine(EngineError::State(
            store::StoreError::Incompatible { .. } | store::StoreError::Newer { .. },
        )) => Failure::new(USAGE, e),
        e @ Engine(EngineError::State(_) | EngineError::Threads(_)) => Failure::new(IO, e),
        e => Failure::new(USAGE, e),
    }
}

/// `crawler forget`: canonicalise like the crawl does, then queue the URLs again in its state.
pub fn forget(args: ForgetArgs) -> Result<(), Failure> {
    let loader = file_and_env(args.config.as_deref())?;
    let cfg = build(dir_flags(
        loader,
        args.out.as_deref(),
        args.state_dir.as_deref(),
    ))?;
    let canon = frontier::Canonicalizer::new(engine::frontier_config(&cfg).canon);
    let mut urls = Vec::with_capacity(args.urls.len());
    for raw in &args.urls {
        let url = canon
            .canonicalize(raw, None)
            .map_err(|e| Failure::new(USAGE, format!("{raw}: {e}")))?;
        let url = url.to_string();
        let fp = frontier::fingerprint(&url);
        urls.push((url, fp));
    }
    let dir = engine::resume::state_dir(&cfg);
    let results = store::Store::forget(&dir, &urls).map_err(|e| match e {
        store::StoreError::InUse(_) => Failure::new(USAGE, format!("{e}: stop the crawl first")),
        e => Failure::new(IO, e),
    })?;
    for ((url, _), result) in urls.iter().zip(results) {
        match result {
            store::Forgot::Requeued => println!("requeued\t{url}"),
            store::Forgot::AlreadyQueued => println!("queued\t{url}\t(not fetched yet)"),
            store::Forgot::NeverSeen => println!("unknown\t{url}\t(this crawl never admitted it)"),
        }
    }
    Ok(())
}

/// `crawler health`: reads `status.json` and judges it (see [`judge`]).
pub fn health(args: HealthArgs) -> Result<(), Failure> {
    if let Some(api) = &args.api {
        let token = std::env::var("CRAWLER_SERVICE_API_TOKEN").unwrap_or_default();
        return match probe_api(api, &token, std::time::Duration::from_secs(5)) {
            Ok(line) => {
                println!("{line}");
                Ok(())
            }
            Err(line) => Err(Failure::new(UNHEALTHY, format!("unhealthy: {api}: {line}"))),
        };
    }
    let out = match args.out {
        Some(dir) => dir,
        None => build(file_and_env(args.config.as_deref())?)?.crawl.out_dir,
    };
    let path = out.join("status.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        Failure::new(
            UNHEALTHY,
            format!("unhealthy: no heartbeat in {}: {e}", path.display()),
        )
    })?;
    let status: engine::output::Status = serde_json::from_str(&text).map_err(|e| {
        Failure::new(
            UNHEALTHY,
            format!("unhealthy: {} is not a status file: {e}", path.display()),
        )
    })?;
    let verdict = judge(&status, engine::output::now_unix_ms(), args.max_age_secs);
    match verdict {
        Ok(line) => {
            println!("{line}");
            Ok(())
        }
        Err(line) => Err(Failure::new(UNHEALTHY, line)),
    }
}

/// GET `<base>/api/v1/status` over plain HTTP/1.1 (a health check runs next to the service,
/// on loopback): the state and counts, or why not.
fn probe_api(base: &str, token: &str, timeout: std::time::Duration) -> Result<String, String> {
    use std::io::{Read, Write};
    let rest = base
        .strip_prefix("http://")
        .ok_or("only http:// URLs are probed")?;
    let authority = rest.split('/').next().unwrap_or(rest);
    let addr = std::net::ToSocketAddrs::to_socket_addrs(authority)
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("no address")?;
    let mut s = std::net::TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let auth = if token.is_empty() {
        String::new()
    } else {
        format!("Authorization: Bearer {token}\r\n")
    };
    write!(
        s,
        "GET /api/v1/status HTTP/1.1\r\nHost: {authority}\r\n{auth}Connection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    s.take(1 << 20)
        .read_to_end(&mut raw)
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no HTTP response")?;
    let code = head.split(' ').nth(1).unwrap_or("");
    if code != "200" {
        return Err(format!("answered {code}"));
    }
    let v: serde_json::Value =
        serde_json::from_str(body.trim()).map_err(|e| format!("not a status: {e}"))?;
    let state = v["state"].as_str().ok_or("no state in the status")?;
    Ok(format!(
        "ok: {state}: {} pages, {} queued in memory, {} in flight",
        v["pages"], v["queued_memory"], v["in_flight"]
    ))
}

/// Longest pause of fetching for the crawl state (checkpoints behind: a slow or stalled
/// disk) that is still healthy.
const MAX_PAUSE_SECS: u64 = 120;

/// Healthy when the crawl has ended, or its last heartbeat is recent enough and it is not
/// stuck waiting for its state to be written.
fn judge(
    status: &engine::output::Status,
    now_ms: u64,
    max_age: Option<u64>,
) -> Result<String, String> {
    let max_age = max_age.unwrap_or(3 * status.every_secs + 10);
    let age = now_ms.saturating_sub(status.updated_unix_ms) / 1000;
    let pages = if status.pages_total > status.pages {
        format!(
            "{} pages ({} by this run)",
            status.pages_total, status.pages
        )
    } else {
        format!("{} pages", status.pages)
    };
    let what = format!(
        "{pages}, {} queued, {} in flight, heartbeat {age} s ago",
        status.queued, status.in_flight
    );
    if !matches!(
        status.state.as_str(),
        "running" | "paused" | "idle" | "draining"
    ) {
        Ok(format!("ok: crawl ended ({}): {what}", status.state))
    } else if age > max_age {
        Err(format!(
            "unhealthy: running crawl (pid {}) stalled: {what} (limit {max_age} s)",
            status.pid
        ))
    } else if status.paused_secs > MAX_PAUSE_SECS {
        Err(format!(
            "unhealthy: fetching paused for {} s waiting for the crawl state to be written \
             ({} events not yet committed; a slow or stalled disk?): {what}",
            status.paused_secs, status.state_backlog
        ))
    } else {
        Ok(format!("ok: running: {what}"))
    }
}

/// First SIGINT/SIGTERM: graceful stop (drain, flush, exit 0). Second: exit at once.
pub(crate) async fn watch_signals(shutdown: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
    tracing::warn!("signal received: stopping (send it again to exit at once)");
    shutdown.cancel();
    tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
    eprintln!("crawler: second signal, exiting now");
    std::process::exit(130);
}

/// The first three of `items`, comma-separated, and how many more there are.
fn first_three(items: impl ExactSizeIterator<Item = String>) -> String {
    let more = items.len().saturating_sub(3);
    let shown: Vec<String> = items.take(3).collect();
    match more {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::judge;

    fn status(state: &str, at_ms: u64) -> engine::output::Status {
        engine::output::Status {
            state: state.into(),
            pid: 7,
            updated_at: String::new(),
            updated_unix_ms: at_ms,
            every_secs: 5,
            pages: 10,
            pages_per_sec: 1.0,
            queued: 3,
            in_flight: 1,
            hosts: 1,
            filter_fill: 0.0,
            filter_fpp: 0.0,
            state_backlog: 0,
            frontier_unavailable_secs: None,
            paused: false,
            paused_secs: 0,
            ..Default::default()
        }
    }

    #[test]
    fn a_running_crawl_is_healthy_while_its_heartbeat_is_fresh() {
        let now = 1_000_000_000;
        assert!(judge(&status("running", now - 20_000), now, None).is_ok());
        // Default limit: 3 × 5 s + 10 s.
        let stale = judge(&status("running", now - 26_000), now, None).unwrap_err();
        assert!(
            stale.contains("stalled") && stale.contains("26 s ago"),
            "{stale}"
        );
        assert!(judge(&status("running", now - 26_000), now, Some(30)).is_ok());
        // A clock that went backwards is not a stall.
        assert!(judge(&status("running", now + 5_000), now, None).is_ok());
    }

    #[test]
    fn a_crawl_waiting_too_long_for_its_state_is_unhealthy() {
        let now = 1_000_000_000;
        let mut paused = status("running", now - 1_000);
        paused.paused = true;
        paused.state_backlog = 500_000;
        paused.paused_secs = 30;
        assert!(judge(&paused, now, None).is_ok(), "a short pause is fine");
        paused.paused_secs = 121;
        let verdict = judge(&paused, now, None).unwrap_err();
        assert!(
            verdict.contains("paused for 121 s") && verdict.contains("500000 events"),
            "{verdict}"
        );
        // An ended crawl is not paused any more.
        paused.state = "finished".into();
        assert!(judge(&paused, now, None).is_ok());
    }

    #[test]
    fn an_ended_crawl_is_healthy_however_old() {
        let line = judge(&status("finished", 0), 1_000_000_000, Some(1)).unwrap();
        assert!(line.contains("finished"), "{line}");
    }

    #[test]
    fn a_rerun_of_a_finished_crawl_reports_its_totals() {
        let mut rerun = status("finished", 0);
        rerun.pages = 0;
        rerun.pages_total = 210;
        let line = judge(&rerun, 1_000_000_000, None).unwrap();
        assert!(line.contains("210 pages (0 by this run)"), "{line}");
    }
}
