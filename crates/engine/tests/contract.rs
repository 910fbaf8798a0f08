//! The frontier contract suite against `LocalFrontier` journaling into the crawl state
//! (`crates/store`), as `crawler crawl` runs it: the restore check reopens the state the way
//! a resumed crawl does (`engine::state::restore`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use frontier::contract::{self, Harness};
use frontier::{Frontier, FrontierConfig, LocalFrontier};
use store::Store;

/// Each `open` gets a state directory of its own; `reopen` closes the last one's store (its
/// final checkpoint: what a graceful stop commits) and opens it again.
struct Durable {
    root: tempfile::TempDir,
    opened: Mutex<(u32, Option<Store>)>,
}

impl Durable {
    fn new() -> Self {
        Self {
            root: tempfile::tempdir().unwrap(),
            opened: Mutex::new((0, None)),
        }
    }

    fn start(&self, cfg: FrontierConfig, seeds: &[&str], fresh: bool) -> Arc<dyn Frontier> {
        let mut opened = self.opened.lock().unwrap();
        if let Some(old) = opened.1.take() {
            old.close().expect("final checkpoint");
        }
        if fresh {
            opened.0 += 1;
        }
        let dir: PathBuf = self.root.path().join(opened.0.to_string());
        let every = Duration::from_millis(20);
        let store = Store::open(&dir, &BTreeMap::new(), store::Dedup::Bloom, false, every)
            .expect("state opens");
        let local = LocalFrontier::new(cfg, seeds).expect("frontier");
        let (f, _) = engine::state::restore(local, &store, dir).expect("restore");
        opened.1 = Some(store);
        Arc::new(f)
    }
}

impl Harness for Durable {
    fn open(&self, cfg: FrontierConfig, seeds: &[&str]) -> Arc<dyn Frontier> {
        self.start(cfg, seeds, true)
    }

    fn reopen(&self, cfg: FrontierConfig, seeds: &[&str]) -> Option<Arc<dyn Frontier>> {
        Some(self.start(cfg, seeds, false))
    }
}

/// One test per check of the suite, each with a harness of its own.
macro_rules! contract_tests {
    ($($check:ident),+ $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $check() {
            contract::$check(&Durable::new()).await;
        }
    )+};
}

contract_tests!(
    exactly_once_under_concurrent_offers,
    politeness_delay_and_in_flight_limit,
    completion_retry_and_backoff,
    failures_in_flight_together_back_off_once,
    a_success_ends_the_back_off_at_once,
    end_of_crawl_and_close,
    budgets,
    restore,
);
