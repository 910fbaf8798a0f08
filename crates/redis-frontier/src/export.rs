//! The shared visited set in Guava's `writeTo` format, and the shape check that keeps every
//! process of a crawl on the same bits.
//!
//! The first process of a crawl records the filter's shape (bit count, hash count, strategy)
//! in the crawl's `meta` hash; every later one compares its own with it, because a process
//! sized from another `expected_urls` or `fpp` would test other bits and admit URLs again.
//! The export reads the bitmap and reorders its bits: Redis numbers bit `i` as bit
//! `7 - i % 8` of byte `i / 8`, Guava as bit `i % 64` of the big-endian word `i / 64`.

use redis::aio::ConnectionLike;

use crate::conn::Conn;

use crate::{RedisFrontierError, Visited};

/// Creates the bitmap at its full size if it does not exist: Redis grows a string that a
/// `SETBIT` extends with slack (up to 1 MiB more), but allocates one created at a size
/// exactly.
const PRESIZE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SETBIT', KEYS[1], ARGV[1], 0) end
return 1
";

/// Refuses a crawl whose visited set would not fit: when the bitmap does not exist yet and
/// Redis has a `maxmemory`, the bitmap's bytes must fit in what is left under it (with a
/// tenth of it to spare for the first queues). Checked before the crawl writes anything. On
/// one Redis every partition's missing bitmap counts against it; on a cluster each against
/// its partition's master (partitions that share a master are not added up).
pub(crate) async fn check_room(
    conn: &mut Conn,
    parts: &[Visited],
) -> Result<(), RedisFrontierError> {
    let mut missing = Vec::new();
    for v in parts {
        let exists: bool = redis::cmd("EXISTS")
            .arg(v.bits_key())
            .query_async(conn)
            .await?;
        if !exists {
            missing.push(v);
        }
    }
    if conn.is_cluster() {
        for v in missing {
            check_node_room(conn, v, v.bit_size().div_ceil(8)).await?;
        }
    } else if let Some(first) = missing.first() {
        let needed = missing.iter().map(|v| v.bit_size().div_ceil(8)).sum();
        check_node_room(conn, first, needed).await?;
    }
    Ok(())
}

/// Refuses `needed` bytes more on the node of `visited`'s bitmap when they would not fit.
async fn check_node_room(
    conn: &mut Conn,
    visited: &Visited,
    needed: u64,
) -> Result<(), RedisFrontierError> {
    let info: String = conn
        .on_node_of(&visited.bits_key(), redis::cmd("INFO").arg("memory"))
        .await?;
    let field = |name: &str| {
        crate::conn::info_field(&info, name)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let (used, max) = (field("used_memory"), field("maxmemory"));
    if max == 0 || used.saturating_add(needed + needed / 10) <= max {
        return Ok(());
    }
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    Err(RedisFrontierError::Full(format!(
        "its maxmemory is {:.1} MiB with {:.1} MiB in use, and the crawl's visited set needs \
         {:.1} MiB (and a tenth more to start queueing) before any URL is queued: raise \
         maxmemory, or lower frontier.expected_urls or raise frontier.fpp",
        mib(max),
        mib(used),
        mib(needed)
    )))
}

/// The format of the queue entries this build writes ([`frontier::Entry::encode`]): recorded
/// with the crawl's shape, so that a process of an older build (one that checks it) refuses
/// to join a crawl whose entries it would drop as undecodable. A build that writes a newer
/// format raises it; processes already running are not told, so a crawl's processes are
/// upgraded together (stop them all, then start the new build).
pub(crate) const ENTRY_FORMAT: u64 = 6;

/// The format a crawl of several partitions records: builds older than partitions (which
/// read format 6 and no further) would take it for one partition and split it.
pub(crate) const PARTITIONED_FORMAT: u64 = 7;

/// The crawl's entry format before this call (0: none recorded), raised to ARGV[1] unless
/// it is higher already.
const RAISE_FORMAT: &str = r"
local stored = tonumber(redis.call('HGET', KEYS[1], 'entry_format') or 0)
if stored < tonumber(ARGV[1]) then redis.call('HSET', KEYS[1], 'entry_format', ARGV[1]) end
return stored
";

/// Records `visited`'s shape for its crawl if none is, checks it against the one that is, and
/// creates the bitmap at its full size; then records the entry format ([`ENTRY_FORMAT`]).
/// Every partition's bitmap is created at that size (they share one shape).
pub(crate) async fn check_shape<C: ConnectionLike + Send>(
    conn: &mut C,
    parts: &[Visited],
) -> Result<(), RedisFrontierError> {
    let visited = &parts[0];
    let key = format!("{}meta", visited.prefix());
    let ours = (visited.bit_size(), visited.hashes());
    let (_, _, bits, hashes): (u8, u8, Option<u64>, Option<u32>) = redis::pipe()
        .cmd("HSETNX")
        .arg(&key)
        .arg("bits")
        .arg(ours.0)
        .cmd("HSETNX")
        .arg(&key)
        .arg("hashes")
        .arg(ours.1)
        .cmd("HGET")
        .arg(&key)
        .arg("bits")
        .cmd("HGET")
        .arg(&key)
        .arg("hashes")
        .query_async(conn)
        .await?;
    match (bits, hashes) {
        (Some(b), Some(k)) if (b, k) == ours => {
            // Only a process whose shape agrees records its format, in one step: the mark
            // never goes down, and an older process is refused from then on.
            let format = if parts.len() > 1 {
                PARTITIONED_FORMAT
            } else {
                ENTRY_FORMAT
            };
            let stored: u64 = redis::Script::new(RAISE_FORMAT)
                .key(&key)
                .arg(format)
                .invoke_async(conn)
                .await?;
            if stored > PARTITIONED_FORMAT {
                return Err(RedisFrontierError::NewerEntries {
                    stored,
                    ours: PARTITIONED_FORMAT,
                });
            }
            for v in parts {
                let _: u8 = redis::Script::new(PRESIZE)
                    .key(v.bits_key())
                    .arg(ours.0 - 1)
                    .invoke_async(conn)
                    .await?;
            }
            Ok(())
        }
        (b, k) => Err(RedisFrontierError::ShapeMismatch {
            stored: (b.unwrap_or(0), k.unwrap_or(0)),
            ours,
        }),
    }
}

/// The partitions of the crawl whose home prefix is `home` and their tags' suffixes (see
/// `crate::tags`), as recorded: `None` when the crawl has no shape yet; one partition for a
/// crawl recorded before partitions existed.
pub(crate) async fn recorded_partitions(
    conn: &mut Conn,
    home: &str,
) -> Result<Option<(u32, Vec<u32>)>, RedisFrontierError> {
    let (bits, parts, tags): (Option<u64>, Option<u32>, Option<String>) = redis::cmd("HMGET")
        .arg(format!("{home}meta"))
        .arg(&["bits", "partitions", "tags"])
        .query_async(conn)
        .await?;
    let parts = match (parts, bits) {
        (Some(n), _) => n,
        (None, Some(_)) => 1,
        (None, None) => return Ok(None),
    };
    let tags = (1..=crate::MAX_PARTITIONS)
        .contains(&parts)
        .then(|| match &tags {
            Some(t) => crate::tags::decode(t, parts),
            // Recorded without tags: every tag the plain one.
            None => Some(vec![0; parts as usize]),
        })
        .flatten();
    match tags {
        Some(t) => Ok(Some((parts, t))),
        None => Err(RedisFrontierError::Unsupported(format!(
            "the crawl's record of its partitions in Redis is not one this build reads \
             ({parts} partitions)"
        ))),
    }
}

/// Records `parts` partitions with their tags for the crawl whose `meta` is `KEYS[1]`, unless
/// it has a shape already.
const RECORD_PARTITIONS: &str = r"
if redis.call('HEXISTS', KEYS[1], 'partitions') == 0 and redis.call('HEXISTS', KEYS[1], 'bits') == 0 then
  redis.call('HSET', KEYS[1], 'partitions', ARGV[1], 'tags', ARGV[2])
end
return 1
";

/// Records the crawl's partitions (see [`RECORD_PARTITIONS`]): the recorded ones after.
pub(crate) async fn record_partitions(
    conn: &mut Conn,
    home: &str,
    parts: u32,
    tags: &[u32],
) -> Result<(u32, Vec<u32>), RedisFrontierError> {
    let _: u8 = redis::Script::new(RECORD_PARTITIONS)
        .key(format!("{home}meta"))
        .arg(parts)
        .arg(crate::tags::encode(tags))
        .invoke_async(conn)
        .await?;
    Ok(recorded_partitions(conn, home)
        .await?
        .unwrap_or((parts, tags.to_vec())))
}

/// The visited set of crawl `crawl_id` at `url`, in Guava's `BloomFilter.writeTo` format:
/// byte-identical to a local filter of the same shape given the same URLs. A crawl of
/// several partitions is refused: see [`export_partitions`].
pub async fn export_guava(url: &str, crawl_id: &str) -> Result<Vec<u8>, RedisFrontierError> {
    let mut files = export_partitions(url, crawl_id).await?;
    if files.len() > 1 {
        return Err(RedisFrontierError::Unsupported(format!(
            "crawl `{crawl_id}` has {} partitions: its visited set is one filter per partition",
            files.len()
        )));
    }
    Ok(files.remove(0))
}

/// The visited set of each partition of crawl `crawl_id` at `url` (see [`crate::Visited`]), in
/// Guava's format, in partition order: each byte-identical to a local filter of that
/// partition's shape given the URLs of that partition's queues ([`crate::partition_of`]).
pub async fn export_partitions(
    url: &str,
    crawl_id: &str,
) -> Result<Vec<Vec<u8>>, RedisFrontierError> {
    crate::frontier::check_crawl_id(crawl_id)?;
    let mut conn = Conn::open(url).await?;
    let home = crate::visited::partition_prefix(crawl_id, 0, 0);
    let meta = format!("{home}meta");
    let (bits, hashes): (Option<u64>, Option<u8>) = redis::pipe()
        .cmd("HGET")
        .arg(&meta)
        .arg("bits")
        .cmd("HGET")
        .arg(&meta)
        .arg("hashes")
        .query_async(&mut conn)
        .await?;
    let (Some(bits), Some(hashes)) = (bits, hashes) else {
        return Err(RedisFrontierError::NoCrawl(crawl_id.to_owned()));
    };
    let Some((parts, tags)) = recorded_partitions(&mut conn, &home).await? else {
        return Err(RedisFrontierError::NoCrawl(crawl_id.to_owned()));
    };
    if bits == 0 || bits % 64 != 0 || bits > 1 << 32 {
        return Err(RedisFrontierError::NoCrawl(crawl_id.to_owned()));
    }
    let mut out = Vec::with_capacity(parts as usize);
    for (p, n) in (0..parts).zip(tags) {
        let key = format!(
            "{}visited",
            crate::visited::partition_prefix(crawl_id, p, n)
        );
        let bitmap: Option<Vec<u8>> = redis::cmd("GET").arg(key).query_async(&mut conn).await?;
        out.push(guava_bytes(bits, hashes, &bitmap.unwrap_or_default()));
    }
    Ok(out)
}

/// One Guava filter of every partition's URLs: the partitions' filters (as
/// [`export_partitions`] gives them: one shape, one index function) with their bits OR-ed, so
/// a URL of any partition is found in it. Returns the file and its false positive rate as
/// its fill gives it (`fill^k`): the merged filter has one partition's size and every URL, so
/// it is only of use while the crawl holds about one partition's share of `expected_urls`.
pub fn merge_partitions(files: &[Vec<u8>]) -> Result<(Vec<u8>, f64), RedisFrontierError> {
    let bad = || RedisFrontierError::Unsupported("the partitions' filters differ in shape".into());
    let first = files.first().ok_or_else(bad)?;
    if first.len() < 6 || (first.len() - 6) % 8 != 0 {
        return Err(bad());
    }
    let mut out = first.clone();
    for f in &files[1..] {
        if f.len() != out.len() || f[..6] != out[..6] {
            return Err(bad());
        }
        for (o, b) in out[6..].iter_mut().zip(&f[6..]) {
            *o |= b;
        }
    }
    let bits = ((out.len() - 6) * 8) as f64;
    let set: u64 = out[6..].iter().map(|b| u64::from(b.count_ones())).sum();
    let fpp = (set as f64 / bits.max(1.0)).powi(i32::from(out[1]));
    Ok((out, fpp))
}

/// Guava's bytes of a filter of `bits` bits and `hashes` hash functions whose bits are the
/// Redis bitmap `bitmap` (shorter than `bits / 8` where its high bits were never set).
fn guava_bytes(bits: u64, hashes: u8, bitmap: &[u8]) -> Vec<u8> {
    let words = bits / 64;
    let mut out = Vec::with_capacity(6 + words as usize * 8);
    out.push(bloom::Strategy::default().ordinal());
    out.push(hashes);
    out.extend_from_slice(&(words as i32).to_be_bytes());
    for w in 0..words as usize {
        let mut bytes = [0u8; 8];
        for (m, b) in bytes.iter_mut().enumerate() {
            *b = bitmap.get(w * 8 + m).map_or(0, |b| b.reverse_bits());
        }
        out.extend_from_slice(&u64::from_le_bytes(bytes).to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merged_filter_has_every_partitions_bits_and_says_its_fill() {
        let a = guava_bytes(128, 2, &[0x80]);
        let b = guava_bytes(128, 2, &[0, 0, 0, 0, 0, 0, 0, 0, 0x01]);
        let (m, fpp) = merge_partitions(&[a.clone(), b]).unwrap();
        let word = |i: usize| u64::from_be_bytes(m[6 + 8 * i..14 + 8 * i].try_into().unwrap());
        assert_eq!((word(0), word(1)), (1, 1 << 7));
        assert!((fpp - (2.0f64 / 128.0).powi(2)).abs() < 1e-12);
        // Filters of different shapes are not merged.
        let c = guava_bytes(64, 2, &[]);
        assert!(merge_partitions(&[a, c]).is_err());
    }

    #[test]
    fn redis_bit_i_is_guava_bit_i() {
        // Redis bits 0, 9 and 64 set: byte 0 = 0x80, byte 1 = 0x40, byte 8 = 0x80.
        let mut bitmap = [0u8; 16];
        bitmap[0] = 0x80;
        bitmap[1] = 0x40;
        bitmap[8] = 0x80;
        let g = guava_bytes(128, 3, &bitmap[..9]);
        assert_eq!(&g[..6], &[1, 3, 0, 0, 0, 2]);
        let word = |i: usize| u64::from_be_bytes(g[6 + 8 * i..14 + 8 * i].try_into().unwrap());
        assert_eq!(word(0), (1 << 0) | (1 << 9));
        assert_eq!(word(1), 1);
    }
}
