//! The bloom crate's integration tests: one binary, one module per area.

mod concurrency;
mod fpp;
mod guava_fixtures;
mod guava_known_answers;
mod properties;
