//! Whole crawls in Redis: listing those under a prefix ([`crawls_under`]) and deleting one
//! ([`delete_crawl`]). Every key of a crawl lives under `crawl:{ID}:` (one hash slot), and
//! every crawl has its visited set's shape in `crawl:{ID}:meta`, so a cursor `SCAN` finds
//! them (a step at a time: the server is never held for long), and `UNLINK` frees a crawl's
//! keys off the server's main thread. A delete runs with no process working the crawl: a
//! process still working it would write keys again.

use redis::AsyncCommands;

use crate::frontier::check_crawl_id;
use crate::RedisFrontierError;

/// Keys asked per `SCAN` step.
const SCAN_COUNT: usize = 1_000;

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

/// Calls `each` with every batch of keys matching `pattern` (a full `SCAN`).
async fn scan<F, Fut>(
    conn: &mut redis::aio::MultiplexedConnection,
    pattern: &str,
    mut each: F,
) -> Result<(), RedisFrontierError>
where
    F: FnMut(redis::aio::MultiplexedConnection, Vec<Vec<u8>>) -> Fut,
    Fut: std::future::Future<Output = Result<(), RedisFrontierError>>,
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
        if !keys.is_empty() {
            each(conn.clone(), keys).await?;
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

/// The crawls at `url` whose ID starts with `prefix`: their IDs without it, by name.
pub async fn crawls_under(url: &str, prefix: &str) -> Result<Vec<String>, RedisFrontierError> {
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let pattern = format!("crawl:{{{}*}}:meta", glob_literal(prefix));
    let mut ids = Vec::new();
    scan(&mut conn, &pattern, |_, keys| {
        for key in keys {
            let name = String::from_utf8_lossy(&key);
            let id = name
                .strip_prefix("crawl:{")
                .and_then(|k| k.strip_suffix("}:meta"))
                .and_then(|k| k.strip_prefix(prefix));
            if let Some(id) = id {
                ids.push(id.to_owned());
            }
        }
        std::future::ready(Ok(()))
    })
    .await?;
    ids.sort();
    ids.dedup();
    Ok(ids)
}

/// Deletes every key of crawl `crawl_id` at `url`: how many there were.
pub async fn delete_crawl(url: &str, crawl_id: &str) -> Result<u64, RedisFrontierError> {
    check_crawl_id(crawl_id)?;
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let pattern = format!("crawl:{{{}}}:*", glob_literal(crawl_id));
    let removed = std::sync::atomic::AtomicU64::new(0);
    scan(&mut conn, &pattern, |mut conn, keys| {
        let removed = &removed;
        async move {
            let n: u64 = conn.unlink(keys).await?;
            removed.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            Ok(())
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
