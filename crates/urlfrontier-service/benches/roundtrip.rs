//! The url-frontier API's throughput and hand-out latency, in one process over loopback,
//! through the generated tonic client (BENCHMARKS.md §6):
//!
//! - **round trips**: N URLs on H hosts put as discovered (PutDiscovered, batches of B), then
//!   taken (GetURLs of up to B) and reported done (PutURLs of B known items) until none is
//!   left: URLs per second of each phase;
//! - **latency**: the median and p99 of a GetURLs of B URLs (reported done at once, so the
//!   frontier keeps its size) with the frontier holding N URLs on H hosts;
//! - **per-URL reads** with the frontier holding what is left (N less the latency samples):
//!   a GetURLStatus (median; some of the URLs asked are done by then), CountURLs
//!   without a filter (lengths only) and with one (a pass over every URL), a ListURLs
//!   page of 100 from the middle, and a PurgeURLs by age that drops none (a pass over every
//!   URL that queues each again).
//!
//! `cargo bench -p urlfrontier-service --bench roundtrip -- [--n N] [--hosts H] [--batch B]
//! [--samples S]`

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tonic::transport::{Channel, Endpoint};
use urlfrontier_proto::v2::url_frontier_client::UrlFrontierClient;
use urlfrontier_proto::v2::url_item::Item;
use urlfrontier_proto::v2::{
    CountUrlParams, DiscoveredBatch, GetParams, KnownUrlItem, ListUrlParams, PurgeUrlParams,
    UrlInfo, UrlItem, UrlStatusRequest,
};

struct Args {
    n: usize,
    hosts: usize,
    batch: usize,
    samples: usize,
}

fn args() -> Args {
    let mut a = Args {
        n: 100_000,
        hosts: 1_000,
        batch: 1_000,
        samples: 50,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let value = || argv.get(i + 1).and_then(|v| v.parse().ok());
        match argv[i].as_str() {
            "--n" => a.n = value().expect("--n N"),
            "--hosts" => a.hosts = value().expect("--hosts H"),
            "--batch" => a.batch = value().expect("--batch B"),
            "--samples" => a.samples = value().expect("--samples S"),
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    a
}

fn url(i: usize, hosts: usize) -> String {
    format!("http://h{}.test/p{i}", i % hosts)
}

async fn put_all(c: &mut UrlFrontierClient<Channel>, a: &Args) {
    let batches: Vec<DiscoveredBatch> = (0..a.n)
        .collect::<Vec<_>>()
        .chunks(a.batch)
        .enumerate()
        .map(|(b, ids)| DiscoveredBatch {
            id: b.to_string(),
            items: ids
                .iter()
                .map(|&i| UrlInfo {
                    url: url(i, a.hosts),
                    ..UrlInfo::default()
                })
                .collect(),
        })
        .collect();
    let mut acks = c
        .put_discovered(tonic::codegen::tokio_stream::iter(batches))
        .await
        .unwrap()
        .into_inner();
    while acks.message().await.unwrap().is_some() {}
}

/// One GetURLs of up to `batch` URLs, then their PutURLs as known and done: the URLs taken.
async fn get_and_finish(c: &mut UrlFrontierClient<Channel>, batch: usize) -> (usize, Duration) {
    let started = Instant::now();
    let mut infos = c
        .get_ur_ls(GetParams {
            max_urls_per_queue: u32::try_from(batch).unwrap(),
            max_queues: 1,
            delay_requestable: 300,
            ..GetParams::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut urls = Vec::new();
    while let Some(info) = infos.message().await.unwrap() {
        urls.push(info.url);
    }
    let took = started.elapsed();
    let n = urls.len();
    let items = urls.into_iter().map(|u| UrlItem {
        item: Some(Item::Known(KnownUrlItem {
            info: Some(UrlInfo {
                url: u,
                ..UrlInfo::default()
            }),
            refetchable_from_date: 0,
        })),
        ..UrlItem::default()
    });
    let mut acks = c
        .put_ur_ls(tonic::codegen::tokio_stream::iter(
            items.collect::<Vec<_>>(),
        ))
        .await
        .unwrap()
        .into_inner();
    while acks.message().await.unwrap().is_some() {}
    (n, took)
}

/// Times GetURLStatus, CountURLs and a ListURLs page with about `n` URLs queued.
async fn per_url_reads(c: &mut UrlFrontierClient<Channel>, a: &Args) {
    let mut took = Vec::new();
    for s in 0..a.samples {
        let request = UrlStatusRequest {
            url: url((s * 7919 + a.n / 2) % a.n, a.hosts),
            ..UrlStatusRequest::default()
        };
        let started = Instant::now();
        let _ = c.get_url_status(request).await;
        took.push(started.elapsed());
    }
    took.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let count = |filter: Option<&str>| CountUrlParams {
        filter: filter.map(str::to_owned),
        ..CountUrlParams::default()
    };
    let started = Instant::now();
    let all = c.count_ur_ls(count(None)).await.unwrap().into_inner().value;
    let plain = started.elapsed();
    let started = Instant::now();
    let some = c
        .count_ur_ls(count(Some("/p9")))
        .await
        .unwrap()
        .into_inner()
        .value;
    let filtered = started.elapsed();
    let page = ListUrlParams {
        start: u32::try_from(all / 2).unwrap_or(u32::MAX),
        size: 100,
        ..ListUrlParams::default()
    };
    let started = Instant::now();
    let mut items = c.list_ur_ls(page).await.unwrap().into_inner();
    let mut listed = 0;
    while items.message().await.unwrap().is_some() {
        listed += 1;
    }
    let list = started.elapsed();
    // Every URL is younger than a day: the purge drops none but reads (and keeps in order)
    // every one — its worst case.
    let purge = PurgeUrlParams {
        days: 1,
        ..PurgeUrlParams::default()
    };
    let started = Instant::now();
    let purged = c.purge_ur_ls(purge).await.unwrap().into_inner().value;
    let by_age = started.elapsed();
    println!(
        "reads  with {all} queued: GetURLStatus median {:.2} ms; CountURLs in {:.2} ms, \
         filtered ({some}) {:.1} ms; ListURLs {listed} from the middle {:.1} ms; \
         PurgeURLs days = 1 ({purged} dropped) {:.1} ms",
        ms(took[took.len() / 2]),
        ms(plain),
        ms(filtered),
        ms(list),
        ms(by_age)
    );
}

fn main() {
    let a = args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = engine::CrawlConfig::default();
        cfg.crawl.out_dir = dir.path().join("out");
        cfg.crawl.progress_secs = 3600;
        cfg.crawl.workers = engine::Workers::Count(0);
        cfg.crawl.concurrency = u32::try_from(a.batch).unwrap();
        cfg.politeness.delay_ms = 0;
        cfg.politeness.max_per_host = u32::try_from(a.batch).unwrap();
        cfg.service.max_urls_per_call = a.batch as u64;
        let settings = urlfrontier_service::Settings {
            api: service::Settings::from_config(&cfg),
            log_levels: None,
        };
        let opts = engine::RunOptions {
            progress: engine::ProgressMode::Log,
            fresh: true,
            serve: true,
        };
        let running = launch::start(cfg, opts).await.expect("engine starts");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        // The service's crawl alone (no maker: the bench names no other crawl).
        let crawls = std::sync::Arc::new(engine::crawls::Crawls::new(running.control(), None, 0));
        let server = tokio::spawn(urlfrontier_service::serve_grpc(
            listener,
            crawls,
            settings,
            shutdown.clone(),
        ));
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut c = UrlFrontierClient::new(channel);

        let started = Instant::now();
        put_all(&mut c, &a).await;
        let put = started.elapsed();
        println!(
            "put    {} URLs on {} hosts in batches of {}: {:.2} s, {:.0} URLs/s",
            a.n,
            a.hosts,
            a.batch,
            put.as_secs_f64(),
            a.n as f64 / put.as_secs_f64()
        );

        let mut latencies = Vec::new();
        for _ in 0..a.samples {
            let (_, took) = get_and_finish(&mut c, a.batch).await;
            latencies.push(took);
        }
        latencies.sort();
        let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
        println!(
            "GetURLs of {} with ~{} queued: median {:.2} ms, p99 {:.2} ms",
            a.batch,
            a.n,
            at(0.5).as_secs_f64() * 1e3,
            at(0.99).as_secs_f64() * 1e3
        );
        per_url_reads(&mut c, &a).await;

        let started = Instant::now();
        let mut done = 0;
        loop {
            let (n, _) = get_and_finish(&mut c, a.batch).await;
            if n == 0 {
                break;
            }
            done += n;
        }
        let took = started.elapsed();
        println!(
            "take   {done} URLs (GetURLs + PutURLs known, {} a call): {:.2} s, {:.0} URLs/s",
            a.batch,
            took.as_secs_f64(),
            done as f64 / took.as_secs_f64()
        );
        shutdown.cancel();
        running.finish(shutdown.clone()).await.unwrap();
        server.await.unwrap().unwrap();
    });
}
