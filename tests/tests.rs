//! End-to-end tests of the `crawler` binary: one test binary, one module per area.

mod bloom_cli;
mod crawl;
mod credentials;
mod grpc;
mod grpc_upstream;
mod guard;
mod hostile;
mod memory;
mod politeness;
mod recrawl;
mod recrawl_shared;
mod redis;
mod redis_cluster;
mod redis_faults;
mod resume;
mod serve;
mod slow_clients;
mod tls;
mod util;
mod warc;
