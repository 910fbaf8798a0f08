//! robots.txt verdicts shared by the processes of one crawl ([`RobotsShare`]): a frontier
//! shared between processes implements it, so that N processes fetch a host's robots.txt
//! once.

use std::time::Duration;

use crate::api::{BoxFuture, FrontierError};

/// What [`RobotsShare::robots_shared`] found for an origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SharedRobots {
    /// The verdict another process stored (the engine's record, opaque here).
    Record(Vec<u8>),
    /// Nobody has it and this process is to fetch it (then [`RobotsShare::share_robots`]).
    Fetch,
    /// Another process is fetching it now: ask again shortly.
    Wait,
}

/// robots.txt verdicts shared by the processes of one crawl, so that N processes fetch a
/// host's robots.txt once. A frontier shared between processes implements it; a crawl in one
/// process has none.
pub trait RobotsShare: Send + Sync + std::fmt::Debug {
    /// The verdict of `origin` as the crawl's processes know it.
    fn robots_shared<'a>(
        &'a self,
        origin: &'a str,
    ) -> BoxFuture<'a, Result<SharedRobots, FrontierError>>;

    /// Stores the verdict this process fetched for `origin` (after [`SharedRobots::Fetch`]),
    /// for `ttl`.
    fn share_robots<'a>(
        &'a self,
        origin: &'a str,
        record: Vec<u8>,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), FrontierError>>;
}
