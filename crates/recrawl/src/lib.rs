//! Time in the frontier: what is kept of each fetched URL so that it can be fetched again
//! well, and when that is.
//!
//! Design choices:
//! - **One byte form for both frontiers** ([`history`]): the local store and Redis keep the
//!   same 37 bytes plus the ETag, little-endian, so a URL's history means the same wherever
//!   it lives, and Redis keeps a URL's whole history in one listpack field (≤ 64 bytes for
//!   the ETags common servers send).
//! - **An ETag is sent back byte-exact** ([`etag`]): `If-None-Match` compares opaque tags,
//!   so a hash of it cannot be stored. Tags made of hex groups (nginx, Apache) are packed
//!   into nibbles losslessly; longer ones spill to a store of their own; one over
//!   [`etag::MAX_ETAG`] bytes is not kept (the digest still detects a change).
//! - **Schedules are pure functions** ([`policy`]): an interval in, an observation, an
//!   interval out, and a due time with a jitter drawn from the URL's fingerprint — the same
//!   answer in every process of a shared crawl, with no clock read here.

pub mod etag;
pub mod history;
pub mod policy;

pub use etag::Etag;
pub use history::{DecodeError, Encoded, History};
pub use policy::{Observation, Policy, PolicyError, Schedule};
