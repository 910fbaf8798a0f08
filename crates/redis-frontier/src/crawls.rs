//! A service's named crawls in Redis: the crawl `<base>/<ID>` of each ID, listed in the set
//! `crawl:{<base>}:named` ([`named_crawls`], [`register_crawl`]) and deleted whole
//! ([`delete_crawl`]).
//!
//! Design choices:
//! - **A registry set, not a key scan, says which crawls exist**: every replica of the
//!   service reads it every few seconds (to take up crawls others made and let go of those
//!   they deleted), which must cost nothing however many keys the crawls hold.
//! - **Every key of a crawl lives under `crawl:{ID}:`** (one hash slot), so a cursor `SCAN`
//!   of that prefix finds them all, a step at a time (the server is never held for long), and
//!   `UNLINK` frees them off the server's main thread. A delete unregisters first, so that no
//!   replica takes the crawl up while its keys go.
//! - **A crawl registered anew starts from an empty namespace** ([`clear_unborn`]): keys a
//!   replica wrote there while the crawl was being deleted (it learns of a delete within a
//!   sync period) are removed — but only while the crawl has no visited set (`meta`), checked
//!   with each batch in one script, so that a replica making the same crawl at the same moment
//!   loses nothing it has already taken.

use redis::AsyncCommands;

use crate::frontier::check_crawl_id;
use crate::RedisFrontierError;

/// Keys asked per `SCAN` step.
const SCAN_COUNT: usize = 1_000;

/// Unlinks the keys given after the first, unless the first (the crawl's `meta`) exists.
const UNLINK_UNBORN: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
return redis.call('UNLINK', unpack(KEYS, 2))
";

/// `text` matched literally in a `SCAN MATCH` pattern (its glob characters escaped).
fn glob_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '^' | '-') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The crawl ID of the named crawl `id` of the service whose crawl is `base`.
pub fn named_crawl_id(base: &str, id: &str) -> String {
    format!("{base}/{id}")
}

/// The set of the named crawls of `base`.
fn registry(base: &str) -> String {
    format!("crawl:{{{base}}}:named")
}

async fn connect(url: &str) -> Result<redis::aio::MultiplexedConnection, RedisFrontierError> {
    let client = redis::Client::open(url)?;
    Ok(client.get_multiplexed_async_connection().await?)
}

/// Calls `each` with every batch of keys matching `pattern` (a full `SCAN`); `each` answers
/// whether to go on.
async fn scan<F, Fut>(
    conn: &mut redis::aio::MultiplexedConnection,
    pattern: &str,
    mut each: F,
) -> Result<(), RedisFrontierError>
where
    F: FnMut(redis::aio::MultiplexedConnection, Vec<Vec<u8>>) -> Fut,
    Fut: std::future::Future<Output = Result<bool, RedisFrontierError>>,
{
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(SCAN_COUNT)
            .query_async(conn)
            .await?;
        if !keys.is_empty() && !each(conn.clone(), keys).await? {
            return Ok(());
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

/// The IDs of the named crawls of `base` at `url`, by name.
pub async fn named_crawls(url: &str, base: &str) -> Result<Vec<String>, RedisFrontierError> {
    check_crawl_id(base)?;
    let mut conn = connect(url).await?;
    let mut ids: Vec<String> = conn.smembers(registry(base)).await?;
    ids.sort();
    Ok(ids)
}

/// Registers the named crawl `id` of `base`: whether it is new (was not registered).
pub async fn register_crawl(url: &str, base: &str, id: &str) -> Result<bool, RedisFrontierError> {
    check_crawl_id(&named_crawl_id(base, id))?;
    let mut conn = connect(url).await?;
    let added: u64 = conn.sadd(registry(base), id).await?;
    Ok(added == 1)
}

/// Removes every key of crawl `crawl_id` as long as it has no visited set (see the module's
/// header): how many.
pub async fn clear_unborn(url: &str, crawl_id: &str) -> Result<u64, RedisFrontierError> {
    check_crawl_id(crawl_id)?;
    let mut conn = connect(url).await?;
    let meta = format!("crawl:{{{crawl_id}}}:meta");
    let script = redis::Script::new(UNLINK_UNBORN);
    let removed = std::sync::atomic::AtomicU64::new(0);
    let pattern = format!("crawl:{{{}}}:*", glob_literal(crawl_id));
    scan(&mut conn, &pattern, |mut conn, keys| {
        let (script, meta, removed) = (&script, &meta, &removed);
        async move {
            let mut call = script.key(meta.as_str());
            for k in keys {
                call.key(k);
            }
            let n: i64 = call.invoke_async(&mut conn).await?;
            match u64::try_from(n) {
                Ok(n) => {
                    removed.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                    Ok(true)
                }
                Err(_) => Ok(false), // Born meanwhile: its keys are its own.
            }
        }
    })
    .await?;
    Ok(removed.into_inner())
}

/// Deletes the named crawl `id` of `base`: unregistered, then every key of its namespace.
/// Answers how many keys there were.
pub async fn delete_crawl(url: &str, base: &str, id: &str) -> Result<u64, RedisFrontierError> {
    let crawl_id = named_crawl_id(base, id);
    check_crawl_id(&crawl_id)?;
    let mut conn = connect(url).await?;
    let _: u64 = conn.srem(registry(base), id).await?;
    let pattern = format!("crawl:{{{}}}:*", glob_literal(&crawl_id));
    let removed = std::sync::atomic::AtomicU64::new(0);
    scan(&mut conn, &pattern, |mut conn, keys| {
        let removed = &removed;
        async move {
            let n: u64 = conn.unlink(keys).await?;
            removed.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            Ok(true)
        }
    })
    .await?;
    Ok(removed.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_characters_are_matched_literally() {
        assert_eq!(glob_literal("a/b.c_d"), "a/b.c_d");
        assert_eq!(glob_literal("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }
}
