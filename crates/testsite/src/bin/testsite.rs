//! `testsite`: serve a generated web on loopback, or print its ground truth.

use std::net::IpAddr;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, ValueEnum};
use testsite::{Addressing, Hostile, Observer, Site, SiteConfig};

/// Serve a deterministic, multi-host test web (or print what a correct crawler must fetch).
#[derive(Debug, Parser)]
#[command(name = "testsite", version)]
struct Args {
    /// Numeric pages (generated on request, never stored).
    #[arg(long, default_value_t = testsite::DEFAULT_PAGES)]
    pages: u64,
    /// Tree links per page.
    #[arg(long, default_value_t = testsite::DEFAULT_FANOUT)]
    fanout: u32,
    /// Extra pseudo-random links per page (duplicates, cross-host).
    #[arg(long, default_value_t = testsite::DEFAULT_EXTRA_LINKS)]
    extra_links: u32,
    /// Virtual hosts.
    #[arg(long, default_value_t = testsite::DEFAULT_HOSTS)]
    hosts: u32,
    /// Length of each host's deep chain of pages.
    #[arg(long, default_value_t = testsite::DEFAULT_DEPTH)]
    depth: u32,
    /// Orphan pages per host (served, never linked).
    #[arg(long, default_value_t = testsite::DEFAULT_ORPHANS)]
    orphans: u32,
    /// Seed of every pseudo-random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Hosts by name (`h0.test`, told apart by the Host header) or by address (127.0.0.x).
    #[arg(long, value_enum, default_value_t = AddressingArg::Names)]
    addressing: AddressingArg,
    /// Crawl-delay (seconds) in host 0's robots.txt.
    #[arg(long)]
    crawl_delay: Option<f64>,
    /// Hostile modes, comma-separated, or `all`: slow-first-byte, drip, endless, huge,
    /// gzip-bomb, many-links, nested, trap, huge-headers, redirect-private, redirect-loop,
    /// many-hosts, huge-robots, retry-after-year, reset, sitemap-bomb, not-modified.
    #[arg(long, default_value = "")]
    hostile: String,
    /// Numeric pages of about 8 MB, spread over the site.
    #[arg(long, default_value_t = 0)]
    big_pages: u32,
    /// Seconds the slow-first-byte page waits.
    #[arg(long, default_value_t = 30)]
    slow_secs: u64,
    /// Milliseconds every HTML page waits before it is answered (a far-away site: latency,
    /// not CPU).
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Per host, milliseconds its HTML pages wait instead: `10,100,400` (host i takes entry
    /// i modulo the list).
    #[arg(long, value_delimiter = ',', value_name = "MS,...")]
    host_latency_ms: Vec<u64>,
    /// Pages change over time: `DAY_SECS,MIN_PER_DAY,MAX_PER_DAY` — each numeric page gets new
    /// versions at its own rate (log-uniform between the bounds, per simulated day of
    /// DAY_SECS seconds), with ETag and Last-Modified that follow and 304s to conditional
    /// requests; the request log gives the version served.
    #[arg(long, value_name = "DAY_SECS,MIN,MAX")]
    changing: Option<String>,
    /// Address to listen on (names mode).
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Port to listen on; every URL contains it (unless it is 80).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Worker threads of the server (1 = everything on one core).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Append every request as one JSON object per line to FILE (time, host, path, requests
    /// in flight to that host, status, user agent), for politeness checks from the server's side.
    #[arg(long, value_name = "FILE")]
    request_log: Option<std::path::PathBuf>,
    /// Print the ground truth (`URL<TAB>expected outcome`, then `# counts` and `# trap`
    /// lines) for this configuration and port, and exit.
    #[arg(long)]
    ground_truth: bool,
    /// With --ground-truth: for a crawler that does not read sitemaps (leaves out the
    /// sitemap files and the pages only they list).
    #[arg(long)]
    no_sitemaps: bool,
    /// Write every link as a plain absolute URL (same URLs, same ground truth; for crawlers
    /// that do not resolve every form of link).
    #[arg(long)]
    plain_links: bool,
    /// Ask a running test site on --port (at 127.0.0.1) for /robots.txt and exit 0 if it
    /// answers within 2 s, 1 if not: a container HEALTHCHECK.
    #[arg(long)]
    probe: bool,
    /// Read a --request-log FILE written by a changing site of this configuration and port,
    /// print how fresh the crawl kept it (JSON: pages, fetches, not_modified, fresh,
    /// mean_age_secs) over --window, and exit.
    #[arg(long, value_name = "FILE")]
    freshness: Option<std::path::PathBuf>,
    /// With --freshness: the window, seconds since the site started (`FROM,TO`; default: from
    /// 0 to the last request).
    #[arg(long, value_name = "FROM,TO")]
    window: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum AddressingArg {
    Names,
    Ips,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.probe {
        return probe(args.port);
    }
    let hostile = match Hostile::parse(&args.hostile) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("testsite: --hostile: {e}");
            return ExitCode::from(64);
        }
    };
    let changing = match args.changing.as_deref().map(testsite::Changing::parse) {
        None => None,
        Some(Ok(c)) => Some(c),
        Some(Err(e)) => {
            eprintln!("testsite: {e}");
            return ExitCode::from(64);
        }
    };
    let cfg = SiteConfig {
        pages: args.pages,
        fanout: args.fanout,
        extra_links: args.extra_links,
        hosts: args.hosts,
        depth: args.depth,
        orphans: args.orphans,
        seed: args.seed,
        addressing: match args.addressing {
            AddressingArg::Names => Addressing::Names,
            AddressingArg::Ips => Addressing::Ips,
        },
        crawl_delay: args.crawl_delay,
        slow_secs: args.slow_secs,
        hostile,
        big_pages: args.big_pages,
        plain_links: args.plain_links,
        latency_ms: args.latency_ms,
        host_latency_ms: args.host_latency_ms,
        changing,
    };
    if let Err(e) = cfg.validate() {
        eprintln!("testsite: {e}");
        return ExitCode::from(64);
    }
    if let Some(log) = &args.freshness {
        return print_freshness(cfg, args.port, log, args.window.as_deref());
    }
    if args.ground_truth {
        let crawler = testsite::Crawler {
            sitemaps: !args.no_sitemaps,
        };
        return print_ground_truth(cfg, args.port, crawler);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("testsite: cannot start the runtime: {e}");
            return ExitCode::from(71);
        }
    };
    runtime.block_on(async move {
        let (listeners, port) = match testsite::bind(&cfg, args.bind, args.port).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!(
                    "testsite: cannot listen on {}:{}: {e}",
                    args.bind, args.port
                );
                return ExitCode::from(69);
            }
        };
        let site = Site::new(cfg, port).expect("validated above");
        eprintln!(
            "testsite: serving {} hosts; seed URL {}",
            site.config().hosts,
            site.seed_url()
        );
        let (observer, writer) = match &args.request_log {
            Some(path) => match std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                Ok(file) => {
                    let (o, w) = Observer::with_log_writer(file);
                    (o, Some(w))
                }
                Err(e) => {
                    eprintln!(
                        "testsite: cannot open --request-log {}: {e}",
                        path.display()
                    );
                    return ExitCode::from(73);
                }
            },
            None => (Observer::new(false), None),
        };
        let observer = Arc::new(observer);
        testsite::serve(listeners, site, Arc::clone(&observer), shutdown_signal()).await;
        eprintln!(
            "testsite: stopped after {} requests",
            observer.total_requests()
        );
        drop(observer);
        if let Some(Err(e)) = writer.map(|w| w.join().unwrap_or(Ok(()))) {
            eprintln!("testsite: request log: {e}");
            return ExitCode::from(74);
        }
        ExitCode::SUCCESS
    })
}

/// One HTTP/1.0 request to 127.0.0.1:`port`; any status line counts as an answer.
fn probe(port: u16) -> ExitCode {
    use std::io::{Read, Write};
    use std::time::Duration;
    let limit = Duration::from_secs(2);
    let answer = (|| -> std::io::Result<String> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let mut conn = std::net::TcpStream::connect_timeout(&addr, limit)?;
        conn.set_read_timeout(Some(limit))?;
        conn.set_write_timeout(Some(limit))?;
        conn.write_all(b"GET /robots.txt HTTP/1.0\r\nHost: h0.test\r\n\r\n")?;
        let mut head = [0u8; 64];
        let n = conn.read(&mut head)?;
        Ok(String::from_utf8_lossy(&head[..n])
            .lines()
            .next()
            .unwrap_or("")
            .to_owned())
    })();
    match answer {
        Ok(line) if line.starts_with("HTTP/") => {
            println!("testsite: up: {line}");
            ExitCode::SUCCESS
        }
        Ok(line) => {
            eprintln!("testsite: port {port} answered {line:?}, not HTTP");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("testsite: port {port}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves on SIGINT or SIGTERM (`docker stop` sends SIGTERM).
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

fn print_ground_truth(cfg: SiteConfig, port: u16, crawler: testsite::Crawler) -> ExitCode {
    use std::io::Write;
    let site = Site::new(cfg, port).expect("validated");
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut counts = std::collections::BTreeMap::<String, u64>::new();
    let mut failed = false;
    site.walk_ground_truth_for(crawler, |url, expected| {
        *counts.entry(expected.to_string()).or_default() += 1;
        failed |= writeln!(out, "{url}\t{expected}").is_err();
    });
    let counts: Vec<String> = counts
        .iter()
        .map(|(k, v)| format!("\"{k}\": {v}"))
        .collect();
    failed |= writeln!(out, "# counts {{{}}}", counts.join(", ")).is_err();
    for prefix in site.trap_prefixes() {
        failed |= writeln!(out, "# trap {prefix}").is_err();
    }
    failed |= out.flush().is_err();
    if failed {
        ExitCode::from(74)
    } else {
        ExitCode::SUCCESS
    }
}

/// `--freshness`: the request log read back, and the freshness it kept.
fn print_freshness(
    cfg: SiteConfig,
    port: u16,
    log: &std::path::Path,
    window: Option<&str>,
) -> ExitCode {
    if cfg.changing.is_none() {
        eprintln!("testsite: --freshness needs the site's --changing");
        return ExitCode::from(64);
    }
    let text = match std::fs::read_to_string(log) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("testsite: cannot read {}: {e}", log.display());
            return ExitCode::from(66);
        }
    };
    let mut records = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let v: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("testsite: {}:{}: {e}", log.display(), n + 1);
                return ExitCode::from(65);
            }
        };
        records.push(testsite::RequestRecord {
            at_ms: v["at_ms"].as_f64().unwrap_or(0.0),
            host: v["host"].as_str().unwrap_or("?").to_owned(),
            path: v["path"].as_str().unwrap_or("").to_owned(),
            concurrent: 0,
            status: v["status"]
                .as_u64()
                .and_then(|s| u16::try_from(s).ok())
                .unwrap_or(0),
            user_agent: String::new(),
            version: v["version"].as_u64(),
        });
    }
    let last = records.iter().map(|r| r.at_ms / 1000.0).fold(0.0, f64::max);
    let (from, to) = match window.map(|w| w.split_once(',')) {
        None => (0.0, last),
        Some(Some((a, b))) => match (a.trim().parse(), b.trim().parse()) {
            (Ok(a), Ok(b)) if a < b => (a, b),
            _ => {
                eprintln!("testsite: --window takes FROM,TO seconds with FROM < TO");
                return ExitCode::from(64);
            }
        },
        Some(None) => {
            eprintln!("testsite: --window takes FROM,TO seconds");
            return ExitCode::from(64);
        }
    };
    let site = match Site::new(cfg, port) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("testsite: {e}");
            return ExitCode::from(64);
        }
    };
    let f = site.freshness(&records, from, to);
    println!(
        "{{\"from\":{from:.1},\"to\":{to:.1},\"pages\":{},\"fetches\":{},\"not_modified\":{},\"fresh\":{:.4},\"mean_age_secs\":{:.2}}}",
        f.pages, f.fetches, f.not_modified, f.fresh, f.mean_age_secs
    );
    ExitCode::SUCCESS
}
