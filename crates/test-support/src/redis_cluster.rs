//! A private Redis Cluster for tests and benchmarks: `masters` masters with one replica each,
//! every node a [`RedisServer`] on its own free loopback port and directory, the cluster
//! formed by `redis-cli --cluster create` and waited for until every live node says
//! `cluster_state:ok`. Its fault is a master killed for good: the cluster promotes the
//! master's replica after `cluster-node-timeout` ([`NODE_TIMEOUT_MS`]), and
//! [`RedisCluster::kill`] waits for that. Never a default port, never a node this process did
//! not start.

use std::io;
use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::redis_server::RedisServer;

/// How long a node may be silent before the others call it failed (milliseconds): short, so
/// that a failover in a test takes seconds.
pub const NODE_TIMEOUT_MS: u64 = 1000;

/// A running private Redis Cluster.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

/// The cluster's view of one node (a line of `CLUSTER NODES`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub addr: SocketAddr,
    pub master: bool,
    /// Marked failed by the cluster.
    pub failed: bool,
    /// Hash slot ranges it serves (masters), as written (`0-5460`).
    pub slots: Vec<String>,
}

impl RedisCluster {
    /// Starts `2 × masters` nodes and forms them into `masters` masters with a replica each;
    /// returns once every slot is served.
    pub fn start(masters: usize) -> io::Result<Self> {
        let timeout = NODE_TIMEOUT_MS.to_string();
        let extra = [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            timeout.as_str(),
            // A replica syncs at once (not 5 s later), so the cluster is whole sooner.
            "--repl-diskless-sync-delay",
            "0",
        ];
        let nodes = (0..masters.max(1) * 2)
            .map(|_| RedisServer::start(&extra))
            .collect::<io::Result<Vec<_>>>()?;
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(nodes.iter().map(|n| n.addr().to_string()))
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()?;
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "redis-cli --cluster create failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        let mut cluster = Self { nodes };
        cluster.wait(Duration::from_secs(30), |nodes| {
            nodes
                .iter()
                .filter(|n| n.master && !n.slots.is_empty())
                .count()
                == masters.max(1)
                && nodes.iter().filter(|n| !n.master).count() == masters.max(1)
        })?;
        // A replica that never synced will not take over (its data is older than
        // `cluster-replica-validity-factor` allows): whole means every replica's link is up.
        let start = Instant::now();
        while !cluster.replicas_synced() {
            if start.elapsed() > Duration::from_secs(30) {
                return Err(io::Error::other("the replicas did not sync within 30 s"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(cluster)
    }

    /// Starts `masters` masters without replicas (any number, 1 included: `redis-cli
    /// --cluster create` wants 3), the slots split evenly, for benchmarks that read each
    /// master's CPU time; returns once every node sees every slot served.
    pub fn start_bare(masters: usize) -> io::Result<Self> {
        let timeout = NODE_TIMEOUT_MS.to_string();
        let extra = [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            timeout.as_str(),
            // A node no other has met does not know its own address otherwise.
            "--cluster-announce-ip",
            "127.0.0.1",
        ];
        let n = masters.max(1);
        let nodes = (0..n)
            .map(|_| RedisServer::start(&extra))
            .collect::<io::Result<Vec<_>>>()?;
        for (i, node) in nodes.iter().enumerate() {
            let (lo, hi) = (16384 * i / n, 16384 * (i + 1) / n - 1);
            node.command(&["CLUSTER", "ADDSLOTSRANGE", &lo.to_string(), &hi.to_string()])?;
        }
        let first = nodes[0].addr();
        for node in &nodes[1..] {
            node.command(&[
                "CLUSTER",
                "MEET",
                &first.ip().to_string(),
                &first.port().to_string(),
            ])?;
        }
        let mut cluster = Self { nodes };
        cluster.wait(Duration::from_secs(30), |view| {
            view.iter()
                .filter(|v| v.master && !v.slots.is_empty())
                .count()
                == n
        })?;
        Ok(cluster)
    }

    /// Whether every live replica's link to its master is up.
    fn replicas_synced(&mut self) -> bool {
        self.nodes.iter_mut().all(|n| {
            !n.is_running()
                || n.command(&["INFO", "replication"]).is_ok_and(|info| {
                    info.contains("role:master") || info.contains("master_link_status:up")
                })
        })
    }

    /// A private cluster for a test, or `None` (with a note on stderr) where it cannot start
    /// and `REQUIRE_REDIS_TESTS` is not set (as [`RedisServer::for_test`]).
    pub fn for_test(masters: usize) -> Option<Self> {
        match Self::start(masters) {
            Ok(c) => Some(c),
            Err(e) if std::env::var_os("REQUIRE_REDIS_TESTS").is_none() => {
                eprintln!("skipped: no private Redis Cluster ({e}); scripts/test.sh installs it");
                None
            }
            Err(e) => panic!("a Redis Cluster is required (REQUIRE_REDIS_TESTS is set): {e}"),
        }
    }

    /// Every node's address, as started (a killed one's too).
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.nodes.iter().map(RedisServer::addr).collect()
    }

    /// The node listening on `addr`, if this cluster started one there.
    pub fn node(&self, addr: SocketAddr) -> Option<&RedisServer> {
        self.nodes.iter().find(|n| n.addr() == addr)
    }

    /// `redis+cluster://127.0.0.1:PORT` of the first live node: any one node names the
    /// cluster (the others are discovered).
    pub fn url(&mut self) -> String {
        let addr = self
            .nodes
            .iter_mut()
            .find_map(|n| n.is_running().then(|| n.addr()))
            .unwrap_or_else(|| self.nodes[0].addr());
        format!("redis+cluster://{addr}")
    }

    /// The cluster's view now, from a live node's `CLUSTER NODES`.
    pub fn view(&mut self) -> io::Result<Vec<Node>> {
        let mut last = io::Error::other("no live node");
        for n in &mut self.nodes {
            if !n.is_running() {
                continue;
            }
            match n.command(&["CLUSTER", "NODES"]) {
                Ok(text) => return Ok(parse_nodes(&text)),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// The live master serving `key`'s hash slot now.
    pub fn master_of(&mut self, key: &str) -> io::Result<SocketAddr> {
        let slot: u16 = {
            let node = self
                .nodes
                .iter_mut()
                .find_map(|n| n.is_running().then_some(n))
                .ok_or_else(|| io::Error::other("no live node"))?;
            let reply = node.command(&["CLUSTER", "KEYSLOT", key])?;
            reply
                .trim()
                .trim_start_matches(':')
                .parse()
                .map_err(|_| io::Error::other(format!("CLUSTER KEYSLOT answered {reply:?}")))?
        };
        self.view()?
            .into_iter()
            .find(|n| n.master && !n.failed && n.slots.iter().any(|r| serves(r, slot)))
            .map(|n| n.addr)
            .ok_or_else(|| io::Error::other(format!("no live master serves slot {slot}")))
    }

    /// Kills the master at `addr` for good (SIGKILL) and waits until its replica serves its
    /// slots and every live node says the cluster is ok.
    pub fn kill(&mut self, addr: SocketAddr) -> io::Result<()> {
        let before = self.view()?;
        let slots = before
            .iter()
            .find(|n| n.addr == addr && n.master)
            .map(|n| n.slots.clone())
            .ok_or_else(|| io::Error::other(format!("{addr} is not a master")))?;
        self.nodes
            .iter_mut()
            .find(|n| n.addr() == addr)
            .ok_or_else(|| io::Error::other(format!("no node on {addr}")))?
            .kill()?;
        self.wait(Duration::from_secs(30), |nodes| {
            nodes
                .iter()
                .any(|n| n.addr != addr && n.master && !n.failed && n.slots == slots)
        })
    }

    /// Waits until the cluster's view passes `ready` and every live node answers
    /// `cluster_state:ok`.
    fn wait(&mut self, limit: Duration, ready: impl Fn(&[Node]) -> bool) -> io::Result<()> {
        let start = Instant::now();
        loop {
            if self.view().is_ok_and(|v| ready(&v)) && self.all_ok() {
                return Ok(());
            }
            if start.elapsed() > limit {
                return Err(io::Error::other(format!(
                    "the cluster did not settle within {limit:?}: {:?}",
                    self.view()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn all_ok(&mut self) -> bool {
        self.nodes.iter_mut().all(|n| {
            !n.is_running()
                || n.command(&["CLUSTER", "INFO"])
                    .is_ok_and(|info| info.contains("cluster_state:ok"))
        })
    }
}

/// Whether a slot range of `CLUSTER NODES` (`0-5460`, `10923`) holds `slot`.
fn serves(range: &str, slot: u16) -> bool {
    let (lo, hi) = range.split_once('-').unwrap_or((range, range));
    matches!((lo.parse::<u16>(), hi.parse::<u16>()), (Ok(lo), Ok(hi)) if (lo..=hi).contains(&slot))
}

/// The lines of `CLUSTER NODES`: `id ip:port@cport flags master ping pong epoch link slots…`.
fn parse_nodes(text: &str) -> Vec<Node> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let addr = fields.get(1)?.split('@').next()?.parse().ok()?;
            let flags = fields.get(2)?;
            Some(Node {
                addr,
                master: flags.split(',').any(|f| f == "master"),
                failed: flags.split(',').any(|f| f == "fail" || f == "fail?"),
                slots: fields.iter().skip(8).map(|s| (*s).to_owned()).collect(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_nodes_lines_are_read() {
        let text = "\
a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460
b2 127.0.0.1:7002@17002 slave a1 0 1 1 connected
c3 127.0.0.1:7003@17003 master,fail - 0 1 2 disconnected 5461-10922 10923
";
        let nodes = parse_nodes(text);
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[0].slots, ["0-5460"]);
        assert!(nodes[0].master && !nodes[0].failed);
        assert!(!nodes[1].master && nodes[1].slots.is_empty());
        assert!(nodes[2].failed && nodes[2].slots.len() == 2);
        assert!(serves("0-5460", 0) && serves("0-5460", 5460) && !serves("0-5460", 5461));
        assert!(serves("10923", 10923) && !serves("[5461->-a1]", 5461));
    }
}
