//! robots.txt verdicts shared through Redis ([`RobotsShare`]): one process of the crawl
//! fetches an origin's robots.txt and the others read its verdict (kept in the partition of
//! the origin, as a queue key).

use std::time::Duration;

use frontier::{BoxFuture, FrontierError, RobotsShare, SharedRobots};
use redis::Value;

use super::{ms, RedisFrontier};

/// robots.txt verdicts through Redis: the first process to need an origin's claims and
/// fetches it (the claim lapses after a minute, so a dead claimant does not block others).
impl RobotsShare for RedisFrontier {
    fn robots_shared<'a>(
        &'a self,
        origin: &'a str,
    ) -> BoxFuture<'a, Result<SharedRobots, FrontierError>> {
        Box::pin(async move {
            let s = &self.shared;
            let mut call = s.invoke_on(s.part_of(origin), &s.scripts.robots_get);
            // A claim outlives a robots.txt fetch (its timeouts), not a dead process for long.
            call.arg(origin).arg(s.holder.as_str()).arg(60_000u64);
            let reply: Value = call
                .invoke_async(&mut s.conn.clone())
                .await
                .map_err(|e| s.failed(e))?;
            Ok(match reply {
                Value::BulkString(record) => SharedRobots::Record(record),
                Value::Int(1) => SharedRobots::Fetch,
                _ => SharedRobots::Wait,
            })
        })
    }

    fn share_robots<'a>(
        &'a self,
        origin: &'a str,
        record: Vec<u8>,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), FrontierError>> {
        Box::pin(async move {
            let s = &self.shared;
            let mut call = s.invoke_on(s.part_of(origin), &s.scripts.robots_put);
            call.arg(origin).arg(record).arg(ms(ttl).max(1));
            let _: u8 = call
                .invoke_async(&mut s.conn.clone())
                .await
                .map_err(|e| s.failed(e))?;
            Ok(())
        })
    }
}
