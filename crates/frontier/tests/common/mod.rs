//! Configurations the frontier's test files share.

use std::time::Duration;

use frontier::{FrontierConfig, HostScope, Order, Politeness, ScopeConfig};

/// No politeness delay, and room for 1,000 fetches per host.
fn fast() -> Politeness {
    Politeness {
        delay: Duration::ZERO,
        max_per_host: 1000,
        ..Politeness::default()
    }
}

/// Any host in scope, a filter for 10^6 URLs, `capacity` entries in memory, no delays.
pub fn config(capacity: usize, order: Order) -> FrontierConfig {
    FrontierConfig {
        scope: ScopeConfig {
            hosts: HostScope::Any,
            ..ScopeConfig::default()
        },
        expected_urls: 1_000_000,
        memory_capacity: capacity,
        order,
        politeness: fast(),
        ..FrontierConfig::default()
    }
}
