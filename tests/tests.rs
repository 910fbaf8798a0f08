//! End-to-end tests of the `crawler` binary: one test binary, one module per area.

mod bloom_cli;
mod crawl;
mod guard;
mod hostile;
mod redis;
mod resume;
mod serve;
mod tls;
mod util;
mod warc;
