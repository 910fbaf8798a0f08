//! The in-memory batch: admissions, completions, back-offs and robots.txt records waiting
//! for the next checkpoint, and the batch a checkpoint takes out of it to commit.

use std::collections::{HashMap, HashSet};

/// Pending events that make the writer commit before the interval is up.
pub(crate) const FLUSH_AT: usize = 50_000;

#[derive(Debug, Default)]
pub(crate) struct Pending {
    pub(crate) admits: Vec<Admit>,
    /// (admission id, whether a `pages.jsonl` record was written)
    pub(crate) done: Vec<(u64, bool)>,
    /// Fetched and due again (`[recrawl]`): (admission id, whether a record was written, the
    /// queue row that replaces the admitted one). Latest last.
    pub(crate) rescheduled: Vec<(u64, bool, Vec<u8>)>,
    /// Fingerprints admitted but not yet readable from the committed snapshot.
    pub(crate) fps: HashSet<u128>,
    /// host → (backoff ms, not before ms); a zero backoff deletes the row. Latest wins.
    pub(crate) backoffs: HashMap<String, (u64, u64)>,
    /// origin → robots record. Latest wins.
    pub(crate) robots: HashMap<String, Vec<u8>>,
}

impl Pending {
    /// Admissions and completions: what a checkpoint must commit.
    pub(crate) fn events(&self) -> usize {
        self.admits.len() + self.done.len() + self.rescheduled.len()
    }
}

/// One admission, as the next checkpoint writes it.
#[derive(Debug)]
pub(crate) struct Admit {
    pub(crate) fp: u128,
    pub(crate) id: u64,
    pub(crate) depth: u32,
    /// The encoded [`Entry`].
    pub(crate) entry: Vec<u8>,
    pub(crate) host: String,
    /// Exact mode: the fingerprint is not in the in-memory index, so the `seen` table must
    /// hold it.
    pub(crate) unindexed: bool,
}

/// One checkpoint's worth of changes.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub(crate) admits: Vec<Admit>,
    pub(crate) done: Vec<(u64, bool)>,
    pub(crate) rescheduled: Vec<(u64, bool, Vec<u8>)>,
    pub(crate) backoffs: HashMap<String, (u64, u64)>,
    pub(crate) robots: HashMap<String, Vec<u8>>,
}

impl Batch {
    pub(crate) fn is_empty(&self) -> bool {
        self.admits.is_empty()
            && self.done.is_empty()
            && self.rescheduled.is_empty()
            && self.backoffs.is_empty()
            && self.robots.is_empty()
    }
}
