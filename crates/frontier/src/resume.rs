//! What a durable crawl needs of a frontier in this process: a [`Journal`] that records
//! every admission (the embedded store implements it), and [`Resumable`], the restoring
//! half, so that the code which resumes a crawl names no frontier implementation.

use std::sync::Arc;
use std::time::Duration;

use crate::api::{Admission, Frontier, Link};
use crate::entry::Entry;
use crate::scheduler::HostBackoff;

/// Where admissions are recorded durably (an embedded store), and the exact visited set of
/// [`Dedup::Exact`](crate::Dedup::Exact). Both calls are made under the URL's admission lock, so for one URL they
/// never interleave.
pub trait Journal: Send + Sync + std::fmt::Debug {
    /// Records an admission of the URL with fingerprint `fp` (politeness key `host`, as
    /// [`host_key`](crate::host_key) gives it) and sets `entry.id`, before the entry is queued.
    fn admitted(&self, fp: u128, host: &str, entry: &mut Entry);
    /// Whether the exact visited set holds `fp` (recorded, durable or not yet).
    fn contains(&self, fp: u128) -> bool;
    /// A host's backoff changed (made under the scheduler lock, so calls for one host arrive
    /// in order). Restore it with [`Resumable::restore_backoff`].
    fn host_backoff(&self, _change: &HostBackoff) {}
    /// Admission `id` is finished (`recorded`: its record was written before this call), so a
    /// resumed crawl must not fetch it again.
    fn done(&self, _id: u64, _recorded: bool) {}
    /// Admission `id` was fetched (`recorded` as for [`done`](Self::done)) and is due again:
    /// its queued entry is now `entry`, carrying its next due time and history, to restore
    /// instead of the one admitted. A journal that keeps no schedules marks it done.
    fn rescheduled(&self, id: u64, recorded: bool, _entry: &Entry) {
        self.done(id, recorded);
    }
}

/// A frontier in this process that a resumed crawl restores from its durable state, and that
/// journals every admission into it from then on. What resuming needs of a frontier, so that
/// the code which resumes names no implementation.
pub trait Resumable: Frontier {
    /// Records every admission in `journal` (and, with exact deduplication, confirms "maybe
    /// seen" answers against it). Set before the first offer.
    fn set_journal(&mut self, journal: Arc<dyn Journal>);

    /// Marks a fingerprint of an earlier run as seen (rebuilds the filter).
    fn restore_seen(&self, fp: u128);

    /// Queues an entry admitted (and journaled) by an earlier run, without offering it
    /// again; its fingerprint must have been restored with `restore_seen`. `false` (and
    /// nothing queued) if the stored URL does not parse.
    fn restore_entry(&self, entry: Entry) -> bool;

    /// `n` URLs of `host` were admitted by earlier runs (per-host and total budgets count
    /// them).
    fn restore_admitted(&self, host: &str, n: u64);

    /// `host` was backing off (`backoff`) and may not be fetched for `wait` more.
    fn restore_backoff(&self, host: &str, backoff: Duration, wait: Duration);

    /// `n` pages were recorded by earlier runs (the page budget counts them).
    fn restore_pages(&self, n: u64);

    /// Offers one page's links like [`Frontier::offer`], at once, except that an admitted
    /// entry for which `hold` returns `true` is journaled but not queued: the caller settles
    /// it (a page whose fetch the output already holds).
    fn offer_links_holding(
        &self,
        parent: Option<&str>,
        links: Vec<Link>,
        hold: &mut dyn FnMut(&Entry) -> bool,
    ) -> Vec<Admission>;
}
