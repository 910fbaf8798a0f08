//! What the tests share, and only the tests (a dev-dependency everywhere, never linked into
//! a production crate):
//! - [`contract`]: the one suite of checks every `Frontier` implementation runs unchanged —
//!   in memory, durable (the crawl state) and shared in Redis;
//! - [`redis_server`]: a private `redis-server` on a free loopback port, with the faults the
//!   tests inject (stop, kill, pause, a command such as `CONFIG SET maxmemory`);
//! - [`redis_cluster`]: a private Redis Cluster of such servers (masters with a replica
//!   each), and its fault: a master killed, its replica promoted.

pub mod contract;
pub mod redis_cluster;
pub mod redis_server;
