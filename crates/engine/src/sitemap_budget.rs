//! How many sitemap files each host may have read: a per-host budget shared by the workers.

use dashmap::DashMap;

/// Most sitemap files read per host (index files included).
pub(crate) const MAX_FILES_PER_HOST: u32 = 1000;

/// How many sitemap files each host has had offered (the per-host limit).
#[derive(Debug, Default)]
pub(crate) struct FileBudget(DashMap<String, u32>);

impl FileBudget {
    /// Takes up to `want` files of `host`'s budget; returns how many it may offer.
    pub(crate) fn take(&self, host: &str, want: usize) -> usize {
        let mut used = self.0.entry(host.to_owned()).or_insert(0);
        let grant = (MAX_FILES_PER_HOST.saturating_sub(*used) as usize).min(want);
        *used += grant as u32;
        grant
    }
}
