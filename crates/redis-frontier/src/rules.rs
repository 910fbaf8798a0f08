//! One crawl, one set of rules: the settings every process of a shared crawl must agree on
//! (its dedup mode, scope, canonicalisation, budgets, politeness, lease) are recorded by the
//! first process and read by every later one.
//!
//! The frontier does not know what the settings mean; the engine names and compares them.
//! Here they are opaque `key → value` strings, recorded atomically (one script: the first
//! process to run it records every key it brings, and a key a newer version adds is recorded
//! by the first process that knows it).
//!
//! A new crawl is checked for room first ([`crate::export::check_room`]): a crawl refused
//! for want of room records nothing, so the retry the refusal suggests (a smaller
//! `expected_urls`) is a new crawl, not one whose recorded rules it contradicts.

use std::collections::BTreeMap;

use crate::frontier::check_crawl_id;
use crate::{RedisFrontierError, Visited};

/// Records each of `ours` the crawl has no value for, and returns every value it has.
const AGREE: &str = r"
for i = 1, #ARGV, 2 do redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) end
return redis.call('HGETALL', KEYS[1])
";

/// The crawl `crawl_id`'s rules at `url` after recording `ours` where it has none: the
/// values every process of the crawl must use. A crawl with no visited set yet must have
/// room for one of `expected_urls` at `fpp`, or nothing is recorded
/// ([`RedisFrontierError::Full`]).
pub async fn agree_rules(
    url: &str,
    crawl_id: &str,
    ours: &BTreeMap<String, String>,
    (expected_urls, fpp): (u64, f64),
) -> Result<BTreeMap<String, String>, RedisFrontierError> {
    check_crawl_id(crawl_id)?;
    let visited = Visited::new(crawl_id, expected_urls, fpp)?;
    let mut conn = crate::conn::Conn::open(url).await?;
    crate::export::check_room(&mut conn, std::slice::from_ref(&visited)).await?;
    let script = redis::Script::new(AGREE);
    let mut call = script.key(format!("crawl:{{{crawl_id}}}:rules"));
    for (k, v) in ours {
        call.arg(k.as_str()).arg(v.as_str());
    }
    let recorded: BTreeMap<String, String> = call
        .invoke_async(&mut conn)
        .await
        .map_err(crate::errors::start_error)?;
    Ok(recorded)
}
