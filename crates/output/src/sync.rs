//! The one lock idiom of the crawl's output and engine: a poisoned mutex (a thread panicked
//! holding it) is taken as it is — every value they guard stays valid between statements, and
//! a crawl must not stop because one task failed. A leaf.

use std::sync::{Mutex, MutexGuard};

/// `m`'s guard, poisoned or not.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
