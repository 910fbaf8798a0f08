//! One connection type for the two kinds of server the shared frontier runs on: a single
//! Redis (`redis://…`, a connection manager that reconnects) and a Redis Cluster
//! (`redis+cluster://HOST:PORT[,HOST:PORT…]`, any node names it; the others are discovered).
//!
//! Design choice: both are one [`Conn`] that implements redis-rs' `ConnectionLike`, so every
//! script, command and pipeline of the frontier is written once. A script is routed by its
//! first key, and every key of a crawl carries the crawl's hash tag, so on a cluster each
//! call goes to the master that serves the crawl's slot. Commands that name no key (`INFO`,
//! `SCAN`) are sent to that master by hand ([`Conn::on_node_of`]): redis-rs would send them
//! to every node, or to any.
//!
//! A cluster client gives up after two retries with short waits (redis-rs' default is 16 over
//! up to 655 s): a failover then reaches the engine as a failed call, which it reports
//! ("frontier unavailable") and retries with its own back-off, while a moved slot (`MOVED`,
//! `ASK`, a `READONLY` from a demoted master) is still followed inside the client.

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::RedisFrontierError;

/// How long a connection may take to open, and a reply to come.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the frontier's server is, from its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// One Redis: the URL as redis-rs reads it.
    One(String),
    /// A cluster: one `redis://` URL per seed node.
    Cluster(Vec<String>),
}

impl Target {
    /// Reads `redis+cluster://[user:password@]host:port[,host:port…]` (`rediss+cluster://`
    /// with TLS) as a cluster, anything else as one Redis.
    pub(crate) fn parse(url: &str) -> Result<Self, RedisFrontierError> {
        let (scheme, rest) = if let Some(rest) = url.strip_prefix("redis+cluster://") {
            ("redis://", rest)
        } else if let Some(rest) = url.strip_prefix("rediss+cluster://") {
            ("rediss://", rest)
        } else {
            return Ok(Target::One(url.to_owned()));
        };
        let rest = rest.trim_end_matches('/');
        let (auth, hosts) = match rest.rsplit_once('@') {
            Some((auth, hosts)) => (format!("{auth}@"), hosts),
            None => (String::new(), rest),
        };
        let nodes: Vec<String> = hosts
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(|h| format!("{scheme}{auth}{h}"))
            .collect();
        if nodes.is_empty() || hosts.contains('/') {
            return Err(RedisFrontierError::WrongKind(format!(
                "`{hosts}` names no cluster node: redis+cluster://host:port[,host:port…] \
                 (a cluster has no databases)"
            )));
        }
        Ok(Target::Cluster(nodes))
    }
}

/// A connection to the frontier's server: one Redis or a cluster (see the module header).
#[derive(Clone)]
pub(crate) enum Conn {
    One(ConnectionManager),
    Cluster(ClusterConnection),
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Conn::One(_) => "Conn::One",
            Conn::Cluster(_) => "Conn::Cluster",
        })
    }
}

impl Conn {
    /// Opens a connection to the server `url` names, and checks that it is the kind the URL
    /// says: a `redis://` URL that reaches a cluster node, or a cluster URL that reaches a
    /// plain Redis, is [`RedisFrontierError::WrongKind`] (the settings' fault, not the
    /// server's).
    pub(crate) async fn open(url: &str) -> Result<Self, RedisFrontierError> {
        match Target::parse(url)? {
            Target::One(url) => {
                let client = redis::Client::open(url.as_str())?;
                let manager = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(CONNECT_TIMEOUT))
                    .set_response_timeout(Some(RESPONSE_TIMEOUT))
                    .set_number_of_retries(2)
                    .set_max_delay(Duration::from_secs(1));
                let on_cluster = || {
                    RedisFrontierError::WrongKind(
                        "the Redis URL reaches a Redis Cluster node: use \
                         redis+cluster://host:port (any node of the cluster)"
                            .into(),
                    )
                };
                let manager = match ConnectionManager::new_with_config(client, manager).await {
                    Ok(m) => m,
                    // A database other than 0 is selected on connecting; a cluster node
                    // refuses `SELECT`.
                    Err(e) if e.to_string().contains("not allowed in cluster mode") => {
                        return Err(on_cluster())
                    }
                    Err(e) => return Err(e.into()),
                };
                let mut conn = Conn::One(manager);
                let info: String = conn
                    .on_node_of("", redis::cmd("INFO").arg("cluster"))
                    .await?;
                if info_field(&info, "cluster_enabled") == Some("1") {
                    return Err(on_cluster());
                }
                Ok(conn)
            }
            Target::Cluster(nodes) => {
                let client = ClusterClientBuilder::new(nodes.clone())
                    .retries(2)
                    .min_retry_wait(50)
                    .max_retry_wait(1_000)
                    .connection_timeout(CONNECT_TIMEOUT)
                    .response_timeout(RESPONSE_TIMEOUT)
                    .build()?;
                match client.get_async_connection().await {
                    Ok(conn) => Ok(Conn::Cluster(conn)),
                    Err(e) if e.to_string().contains("cluster support disabled") => {
                        let hosts: Vec<&str> = nodes
                            .iter()
                            .map(|n| n.rsplit_once('@').map_or(n.as_str(), |(_, h)| h))
                            .collect();
                        Err(RedisFrontierError::WrongKind(format!(
                            "{} is not a Redis Cluster node: use redis://host:port/db",
                            hosts.join(", ")
                        )))
                    }
                    Err(e) => Err(e.into()),
                }
            }
        }
    }

    /// Whether this is a Redis Cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self, Conn::Cluster(_))
    }

    /// Sends `cmd` to the master serving `key`'s slot (on one Redis, to it): for commands
    /// that name no key but concern the crawl's node (`INFO`, `SCAN`).
    pub(crate) async fn on_node_of<T: redis::FromRedisValue>(
        &mut self,
        key: &str,
        cmd: &Cmd,
    ) -> redis::RedisResult<T> {
        match self {
            Conn::One(c) => cmd.query_async(c).await,
            Conn::Cluster(c) => {
                let route = Route::with_key(key.as_bytes(), SlotAddr::Master);
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                let value = c.route_command(cmd.clone(), routing).await?;
                redis::from_redis_value(value).map_err(Into::into)
            }
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::One(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::One(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::One(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// A field of an `INFO` reply (`name:value` lines).
pub(crate) fn info_field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines().find_map(|l| {
        l.strip_prefix(name)
            .and_then(|r| r.strip_prefix(':'))
            .map(str::trim)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_urls_name_their_seed_nodes() {
        assert_eq!(
            Target::parse("redis://127.0.0.1:6379/2").unwrap(),
            Target::One("redis://127.0.0.1:6379/2".into())
        );
        assert_eq!(
            Target::parse("redis+cluster://u:p@a:7000,b:7001/").unwrap(),
            Target::Cluster(vec![
                "redis://u:p@a:7000".into(),
                "redis://u:p@b:7001".into()
            ])
        );
        assert_eq!(
            Target::parse("rediss+cluster://a:7000").unwrap(),
            Target::Cluster(vec!["rediss://a:7000".into()])
        );
        for bad in [
            "redis+cluster://",
            "redis+cluster://a:7000/3",
            "redis+cluster://u@",
        ] {
            assert!(
                matches!(Target::parse(bad), Err(RedisFrontierError::WrongKind(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn info_fields_are_read_by_name() {
        let info = "# Cluster\r\ncluster_enabled:1\r\nredis_version:7.0.15\r\n";
        assert_eq!(info_field(info, "cluster_enabled"), Some("1"));
        assert_eq!(info_field(info, "redis_version"), Some("7.0.15"));
        assert_eq!(info_field(info, "cluster"), None);
    }
}
