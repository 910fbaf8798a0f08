//! Politeness per address, the fetcher's side: before a host's first fetch (and again when
//! its address changes) the host's address is resolved as the client will connect
//! ([`Fetcher::address`]) and the frontier is told its group ([`Frontier::place_host`]);
//! the frontier answers whether the lease in hand may go, or must be given back because the
//! group is full or its gap has not passed. Known placements are kept here, so a lease of a
//! placed host costs a look-up in the fetcher's cache, not a frontier call.
//!
//! [`Frontier::place_host`]: frontier::Frontier::place_host

use dashmap::DashMap;
use frontier::{AddressKey, Lease};
use url::Url;

use crate::fetch::Fetcher;
use crate::frontier_call::FrontierClient;

/// The hosts placed in address groups (see the module header).
#[derive(Debug, Default)]
pub(crate) struct Placements {
    /// Politeness per address is on (`politeness.ip_delay_ms` or `max_per_ip`).
    on: bool,
    known: DashMap<String, AddressKey>,
}

impl Placements {
    /// Politeness per address as `cfg` asks, where `frontier` has it.
    pub(crate) fn new(cfg: &crate::CrawlConfig, frontier: &FrontierClient) -> Self {
        let asked = cfg.politeness.ip_delay_ms > 0 || cfg.politeness.max_per_ip > 0;
        Self {
            on: asked && frontier.groups_by_address(),
            known: DashMap::new(),
        }
    }

    /// Whether politeness per address is on (asked for, and the frontier has it).
    pub(crate) fn on(&self) -> bool {
        self.on
    }

    /// Places `lease`'s host in the group of the address `url` is fetched at, when it is
    /// new or has moved. Returns whether the lease may be fetched now (`false`: give it
    /// back). A name that does not resolve is placed nowhere: its fetch fails as it would.
    pub(crate) async fn place(
        &self,
        fetcher: &Fetcher,
        frontier: &FrontierClient,
        lease: &Lease,
        url: &Url,
    ) -> bool {
        if !self.on {
            return true;
        }
        let Some(ip) = fetcher.address(url).await else {
            return true;
        };
        let key = AddressKey::of(ip);
        let host = lease.host();
        // Placed there already, and handed out under that group's rules: nothing to ask.
        if lease.handed_in_group() && self.known.get(host).is_some_and(|k| *k == key) {
            return true;
        }
        match frontier
            .with_frontier("place_host", |f| f.place_host(lease, key))
            .await
        {
            Some(go) => {
                self.known.insert(host.to_owned(), key);
                go
            }
            None => true,
        }
    }
}
