//! The lock idiom, from below everything that uses it.

pub(crate) use output::sync::lock;
