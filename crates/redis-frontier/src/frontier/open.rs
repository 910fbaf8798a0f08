//! Opening a shared crawl: the checks before any write (crawl id, Redis version, room), the
//! crawl's partitions as recorded (or chosen and recorded: `crate::tags`), its shape, and
//! each partition's clock step.

use std::time::Duration;

use frontier::FrontierConfig;

use super::{ms, RedisConfig};
use crate::conn::Conn;
use crate::errors::start_error;
use crate::{RedisFrontierError, Visited};

/// Connects to the crawl `redis` names and makes it ready for this process: the connection
/// and the crawl's partitions (the first is its home).
pub(super) async fn open(
    cfg: &FrontierConfig,
    redis: &RedisConfig,
    lease: Duration,
) -> Result<(Conn, Vec<Visited>), RedisFrontierError> {
    check_crawl_id(&redis.crawl_id)?;
    // The shape's first check, before Redis is asked: the whole crawl's filter.
    Visited::new(&redis.crawl_id, cfg.expected_urls, cfg.fpp)?;
    let mut conn = Conn::open(&redis.url).await?;
    let home = crate::visited::partition_prefix(&redis.crawl_id, 0, 0);
    check_version(&mut conn, &home).await?;
    let start = |e| match e {
        RedisFrontierError::Redis(e) => start_error(e),
        e => e,
    };
    // Read first, recorded once there is room: a crawl refused for want of room records
    // nothing (its retry with other settings is a new crawl).
    let ours = redis.partitions;
    if ours > crate::MAX_PARTITIONS {
        return Err(RedisFrontierError::Unsupported(format!(
            "frontier.partitions = {ours}: a crawl has at most {} partitions",
            crate::MAX_PARTITIONS
        )));
    }
    let (n, tags) = match crate::export::recorded_partitions(&mut conn, &home)
        .await
        .map_err(start)?
    {
        Some((n, _)) if ours != 0 && ours != n => {
            return Err(RedisFrontierError::Partitions { stored: n, ours })
        }
        Some(recorded) => recorded,
        None => {
            let n = ours.max(1);
            let tags = if conn.is_cluster() && n > 1 {
                crate::tags::choose(&mut conn, &redis.crawl_id, n)
                    .await
                    .map_err(start_error)?
            } else {
                vec![0; n as usize]
            };
            (n, tags)
        }
    };
    let partitions = |tags: &[u32]| {
        (0..n)
            .zip(tags)
            .map(|(p, t)| Visited::tagged(&redis.crawl_id, (p, *t), n, cfg.expected_urls, cfg.fpp))
            .collect::<Result<Vec<_>, _>>()
    };
    let mut parts = partitions(&tags)?;
    crate::export::check_room(&mut conn, &parts).await?;
    let (recorded, recorded_tags) = crate::export::record_partitions(&mut conn, &home, n, &tags)
        .await
        .map_err(start)?;
    if recorded != n {
        // Another process made the crawl meanwhile, with another number.
        return Err(RedisFrontierError::Partitions {
            stored: recorded,
            ours: n,
        });
    }
    if recorded_tags != tags {
        // Made meanwhile by another process, which chose its tags first.
        parts = partitions(&recorded_tags)?;
    }
    if conn.is_cluster() {
        // Each partition's master runs the scripts too.
        for v in &parts[1..] {
            check_version(&mut conn, v.prefix()).await?;
        }
    }
    crate::export::check_shape(&mut conn, &parts)
        .await
        .map_err(start)?;
    // The crawl clock counts a silence of up to a quarter of a lease whole (less than the
    // heartbeat's period: a live holder renews with room to spare after an outage);
    // longer, it is an outage (see `scripts`). Every process agrees on the lease (the
    // engine's rules). Each partition has its own clock.
    for v in &parts {
        let _: () = redis::cmd("HSET")
            .arg(format!("{}clock", v.prefix()))
            .arg("step")
            .arg(ms(lease) / 4)
            .query_async(&mut conn)
            .await
            .map_err(start_error)?;
    }
    Ok((conn, parts))
}

/// A crawl id: printable, no braces (they delimit the hash tag), at most 128 bytes.
pub(crate) fn check_crawl_id(id: &str) -> Result<(), RedisFrontierError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_graphic() && c != '{' && c != '}');
    if ok {
        Ok(())
    } else {
        Err(RedisFrontierError::CrawlId(id.to_owned()))
    }
}

/// The scripts need Redis 6.2 or later (`ZRANGE … BYSCORE`).
async fn check_version(conn: &mut Conn, key: &str) -> Result<(), RedisFrontierError> {
    let info: String = conn
        .on_node_of(key, redis::cmd("INFO").arg("server"))
        .await?;
    let version = crate::conn::info_field(&info, "redis_version")
        .unwrap_or("0")
        .to_owned();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if (major, minor) >= (6, 2) {
        Ok(())
    } else {
        Err(RedisFrontierError::Version(version))
    }
}
