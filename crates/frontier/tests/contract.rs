//! The frontier contract suite against `LocalFrontier` without durable state (the restore
//! check runs with the crawl state in `crates/engine/tests/contract.rs`).

use std::sync::Arc;

use frontier::{Frontier, FrontierConfig, LocalFrontier};
use test_support::contract::{self, Harness};

struct Local;

impl Harness for Local {
    fn open(&self, cfg: FrontierConfig, seeds: &[&str]) -> Arc<dyn Frontier> {
        Arc::new(LocalFrontier::new(cfg, seeds).expect("frontier"))
    }

    fn reopen(&self, _cfg: FrontierConfig, _seeds: &[&str]) -> Option<Arc<dyn Frontier>> {
        None
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn local_frontier_keeps_the_contract() {
    contract::run_all(&Local).await;
}
