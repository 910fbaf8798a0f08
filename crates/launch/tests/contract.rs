//! The frontier contract suite against `LocalFrontier` journaling into the crawl state
//! (`crates/store`), as `crawler crawl` runs it: the restore check reopens the state the way
//! a resumed crawl does (`engine::resume::restore`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use frontier::{Frontier, FrontierConfig, LocalFrontier};
use store::Store;
use test_support::contract::{self, Harness};

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
        let local = Box::new(LocalFrontier::new(cfg, seeds).expect("frontier"));
        let (f, _) = engine::resume::restore(local, &store, dir).expect("restore");
        opened.1 = Some(store);
        Arc::from(f as Box<dyn Frontier>)
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

/// Every check of the suite, as the in-memory and the Redis frontier run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_durable_frontier_keeps_the_whole_contract() {
    contract::run_all(&Durable::new()).await;
}
