//! What a frontier says of its URLs one by one: where a URL is ([`Found`]) and pages of the
//! URLs it holds ([`UrlQuery`] → [`UrlPage`]) — url-frontier's GetURLStatus, ListURLs and
//! CountURLs.
//!
//! Design choice: no second store of URLs. A queued or asleep URL is read where it is kept
//! (memory, the spill, Redis), so the listing costs nothing until it is asked for, and a pass
//! over what it lists when it is (without a filter, whole queues before the page are counted
//! by their length, not read): an operator's call, not a worker's. A URL the crawl finished
//! is known only to the visited set ([`Found::Seen`]); its string is not kept.

use crate::entry::Entry;

/// Where a URL is, as [`Frontier::find_url`](crate::Frontier::find_url) found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// Queued in the queue asked about.
    Queued(Entry),
    /// Asleep until a due time (its entry's visit says when), in any queue.
    Asleep(Entry),
    /// Not queued there nor asleep, but the visited set has it: finished, out with a
    /// fetcher, or queued under another key (or, with Bloom deduplication, a false
    /// positive at the filter's rate).
    Seen,
    /// The crawl has never seen it.
    Unseen,
}

/// Which URLs a listing covers, and which page of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UrlQuery {
    /// One queue only.
    pub key: Option<String>,
    /// Only URLs whose string (as put, or canonical) contains this.
    pub filter: Option<String>,
    /// The filter ignores case.
    pub ignore_case: bool,
    /// Matching URLs to pass over first.
    pub skip: u64,
    /// Most URLs in the page (0: none, only the count).
    pub limit: usize,
}

/// One URL of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedUrl {
    /// Its queue.
    pub key: String,
    /// The queued entry (with its visit when asleep).
    pub entry: Entry,
    /// Asleep until a due time (else queued).
    pub asleep: bool,
}

/// A page of a listing: the queued URLs of each queue in key order (each in its queue's
/// order), then the asleep ones by due time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UrlPage {
    /// The page.
    pub urls: Vec<ListedUrl>,
    /// Every URL that matches, in and out of the page.
    pub matched: u64,
}

/// Builds a [`UrlPage`] from URLs seen in listing order.
#[derive(Debug)]
pub struct Pager<'q> {
    query: &'q UrlQuery,
    needle: Option<String>,
    page: UrlPage,
}

impl<'q> Pager<'q> {
    /// An empty page of `query`.
    pub fn new(query: &'q UrlQuery) -> Self {
        let needle = query.filter.as_ref().filter(|f| !f.is_empty()).map(|f| {
            if query.ignore_case {
                f.to_lowercase()
            } else {
                f.clone()
            }
        });
        Self {
            query,
            needle,
            page: UrlPage::default(),
        }
    }

    /// Whether a run of `n` URLs must be read: with a filter every URL is; without, only a
    /// run that reaches into the page ([`count`](Self::count) passes over the others).
    pub fn must_read(&self, n: u64) -> bool {
        let (start, end) = (self.query.skip, self.page_end());
        let seen = self.page.matched;
        self.needle.is_some() || (start < end && seen < end && seen.saturating_add(n) > start)
    }

    /// Counts `n` URLs that were not read (only without a filter).
    pub fn count(&mut self, n: u64) {
        self.page.matched += n;
    }

    /// Whether `key` is the queue asked about (any, when none was).
    pub fn wants_key(&self, key: &str) -> bool {
        self.query.key.as_deref().is_none_or(|k| k == key)
    }

    /// Takes the next URL in listing order: counted when it matches, kept when it falls in
    /// the page.
    pub fn push(&mut self, key: &str, entry: &Entry, asleep: bool) {
        if !self.matches(entry) {
            return;
        }
        let at = self.page.matched;
        self.page.matched += 1;
        if at >= self.query.skip && at < self.page_end() {
            self.page.urls.push(ListedUrl {
                key: key.to_owned(),
                entry: entry.clone(),
                asleep,
            });
        }
    }

    /// The page.
    pub fn finish(self) -> UrlPage {
        self.page
    }

    fn page_end(&self) -> u64 {
        self.query.skip.saturating_add(self.query.limit as u64)
    }

    fn matches(&self, entry: &Entry) -> bool {
        let Some(needle) = &self.needle else {
            return true;
        };
        let url = entry
            .client
            .as_deref()
            .and_then(crate::ClientInfo::original)
            .unwrap_or(&entry.url);
        if self.query.ignore_case {
            url.to_lowercase().contains(needle.as_str())
        } else {
            url.contains(needle.as_str())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(url: &str) -> Entry {
        Entry::new(url.into(), 0, None)
    }

    #[test]
    fn pages_count_and_filter() {
        let query = UrlQuery {
            skip: 3,
            limit: 2,
            ..UrlQuery::default()
        };
        let mut p = Pager::new(&query);
        assert!(!p.must_read(3), "wholly before the page");
        p.count(3);
        assert!(p.must_read(10));
        for i in 0..10 {
            p.push("k", &entry(&format!("http://h/{i}")), false);
        }
        assert!(!p.must_read(5), "wholly after the page");
        p.count(5);
        let page = p.finish();
        let urls: Vec<&str> = page.urls.iter().map(|u| u.entry.url.as_str()).collect();
        assert_eq!(urls, ["http://h/0", "http://h/1"]);
        assert_eq!(page.matched, 18);

        let query = UrlQuery {
            filter: Some("ABC".into()),
            ignore_case: true,
            limit: 10,
            ..UrlQuery::default()
        };
        let mut p = Pager::new(&query);
        assert!(p.must_read(1), "a filter reads every URL");
        p.push("k", &entry("http://h/xabcx"), false);
        p.push("k", &entry("http://h/nope"), true);
        let mut put = entry("http://h/?q");
        put.client = crate::ClientInfo::new("http://h?ABC", Vec::new()).ok();
        p.push("k", &put, false);
        let page = p.finish();
        assert_eq!(page.matched, 2, "the string as put is what matches");
        let exact = UrlQuery {
            filter: Some("ABC".into()),
            limit: 10,
            ..UrlQuery::default()
        };
        let mut p = Pager::new(&exact);
        p.push("k", &entry("http://h/xabcx"), false);
        assert_eq!(p.finish().matched, 0, "case counts");
    }
}
