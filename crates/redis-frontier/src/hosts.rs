//! The host listing of a shared frontier: every host's state hash read in one pipeline per
//! partition and paginated as the local frontier does, with each host's address group (see
//! `scripts/groups.rs`). It reads every host of the crawl (one host's
//! figures read that host alone), so it is an operator's call, not a worker's.

use std::time::Duration;

use crate::conn::Conn;
use frontier::{paginate, FrontierConfig, FrontierError, HostInfo, HostPage, HostQuery};

use crate::errors::frontier_error;

/// The fields of a host's hash this reads, in order.
const FIELDS: [&str; 14] = [
    "queued",
    "inflight",
    "done",
    "errors",
    "admitted",
    "delay",
    "crawl_delay",
    "backoff",
    "next_at",
    "blocked_until",
    "max_inflight",
    "budget",
    "max_done",
    "lat",
];

/// One page of the crawl's hosts, of the partitions under `prefixes` (each on its own
/// clock).
pub(crate) async fn page(
    conn: &mut Conn,
    prefixes: &[&str],
    cfg: &FrontierConfig,
    query: &HostQuery,
) -> Result<HostPage, FrontierError> {
    let mut all = Vec::new();
    for prefix in prefixes {
        all.extend(infos(conn, prefix, cfg, query).await?);
    }
    Ok(paginate(all, query))
}

/// The hosts of one partition.
async fn infos(
    conn: &mut Conn,
    prefix: &str,
    cfg: &FrontierConfig,
    query: &HostQuery,
) -> Result<Vec<HostInfo>, FrontierError> {
    let hosts: Vec<String> = match &query.host {
        // One host: its hash alone, when the crawl knows it.
        Some(host) => {
            let known: bool = redis::cmd("SISMEMBER")
                .arg(format!("{prefix}hosts"))
                .arg(host)
                .query_async(conn)
                .await
                .map_err(frontier_error)?;
            if known {
                vec![host.clone()]
            } else {
                Vec::new()
            }
        }
        None => redis::cmd("SMEMBERS")
            .arg(format!("{prefix}hosts"))
            .query_async(conn)
            .await
            .map_err(frontier_error)?,
    };
    let mut pipe = redis::pipe();
    for h in &hosts {
        pipe.cmd("HMGET")
            .arg(format!("{prefix}h:{h}"))
            .arg(&FIELDS[..]);
    }
    let rows: Vec<Vec<Option<i64>>> = if hosts.is_empty() {
        Vec::new()
    } else {
        pipe.query_async(conn).await.map_err(frontier_error)?
    };
    let groups = groups_of(conn, prefix, &hosts).await?;
    // The clock is read after the rows: a fetch leased between the two reads cannot leave a
    // host's `next_at` ahead of the `now` it is measured from.
    type Clock = (Option<i64>, Option<i64>, Option<i64>);
    let (time, clock, default_delay): ((u64, u64), Clock, Option<u64>) = redis::pipe()
        .cmd("TIME")
        .cmd("HMGET")
        .arg(format!("{prefix}clock"))
        .arg(&["last", "off", "step"])
        .cmd("HGET")
        .arg(format!("{prefix}politeness"))
        .arg("delay")
        .query_async(conn)
        .await
        .map_err(frontier_error)?;
    let now = crawl_now(time.0 * 1000 + time.1 / 1000, clock);
    // A host without its own delay has the crawl's: an operator's, else the configured one.
    let default_delay = default_delay.map_or(cfg.politeness.delay, Duration::from_millis);
    Ok(hosts
        .into_iter()
        .zip(rows)
        .zip(groups)
        .map(|((host, row), group)| {
            let mut info = info(host, &row, cfg, default_delay, now);
            if let Some(g) = group {
                if g.parked {
                    info.delay_reason = frontier::DelayReason::IpGroup;
                }
                info.address = Some(g.key);
                info.address_hosts = g.members;
                info.address_in_flight = g.in_flight;
            }
            info
        })
        .collect())
}

/// A host's address group as the listing shows it.
struct GroupView {
    key: String,
    members: u32,
    in_flight: u32,
    /// The host waits in the group's line.
    parked: bool,
}

/// The address group of each of `hosts` (politeness per address), each distinct group's
/// figures read once.
async fn groups_of(
    conn: &mut Conn,
    prefix: &str,
    hosts: &[String],
) -> Result<Vec<Option<GroupView>>, FrontierError> {
    if hosts.is_empty() {
        return Ok(Vec::new());
    }
    let mut pipe = redis::pipe();
    for h in hosts {
        pipe.cmd("HMGET")
            .arg(format!("{prefix}h:{h}"))
            .arg(&["ipg", "parked"]);
    }
    let placed: Vec<(Option<String>, Option<String>)> =
        pipe.query_async(conn).await.map_err(frontier_error)?;
    let mut keys: Vec<&str> = placed.iter().filter_map(|(g, _)| g.as_deref()).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut figures = std::collections::HashMap::new();
    if !keys.is_empty() {
        let mut pipe = redis::pipe();
        for k in &keys {
            pipe.cmd("HMGET")
                .arg(format!("{prefix}g:{k}"))
                .arg(&["members", "inflight"]);
        }
        let rows: Vec<(Option<i64>, Option<i64>)> =
            pipe.query_async(conn).await.map_err(frontier_error)?;
        let count = |v: Option<i64>| u32::try_from(v.unwrap_or(0)).unwrap_or(0);
        for (k, (members, in_flight)) in keys.iter().zip(rows) {
            figures.insert(*k, (count(members), count(in_flight)));
        }
    }
    Ok(placed
        .iter()
        .map(|(g, parked)| {
            let key = g.as_deref()?;
            let (members, in_flight) = figures.get(key).copied().unwrap_or_default();
            Some(GroupView {
                key: key.to_owned(),
                members,
                in_flight,
                parked: parked.is_some(),
            })
        })
        .collect())
}

/// The crawl's clock as the next script will read it (`now_ms` in the scripts): the server's
/// time less the time not counted, and less the part of a silence longer than a step. Host
/// times (`next_at`, `blocked_until`) are on this clock, not the server's.
fn crawl_now(server: u64, (last, off, step): (Option<i64>, Option<i64>, Option<i64>)) -> u64 {
    let server = i64::try_from(server).unwrap_or(i64::MAX);
    let (last, off, step) = (
        last.unwrap_or(server),
        off.unwrap_or(0),
        step.unwrap_or(10_000),
    );
    let gap = server.saturating_sub(last);
    let uncounted = if gap > step {
        off + gap - step
    } else {
        off + gap.min(0)
    };
    u64::try_from(server.saturating_sub(uncounted)).unwrap_or(0)
}

fn info(
    host: String,
    row: &[Option<i64>],
    cfg: &FrontierConfig,
    default_delay: Duration,
    now: u64,
) -> HostInfo {
    let field = |i: usize| row.get(i).copied().flatten();
    let count = |i: usize| u64::try_from(field(i).unwrap_or(0)).unwrap_or(0);
    let millis = |v: u64| Duration::from_millis(v);
    let set = |i: usize| field(i).and_then(|v| u64::try_from(v).ok());
    let crawl_delay = millis(count(6));
    let backoff = millis(count(7));
    let latency_delay = millis(count(13));
    let (delay, delay_reason) = frontier::PaceTerms {
        base: set(5).map_or(default_delay, millis),
        operator: set(5).is_some(),
        crawl_delay,
        latency: latency_delay,
        backoff,
    }
    .delay();
    let blocked_until = count(9);
    HostInfo {
        host,
        queued: count(0),
        in_flight: u32::try_from(count(1)).unwrap_or(u32::MAX),
        done: count(2),
        errors: count(3),
        admitted: count(4),
        delay,
        delay_reason,
        latency_delay,
        crawl_delay,
        backoff,
        ready_in: millis(count(8).max(blocked_until).saturating_sub(now)),
        blocked_for: (blocked_until > now).then(|| millis(blocked_until - now)),
        max_in_flight: set(10)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(cfg.politeness.max_per_host),
        max_pages: set(11).or(cfg.max_pages_per_host),
        max_done: set(12),
        ..HostInfo::default()
    }
}
