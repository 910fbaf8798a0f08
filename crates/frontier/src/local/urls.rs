//! [`LocalFrontier`]'s answers about single URLs ([`crate::listing`]): where one is, and
//! pages of those queued (memory and spill, read in place) or asleep.

use std::sync::Arc;

use url::Url;

use super::{fingerprint, fp_hash, LocalFrontier};
use crate::listing::{Found, Pager, UrlPage, UrlQuery};

impl LocalFrontier {
    /// Where the canonical `url` is: asleep (in any queue), queued for `key`, or seen only.
    /// The visited set is asked first: a URL it never saw is in no queue, and none is read.
    pub fn find_url(&self, url: &Url, key: &str) -> Found {
        let fp = fingerprint(url.as_str());
        let exact = self.cfg.dedup == super::Dedup::Exact && self.journal.is_some();
        let seen = self.filter.might_contain_hash(fp_hash(fp))
            && (!exact || self.journal.as_ref().is_some_and(|j| j.contains(fp)));
        if !seen {
            return Found::Unseen;
        }
        if let Some((_, entry)) = self.sleeping().peek(fp) {
            return Found::Asleep(entry);
        }
        let mut found = None;
        self.sched().walk_queue(key, |e| {
            if e.url == url.as_str() {
                found = Some(e.clone());
            }
            found.is_none()
        });
        match found {
            Some(entry) => Found::Queued(entry),
            None => Found::Seen,
        }
    }

    /// A page of the URLs queued (each queue in key order) then asleep (earliest due
    /// first). The scheduler's lock is held while one queue is read (its spilled chunks
    /// included), and taken again for the next: hand-outs go on between queues.
    pub fn list_urls(&self, query: &UrlQuery) -> UrlPage {
        let mut pager = Pager::new(query);
        let hosts = match &query.key {
            Some(key) => vec![Arc::from(key.as_str())],
            None => self.sched().host_names(),
        };
        for host in hosts {
            let mut sched = self.sched();
            let n = sched.queue_len(&host);
            if !pager.must_read(n) {
                pager.count(n);
                continue;
            }
            sched.walk_queue(&host, |e| {
                pager.push(&host, e, false);
                true
            });
        }
        let sleeping = self.sleeping();
        let n = sleeping.len_of(query.key.as_deref());
        if pager.must_read(n) {
            sleeping.walk(query.key.as_deref(), |host, e| pager.push(host, e, true));
        } else {
            pager.count(n);
        }
        drop(sleeping);
        pager.finish()
    }
}
