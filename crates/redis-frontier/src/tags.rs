//! Where a Redis Cluster keeps a crawl's partitions: each partition's hash tag, chosen when
//! the crawl is made so that the masters hold as equal a number of partitions as they can.
//!
//! A partition's tag decides its hash slot, and so its master. Tags of the plain form
//! `ID p` land where CRC16 puts them — six partitions over three masters fell 3 : 2 : 1 in
//! the benchmarks, and the busiest master is the crawl's ceiling. So the crawl's first
//! process asks the cluster, for each partition p ≥ 1 in turn, which master serves the tag
//! `ID p`, then `ID p.1`, `ID p.2`, … and takes the first that lands on a master holding the
//! fewest partitions so far (partition 0 keeps the crawl's own tag `ID`). The choices are
//! recorded with the crawl's shape (`meta.tags`: the suffixes, `0` for the plain tag), and
//! every process, export and delete reads them from there: a later change of the cluster's
//! layout (slots moved) moves partitions with their slots, never renames them. On one Redis
//! every tag is the plain one.

use std::collections::HashMap;

use crate::conn::Conn;
use crate::visited::partition_prefix;

/// Candidate suffixes tried per partition before the plain tag is kept.
const TRIES: u32 = 64;

/// The suffixes of `tags` as recorded (`meta.tags`): partitions 1 … P-1, comma-separated.
pub(crate) fn encode(tags: &[u32]) -> String {
    let rest: Vec<String> = tags.iter().skip(1).map(u32::to_string).collect();
    rest.join(",")
}

/// The suffixes of `parts` partitions from their record (`None`: not a record of that many).
pub(crate) fn decode(text: &str, parts: u32) -> Option<Vec<u32>> {
    let mut tags = vec![0];
    if parts > 1 {
        for t in text.split(',') {
            tags.push(t.trim().parse().ok()?);
        }
    }
    (tags.len() == parts as usize).then_some(tags)
}

/// The suffixes for a new crawl of `parts` partitions on the cluster behind `conn` (see the
/// module header).
pub(crate) async fn choose(
    conn: &mut Conn,
    crawl_id: &str,
    parts: u32,
) -> redis::RedisResult<Vec<u32>> {
    let masters = masters(conn, crawl_id).await?;
    let mut held: HashMap<String, u32> = masters.iter().map(|m| (m.clone(), 0)).collect();
    let home = node_of(conn, &partition_prefix(crawl_id, 0, 0)).await?;
    *held.entry(home).or_default() += 1;
    let mut tags = vec![0];
    for p in 1..parts {
        let fewest = held.values().copied().min().unwrap_or(0);
        let mut chosen = None;
        for n in 0..TRIES {
            let node = node_of(conn, &partition_prefix(crawl_id, p, n)).await?;
            if held.get(&node).copied().unwrap_or(0) == fewest {
                chosen = Some((n, node));
                break;
            }
        }
        let (n, node) = match chosen {
            Some(c) => c,
            None => (0, node_of(conn, &partition_prefix(crawl_id, p, 0)).await?),
        };
        *held.entry(node).or_default() += 1;
        tags.push(n);
    }
    Ok(tags)
}

/// The id of the master serving the slot of the keys under `prefix`.
async fn node_of(conn: &mut Conn, prefix: &str) -> redis::RedisResult<String> {
    conn.on_node_of(&format!("{prefix}meta"), redis::cmd("CLUSTER").arg("MYID"))
        .await
}

/// The ids of the cluster's masters that serve slots (from the node of the crawl's home).
async fn masters(conn: &mut Conn, crawl_id: &str) -> redis::RedisResult<Vec<String>> {
    let nodes: String = conn
        .on_node_of(
            &format!("{}meta", partition_prefix(crawl_id, 0, 0)),
            redis::cmd("CLUSTER").arg("NODES"),
        )
        .await?;
    Ok(nodes
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let flags = f.get(2)?;
            let master = flags.split(',').any(|x| x == "master");
            let failed = flags.split(',').any(|x| x == "fail" || x == "fail?");
            (master && !failed && f.len() > 8).then(|| f[0].to_owned())
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_recorded_and_read_back() {
        assert_eq!(encode(&[0]), "");
        assert_eq!(decode("", 1), Some(vec![0]));
        assert_eq!(encode(&[0, 0, 3, 1]), "0,3,1");
        assert_eq!(decode("0,3,1", 4), Some(vec![0, 0, 3, 1]));
        assert_eq!(decode("0,3", 4), None, "too few");
        assert_eq!(decode("0,x,1", 4), None);
        assert_eq!(partition_prefix("c", 2, 0), "crawl:{c 2}:");
        assert_eq!(partition_prefix("c", 2, 5), "crawl:{c 2.5}:");
        assert_eq!(partition_prefix("c", 0, 0), "crawl:{c}:");
    }
}
