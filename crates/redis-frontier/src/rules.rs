//! One crawl, one set of rules: the settings every process of a shared crawl must agree on
//! (its dedup mode, scope, canonicalisation, budgets, politeness, lease) are recorded by the
//! first process and read by every later one.
//!
//! The frontier does not know what the settings mean; the engine names and compares them.
//! Here they are opaque `key → value` strings, recorded atomically (one script: the first
//! process to run it records every key it brings, and a key a newer version adds is recorded
//! by the first process that knows it).

use std::collections::BTreeMap;

use crate::frontier::check_crawl_id;
use crate::RedisFrontierError;

/// Records each of `ours` the crawl has no value for, and returns every value it has.
const AGREE: &str = r"
for i = 1, #ARGV, 2 do redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) end
return redis.call('HGETALL', KEYS[1])
";

/// The crawl `crawl_id`'s rules at `url` after recording `ours` where it has none: the
/// values every process of the crawl must use.
pub async fn agree_rules(
    url: &str,
    crawl_id: &str,
    ours: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, RedisFrontierError> {
    check_crawl_id(crawl_id)?;
    let client = redis::Client::open(url)?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(std::time::Duration::from_secs(5)))
        .set_response_timeout(Some(std::time::Duration::from_secs(10)));
    let mut conn = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
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
