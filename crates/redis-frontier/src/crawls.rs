//! A service's named crawls in Redis: the crawl `<base>/<ID>` of each ID, recorded in the
//! hash `crawl:{<base>}:named` — made ([`create_crawl`]), joined by the service's other
//! replicas ([`join_crawl`], [`named_crawls`]) and deleted whole ([`delete_crawl`]).
//!
//! Design choices:
//! - **Each ID's state in one hash field, changed only by scripts**: `N` (alive, the `N`th
//!   crawl made under this service: its incarnation), `clearing:N` (being made where a
//!   deleted crawl was), `deleting`, `deleted`. Field `""` counts incarnations and is the
//!   registry's sentinel: a registry without it was lost (flushed, evicted), and a replica
//!   then lets go of nothing.
//! - **Replicas act on positive evidence only**: a replica lets go of its crawl when the
//!   registry names another state or incarnation for it, never because it is missing; a
//!   replica takes a crawl up by joining an alive incarnation, never by making one, so a
//!   crawl deleted meanwhile is not brought back.
//! - **No crawl is made while one of the same ID is being deleted**, and none is joined while
//!   it is being made: a delete marks the ID `deleting` first, removes the keys of the
//!   crawl's other partitions (while `meta` still says how many), the visited set's shape
//!   (`meta`) and then every key of the namespace (a cursor `SCAN`, `UNLINK`: the server is
//!   never held long), then marks it `deleted`. A delete cut short is finished by the next.
//! - **A crawl made where one was deleted starts from an empty namespace**: keys a lagging
//!   replica wrote after the delete are removed while no one may join ([`clear_namespace`]).
//!   An ID never deleted has nothing to clear, so making it costs no scan.

use std::collections::BTreeMap;

use redis::AsyncCommands;

use crate::conn::Conn;
use crate::frontier::check_crawl_id;
use crate::RedisFrontierError;

/// Keys asked per `SCAN` step.
const SCAN_COUNT: usize = 1_000;

/// KEYS: registry. ARGV: id. Returns {incarnation, 0 joined | 1 made | 2 made, clear first},
/// or {-1, 0} while the ID is being deleted.
const CREATE: &str = r"
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v == 'deleting' then return {-1, 0} end
if v and string.sub(v, 1, 9) == 'clearing:' then return {tonumber(string.sub(v, 10)), 2} end
if v and v ~= 'deleted' then return {tonumber(v), 0} end
local n = redis.call('HINCRBY', KEYS[1], '', 1)
if v == 'deleted' then
  redis.call('HSET', KEYS[1], ARGV[1], 'clearing:' .. n)
  return {n, 2}
end
redis.call('HSET', KEYS[1], ARGV[1], n)
return {n, 1}
";

/// KEYS: registry. ARGV: id, incarnation. The clearing of a crawl made is over.
const CLEARED: &str = r"
if redis.call('HGET', KEYS[1], ARGV[1]) == 'clearing:' .. ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
return 1
";

/// KEYS: registry. ARGV: id. The alive incarnation, or -1.
const JOIN: &str = r"
local n = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '')
if n then return n end
return -1
";

/// KEYS: registry. ARGV: id. Marks the ID `deleting` (1), unless there is nothing to delete (0).
const DELETE_BEGIN: &str = r"
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v or v == 'deleted' then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], 'deleting')
return 1
";

/// KEYS: registry. ARGV: id.
const DELETE_END: &str = r"
if redis.call('HGET', KEYS[1], ARGV[1]) == 'deleting' then
  redis.call('HSET', KEYS[1], ARGV[1], 'deleted')
end
return 1
";

/// Unlinks the keys given after the first, unless the first (the crawl's `meta`) exists.
const UNLINK_UNBORN: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
return redis.call('UNLINK', unpack(KEYS, 2))
";

/// What [`create_crawl`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    /// The crawl is alive: this is its incarnation (made now, or joined).
    Alive(u64),
    /// A crawl of that ID is being deleted: try again once it is.
    Deleting,
}

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

/// The registry of the named crawls of `base`.
fn registry(base: &str) -> String {
    format!("crawl:{{{base}}}:named")
}

/// The partitions each deleted named crawl of `base` had (`N:TAGS`, `crate::tags`; IDs of
/// more than one only), in the registry's slot: a crawl made again where one was deleted
/// clears them all.
fn deleted_partitions(base: &str) -> String {
    format!("crawl:{{{base}}}:named-partitions")
}

async fn connect(url: &str) -> Result<Conn, RedisFrontierError> {
    Conn::open(url).await
}

/// Calls `each` with every batch of keys matching `pattern` (a full `SCAN` of the node that
/// serves `key`'s slot: on a cluster, the crawl's keys are all on it); `each` answers
/// whether to go on.
async fn scan<F, Fut>(
    conn: &mut Conn,
    key: &str,
    pattern: &str,
    mut each: F,
) -> Result<(), RedisFrontierError>
where
    F: FnMut(Conn, Vec<Vec<u8>>) -> Fut,
    Fut: std::future::Future<Output = Result<bool, RedisFrontierError>>,
{
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) = conn
            .on_node_of(
                key,
                redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(pattern)
                    .arg("COUNT")
                    .arg(SCAN_COUNT),
            )
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

/// The alive named crawls of `base` with their incarnations, by ID; `None` when the
/// registry was lost (see the module's header).
pub async fn named_crawls(
    url: &str,
    base: &str,
) -> Result<Option<BTreeMap<String, u64>>, RedisFrontierError> {
    check_crawl_id(base)?;
    let mut conn = connect(url).await?;
    let all: BTreeMap<String, String> = conn.hgetall(registry(base)).await?;
    if !all.contains_key("") {
        return Ok(None);
    }
    Ok(Some(
        all.into_iter()
            .filter(|(id, _)| !id.is_empty())
            .filter_map(|(id, v)| v.parse().ok().map(|n| (id, n)))
            .collect(),
    ))
}

/// Makes the named crawl `id` of `base` — or joins it when it is alive — clearing its
/// namespace first where a deleted crawl was.
pub async fn create_crawl(url: &str, base: &str, id: &str) -> Result<Created, RedisFrontierError> {
    let crawl_id = named_crawl_id(base, id);
    check_crawl_id(&crawl_id)?;
    let mut conn = connect(url).await?;
    let (n, state): (i64, i64) = redis::Script::new(CREATE)
        .key(registry(base))
        .arg(id)
        .invoke_async(&mut conn)
        .await?;
    let Ok(n) = u64::try_from(n) else {
        return Ok(Created::Deleting);
    };
    if state == 2 {
        // The other partitions first (no process joins while the ID is being cleared).
        let record: Option<String> = conn.hget(deleted_partitions(base), id).await?;
        let layout = record.as_deref().and_then(|r| {
            let (n, tags) = r.split_once(':')?;
            crate::tags::decode(tags, n.parse().ok()?)
        });
        for (p, t) in layout.unwrap_or_default().into_iter().enumerate().skip(1) {
            let prefix = crate::visited::partition_prefix(&crawl_id, p as u32, t);
            unlink_all(&mut conn, &format!("{prefix}meta"), &glob_literal(&prefix)).await?;
        }
        clear_namespace(&mut conn, &crawl_id).await?;
        let _: i64 = redis::Script::new(CLEARED)
            .key(registry(base))
            .arg(id)
            .arg(n)
            .invoke_async(&mut conn)
            .await?;
    }
    Ok(Created::Alive(n))
}

/// The alive incarnation of the named crawl `id` of `base`, `None` when it is not alive
/// (never made, being made, being deleted or deleted).
pub async fn join_crawl(
    url: &str,
    base: &str,
    id: &str,
) -> Result<Option<u64>, RedisFrontierError> {
    check_crawl_id(&named_crawl_id(base, id))?;
    let mut conn = connect(url).await?;
    let n: i64 = redis::Script::new(JOIN)
        .key(registry(base))
        .arg(id)
        .invoke_async(&mut conn)
        .await?;
    Ok(u64::try_from(n).ok())
}

/// Removes every key of crawl `crawl_id` as long as it has no visited set (see the module's
/// header).
async fn clear_namespace(conn: &mut Conn, crawl_id: &str) -> Result<(), RedisFrontierError> {
    let meta = format!("crawl:{{{crawl_id}}}:meta");
    let script = redis::Script::new(UNLINK_UNBORN);
    let pattern = format!("crawl:{{{}}}:*", glob_literal(crawl_id));
    scan(conn, &meta, &pattern, |mut conn, keys| {
        let (script, meta) = (&script, &meta);
        async move {
            let mut call = script.key(meta.as_str());
            for k in keys {
                call.key(k);
            }
            let n: i64 = call.invoke_async(&mut conn).await?;
            Ok(n >= 0) // Born meanwhile: its keys are its own.
        }
    })
    .await
}

/// Unlinks every key whose name starts with the glob-escaped `prefix`, on the node of `key`:
/// how many.
async fn unlink_all(conn: &mut Conn, key: &str, prefix: &str) -> Result<u64, RedisFrontierError> {
    let more = std::sync::atomic::AtomicU64::new(0);
    scan(conn, key, &format!("{prefix}*"), |mut conn, keys| {
        let more = &more;
        async move {
            let n: u64 = conn.unlink(keys).await?;
            more.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            Ok(true)
        }
    })
    .await?;
    Ok(more.into_inner())
}

/// Deletes the named crawl `id` of `base` (or finishes a delete cut short): marked
/// `deleting`, its `meta` removed, then every key of its namespace, then marked `deleted`.
/// Answers how many keys there were (0 when there was nothing to delete).
pub async fn delete_crawl(url: &str, base: &str, id: &str) -> Result<u64, RedisFrontierError> {
    let crawl_id = named_crawl_id(base, id);
    check_crawl_id(&crawl_id)?;
    let mut conn = connect(url).await?;
    let begun: i64 = redis::Script::new(DELETE_BEGIN)
        .key(registry(base))
        .arg(id)
        .invoke_async(&mut conn)
        .await?;
    if begun == 0 {
        return Ok(0);
    }
    let home = crate::visited::partition_prefix(&crawl_id, 0, 0);
    let meta = format!("{home}meta");
    // The partitions after the first go first: until `meta` goes, a delete cut short
    // still knows them.
    let layout = crate::export::recorded_partitions(&mut conn, &home).await?;
    if let Some((n, tags)) = layout.as_ref().filter(|(n, _)| *n > 1) {
        // Remembered for a crawl made again where this one was (see `create_crawl`).
        let record = format!("{n}:{}", crate::tags::encode(tags));
        let _: () = conn.hset(deleted_partitions(base), id, record).await?;
    }
    let mut removed = 0;
    let tags = layout.map(|(_, t)| t).unwrap_or_default();
    for (p, t) in tags.into_iter().enumerate().skip(1).rev() {
        let prefix = crate::visited::partition_prefix(&crawl_id, p as u32, t);
        removed += unlink_all(&mut conn, &format!("{prefix}meta"), &glob_literal(&prefix)).await?;
    }
    removed += conn.unlink::<_, u64>(&meta).await?;
    let pattern = format!("crawl:{{{}}}:", glob_literal(&crawl_id));
    removed += unlink_all(&mut conn, &meta, &pattern).await?;
    let _: i64 = redis::Script::new(DELETE_END)
        .key(registry(base))
        .arg(id)
        .invoke_async(&mut conn)
        .await?;
    Ok(removed)
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
