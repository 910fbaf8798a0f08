//! A running crawl's answers about single URLs (url-frontier's GetURLStatus, ListURLs and
//! CountURLs): the frontier's ([`frontier::Frontier::find_url`],
//! [`frontier::Frontier::list_urls`]) with the URLs external fetchers hold — out with a
//! fetcher, they are in no queue — found first and listed first (by key, then URL). URLs
//! out with the built-in workers are in neither (at most `crawl.concurrency`).

use frontier::{ClientInfo, Entry, Found, Link, Pager, UrlPage, UrlQuery};
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

    /// Queues the canonical `url` again although the crawl has seen it — a client's date
    /// for a URL it finished — asleep until `due` (Unix seconds) with the client's fields;
    /// `None` when the frontier cannot take it now.
    pub async fn requeue_dated(
        &self,
        url: Url,
        client: Option<Box<ClientInfo>>,
        due: u64,
    ) -> Option<bool> {
        let link = Link {
            due: Some(due),
            client,
            ..Link::new(url, 0)
        };
        self.report
            .frontier
            .with_frontier("requeue", |f| f.requeue(vec![link.clone()]))
            .await
            .map(|taken| taken.first() == Some(&true))
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
