//! The frontier contract suite against the `urlfrontier` backend, with this project's own
//! url-frontier service (`crawler serve`'s gRPC API) on the other end: each check opens a
//! service of its own, started with the check's settings (politeness, budgets per queue,
//! memory); the restore check reopens a backend on the same service (a restarted fetcher),
//! whose unreported URLs come back when their hold ends.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use frontier::{Frontier, FrontierConfig, Order};
use test_support::contract::{self, Harness, Lacks};
use tokio_util::sync::CancellationToken;
use urlfrontier_backend::{BackendSettings, UrlFrontierBackend};

/// One url-frontier service: a crawl with no workers of its own behind the gRPC API.
struct Service {
    running: Option<engine::Running>,
    shutdown: CancellationToken,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

/// The service's crawl settings for a check's frontier settings.
fn service_config(cfg: &FrontierConfig, dir: &std::path::Path) -> engine::CrawlConfig {
    let mut c = engine::CrawlConfig::default();
    c.crawl.out_dir = dir.join("out");
    c.crawl.progress_secs = 3600;
    c.crawl.workers = engine::Workers::Count(0);
    c.crawl.concurrency = 10_000;
    c.crawl.persist = false;
    c.politeness.delay_ms = u64::try_from(cfg.politeness.delay.as_millis()).unwrap();
    c.politeness.max_per_host = cfg.politeness.max_per_host;
    c.politeness.backoff_base_ms = u64::try_from(cfg.politeness.backoff_base.as_millis()).unwrap();
    c.politeness.max_backoff_secs = cfg.politeness.max_backoff.as_secs().max(1);
    c.frontier.scope = engine::ScopeKind::Any;
    c.frontier.memory_capacity = cfg.memory_capacity as u64;
    c.frontier.max_pages_per_host = cfg.max_pages_per_host.unwrap_or(0);
    c.frontier.order = match cfg.order {
        Order::BreadthFirst => engine::QueueOrder::BreadthFirst,
        Order::DepthFirst => engine::QueueOrder::DepthFirst,
    };
    c.fetch.max_redirects = cfg.max_redirects;
    c.service.max_urls_per_call = 10_000;
    c
}

impl Service {
    async fn start(cfg: &FrontierConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let c = service_config(cfg, dir.path());
        let settings = urlfrontier_service::Settings {
            api: service::Settings::from_config(&c),
            log_levels: None,
        };
        let opts = engine::RunOptions {
            progress: engine::ProgressMode::Log,
            fresh: true,
            serve: true,
        };
        let running = launch::start(c, opts)
            .await
            .expect("the service's crawl starts");
        let crawls = Arc::new(engine::crawls::Crawls::new(running.control(), None, 0));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        tokio::spawn(urlfrontier_service::serve_grpc(
            listener,
            crawls,
            settings,
            shutdown.clone(),
        ));
        Self {
            running: Some(running),
            shutdown,
            addr,
            _dir: dir,
        }
    }

    async fn stop(mut self) {
        self.shutdown.cancel();
        if let Some(running) = self.running.take() {
            let _ = running.finish(self.shutdown.clone()).await;
        }
    }
}

struct OnService {
    service: Mutex<Option<Service>>,
}

impl OnService {
    fn backend(&self, cfg: FrontierConfig, seeds: &[&str]) -> Arc<dyn Frontier> {
        let addr = self.service.lock().unwrap().as_ref().expect("started").addr;
        let settings = BackendSettings {
            url: format!("http://{addr}"),
            crawl_id: String::new(),
            token: None,
            hold: Duration::from_secs(1),
        };
        Arc::new(UrlFrontierBackend::connect(cfg, settings, seeds).expect("backend"))
    }
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(f))
}

impl Harness for OnService {
    fn open(&self, cfg: FrontierConfig, seeds: &[&str]) -> Arc<dyn Frontier> {
        let old = self.service.lock().unwrap().take();
        if let Some(old) = old {
            block_on(old.stop());
        }
        let fresh = block_on(Service::start(&cfg));
        *self.service.lock().unwrap() = Some(fresh);
        self.backend(cfg, seeds)
    }

    fn reopen(&self, cfg: FrontierConfig, seeds: &[&str]) -> Option<Arc<dyn Frontier>> {
        Some(self.backend(cfg, seeds))
    }

    /// What url-frontier v2 cannot say: a URL given back goes to the back of its queue (a
    /// known item with a date), there are no per-host in-flight limits or admission budgets
    /// to set, a fetch's observation does not reach a schedule kept there, GetStats of a
    /// queue whose URLs all sleep says there is none, and a fetch's duration does not pace
    /// its queue there (the service paces by its own delays).
    fn lacks(&self, _what: Lacks) -> bool {
        true
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_urlfrontier_backend_keeps_the_contract() {
    let h = OnService {
        service: Mutex::new(None),
    };
    contract::run_all(&h).await;
    let last = h.service.lock().unwrap().take();
    if let Some(s) = last {
        s.stop().await;
    }
}

/// A server's `Retry-After` far in the future (a hostile one) backs its queue off for
/// `politeness.max_backoff` at most, and the crawl goes on (the service takes no date past
/// 2100, and a refused back-off must not stop the crawl).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hostile_retry_after_backs_off_no_longer_than_the_most() {
    let h = OnService {
        service: Mutex::new(None),
    };
    let cfg = contract::base_config();
    let most = cfg.politeness.max_backoff;
    let f = h.open(cfg, &[]);
    let link = |u: &str| frontier::Link::new(url::Url::parse(u).unwrap(), 1);
    let admitted = f.offer(None, vec![link("http://h.test/1")]).await.unwrap();
    assert_eq!(admitted, [frontier::Admission::Admitted]);
    let l = f.try_next().await.unwrap().expect("queued");
    let hostile = frontier::Outcome::HostError {
        retry_after: Some(Duration::from_secs(10_000_000_000)),
    };
    f.complete(l, hostile)
        .await
        .expect("a completion, not a failure");
    let one = frontier::HostQuery {
        host: Some("h.test".into()),
        ..frontier::HostQuery::default()
    };
    let host = f.hosts(one).await.unwrap().hosts.remove(0);
    assert!(
        host.ready_in <= most + Duration::from_secs(1),
        "held {:?}, at most {most:?}",
        host.ready_in
    );
    let last = h.service.lock().unwrap().take();
    if let Some(s) = last {
        s.stop().await;
    }
}
