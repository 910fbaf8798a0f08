//! [`LocalFrontier`] restored from a crawl's durable state: the [`Resumable`] half.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use super::{fp_hash, host_key, LocalFrontier};
use crate::api::{Admission, Link};
use crate::entry::Entry;
use crate::resume::{Journal, Resumable};

impl Resumable for LocalFrontier {
    fn set_journal(&mut self, journal: Arc<dyn Journal>) {
        self.journal = Some(journal);
    }

    fn restore_seen(&self, fp: u128) {
        self.filter.put_hash(fp_hash(fp));
    }

    fn restore_entry(&self, entry: Entry) -> bool {
        let host = match (entry.queue_key(), Url::parse(&entry.url)) {
            (Some(key), _) => key.to_owned(),
            (None, Ok(u)) => host_key(&u).to_owned(),
            (None, Err(_)) => return false,
        };
        // A URL fetched before and not yet due again sleeps until it is.
        if entry
            .visit
            .as_ref()
            .is_some_and(|v| v.due > super::unix_now())
        {
            let fp = super::fingerprint(&entry.url);
            self.sched().know_host(&host);
            self.sleeping().insert(&host, &entry, fp);
            self.notify.notify_waiters();
            return true;
        }
        let wake = self.sched().push(&host, entry);
        if wake {
            self.notify.notify_waiters();
        }
        true
    }

    fn restore_admitted(&self, host: &str, n: u64) {
        *self.per_host.entry(Arc::from(host)).or_insert(0) += n;
    }

    fn restore_backoff(&self, host: &str, backoff: Duration, wait: Duration) {
        self.sched()
            .restore_backoff(host, backoff, wait, Instant::now());
    }

    fn restore_pages(&self, n: u64) {
        self.pages.fetch_add(n, Ordering::Relaxed);
    }

    fn offer_links_holding(
        &self,
        parent: Option<&str>,
        links: Vec<Link>,
        hold: &mut dyn FnMut(&Entry) -> bool,
    ) -> Vec<Admission> {
        self.offer_holding(parent, links, hold)
    }
}
