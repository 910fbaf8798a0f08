//! A running crawl's answers about single URLs (url-frontier's GetURLStatus, ListURLs and
//! CountURLs): the frontier's ([`frontier::Frontier::find_url`],
//! [`frontier::Frontier::list_urls`]) with the URLs external fetchers hold — out with a
//! fetcher, they are in no queue — found first and listed first (by key, then URL). URLs
//! out with the built-in workers are in neither (at most `crawl.concurrency`).

use frontier::{Entry, Found, Pager, UrlPage, UrlQuery};
use url::Url;

use crate::control::Control;

/// Where a URL is in a running crawl.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlPlace {
    /// Held by an external fetcher (a lease out), in the queue `key`.
    Held {
        /// Its queue.
        key: String,
        /// Its entry.
        entry: Entry,
    },
    /// Where the frontier found it.
    Frontier(Found),
}

impl Control {
    /// Where the canonical `url` is: held, asleep, queued for `key`, or only seen; `None`
    /// when the frontier cannot answer now.
    pub async fn find_url(&self, url: &Url, key: &str) -> Option<UrlPlace> {
        if let Some((key, entry)) = self.leases.table.find(url.as_str()) {
            return Some(UrlPlace::Held { key, entry });
        }
        self.report
            .frontier
            .read_frontier("find_url", |f| f.find_url(url, key))
            .await
            .map(UrlPlace::Frontier)
    }

    /// A page of the URLs held, then queued, then asleep (see the module header), and how
    /// many match; `None` when the frontier cannot answer now.
    pub async fn list_urls(&self, query: UrlQuery) -> Option<UrlPage> {
        let mut pager = Pager::new(&query);
        for (key, entry) in self.leases.table.entries() {
            if pager.wants_key(&key) {
                pager.push(&key, &entry, false);
            }
        }
        let held = pager.finish();
        // The frontier's part of the page starts where the held URLs left off.
        let rest = UrlQuery {
            skip: query.skip.saturating_sub(held.matched),
            limit: query.limit - held.urls.len(),
            ..query.clone()
        };
        let mut page = self
            .report
            .frontier
            .read_frontier("list_urls", |f| f.list_urls(rest.clone()))
            .await?;
        page.matched += held.matched;
        let mut urls = held.urls;
        urls.append(&mut page.urls);
        page.urls = urls;
        Some(page)
    }
}
