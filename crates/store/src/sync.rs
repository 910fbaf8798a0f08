//! The store's lock idiom: a poisoned mutex (a thread panicked holding it) is taken as it is
//! — the batches it guards stay valid between statements. A leaf.

use std::sync::{Mutex, MutexGuard};

/// `m`'s guard, poisoned or not.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
