//! The url-frontier v2 API (crawler-commons/url-frontier) as Rust types: its messages, the
//! `URLFrontier` service's client and server, generated from `proto/urlfrontier.proto`.
//!
//! Design choice: the generated code is committed (`src/generated/urlfrontier.rs`), so a build
//! needs neither `protoc` nor the code generator and its dependencies; `tests/generated.rs`
//! regenerates it with the pure-Rust `protox` and fails when the committed file differs
//! (`UPDATE_GENERATED=1 cargo test -p urlfrontier-proto --test generated` rewrites it).
//! `tests/wire.rs` holds the `.proto` to the protocol's wire contract: every message's field
//! numbers and types, every RPC's streaming, and byte-exact encodings; `tests/python.rs` has
//! Google's `protoc` and Python's protobuf runtime encode and read the same bytes.

/// The protocol's package `urlfrontier`: messages, `url_frontier_client`, `url_frontier_server`.
#[allow(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    clippy::all,
    clippy::pedantic
)]
pub mod v2 {
    include!("generated/urlfrontier.rs");
}
