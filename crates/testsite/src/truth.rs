//! Ground truth: exactly the URLs a correct crawler with default settings fetches, with the
//! outcome each must get — computed from the model by a breadth-first walk, not by HTTP.
//!
//! "Correct" means: starts at host 0's root; canonicalises links; never fetches a URL twice;
//! honours robots.txt (404 and garbage allow everything, 500 forbids the whole host, whose
//! URLs the crawler still reaches are listed as `robots-unavailable`: recorded with the
//! reason, not fetched);
//! follows redirects through the frontier (each hop is one fetch, a loop ends at the first
//! repeat); retries transient 5xx/429 until they succeed; parses only what is served as HTML;
//! honours `rel=nofollow` and `<meta name=robots content=nofollow>`; stops at spider traps
//! (their URLs are reported as prefixes, since how deep a crawler goes is its own setting).
//! Orphans are never reached. robots.txt fetches themselves are not listed.

use std::collections::{BTreeMap, HashSet, VecDeque};

use crate::model::{Expected, HostId, Html, Resource, RobotsKind, Site, Target, HOSTILE_SITEMAPS};

/// The walk's node: numeric pages as numbers (so 10^8 of them fit), the rest as targets.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Node {
    Page(u64),
    Other(Target),
    /// A URL on a host whose robots.txt answers 5xx: recorded, not fetched, not expanded.
    Blocked(Target),
    /// A host just contacted (its robots.txt fetched): its sitemaps are offered.
    Contact(HostId),
}

/// What the crawler whose ground truth is wanted does beyond the defaults the walk assumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crawler {
    /// Reads sitemaps (`crawl.sitemaps`): each contacted host's `/sitemap.xml` and the files
    /// its robots.txt names.
    pub sitemaps: bool,
}

impl Default for Crawler {
    fn default() -> Self {
        Self { sitemaps: true }
    }
}

/// The complete ground truth of a (small enough) site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroundTruth {
    /// Every URL a correct crawler fetches, in canonical form, with its expected outcome.
    pub urls: BTreeMap<String, Expected>,
    /// How many URLs end with each outcome (`"200"`, `"301"`, `"hostile:drip"`, …).
    pub counts: BTreeMap<String, u64>,
    /// URL prefixes of spider traps (fetches there are bounded by crawler settings).
    pub trap_prefixes: Vec<String>,
}

impl Site {
    /// Walks the site from its seed and calls `record(url, expected)` once per URL a correct
    /// crawler fetches, in breadth-first order. Memory: one bit per numeric page plus the
    /// queue, so it works for 10^8 pages.
    pub fn walk_ground_truth(&self, record: impl FnMut(&str, Expected)) {
        self.walk_ground_truth_for(Crawler::default(), record);
    }

    /// [`walk_ground_truth`](Self::walk_ground_truth) for a crawler with `crawler`'s settings.
    pub fn walk_ground_truth_for(&self, crawler: Crawler, mut record: impl FnMut(&str, Expected)) {
        let pages = self.config().pages;
        let mut seen_pages = vec![0u64; pages.div_ceil(64) as usize];
        let mut seen_other: HashSet<Target> = HashSet::new();
        let mut contacted: HashSet<HostId> = HashSet::new();
        let mut queue: VecDeque<Node> = VecDeque::new();

        let mut visit = |node: Node, queue: &mut VecDeque<Node>| {
            // Any URL the crawler admits gets its host contacted, allowed by robots.txt or not.
            let host = match &node {
                Node::Page(p) => self.page_host(*p),
                Node::Other(t) | Node::Blocked(t) => t.host,
                Node::Contact(h) => *h,
            };
            if crawler.sitemaps && contacted.insert(host) {
                queue.push_back(Node::Contact(host));
            }
            visit_node(&mut seen_pages, &mut seen_other, self, node, queue);
        };
        fn visit_node(
            seen_pages: &mut [u64],
            seen_other: &mut HashSet<Target>,
            site: &Site,
            node: Node,
            queue: &mut VecDeque<Node>,
        ) {
            match node {
                Node::Page(p) => visit_page(seen_pages, site, p, queue),
                Node::Other(t) => {
                    if let Some(p) = site.page_at(t.host, &t.path) {
                        return visit_page(seen_pages, site, p, queue);
                    }
                    let blocked = site.robots_kind(t.host) == RobotsKind::ServerError;
                    if (blocked || !site.is_disallowed(t.host, &t.path))
                        && seen_other.insert(t.clone())
                    {
                        queue.push_back(if blocked {
                            Node::Blocked(t)
                        } else {
                            Node::Other(t)
                        });
                    }
                }
                Node::Blocked(_) | Node::Contact(_) => unreachable!("only queued by visit"),
            }
        }
        /// A numeric page: queued once, unless robots.txt disallows it by its rules; on a host
        /// whose robots.txt fails, queued to be recorded as such.
        fn visit_page(seen: &mut [u64], site: &Site, p: u64, queue: &mut VecDeque<Node>) {
            let (word, bit) = ((p / 64) as usize, 1u64 << (p % 64));
            if seen[word] & bit != 0 {
                return;
            }
            let host = site.page_host(p);
            if site.robots_kind(host) == RobotsKind::ServerError {
                seen[word] |= bit;
                queue.push_back(Node::Blocked(site.page_target(p)));
            } else if !site.page_disallowed(p) {
                seen[word] |= bit;
                queue.push_back(Node::Page(p));
            }
        }

        visit(Node::Page(0), &mut queue);
        while let Some(node) = queue.pop_front() {
            match node {
                Node::Page(p) => {
                    record(&self.url(&self.page_target(p)), Expected::Status(200));
                    for c in self.page_link_ids(p) {
                        visit(Node::Page(c), &mut queue);
                    }
                    if p < u64::from(self.config().hosts) {
                        // Root pages also link to their host's specials.
                        let links = self.page_links(p);
                        let numeric = self.page_link_ids(p).count();
                        for link in links.into_iter().skip(numeric) {
                            visit(Node::Other(link.target), &mut queue);
                        }
                    }
                }
                Node::Blocked(t) => record(&self.url(&t), Expected::RobotsUnavailable),
                // A host whose robots.txt fails is not crawled: its sitemaps are not offered.
                Node::Contact(host) if self.robots_kind(host) == RobotsKind::ServerError => {}
                Node::Contact(host) => {
                    let files = std::iter::once("/sitemap.xml".to_owned())
                        .chain(self.robots_sitemaps(host));
                    for path in files {
                        visit(Node::Other(Target { host, path }), &mut queue);
                    }
                }
                Node::Other(t) => {
                    let (expected, next) = self.outcome(t.host, &t.path);
                    if let Some(expected) = expected {
                        record(&self.url(&t), expected);
                    }
                    for n in next {
                        visit(Node::Other(n), &mut queue);
                    }
                }
            }
        }
    }

    /// What a fetch of a non-numeric URL records, and which targets it leads to.
    fn outcome(&self, h: HostId, path: &str) -> (Option<Expected>, Vec<Target>) {
        fn followed(html: &Html) -> Vec<Target> {
            if html.meta_nofollow || html.content_type_lie.is_some() {
                return vec![];
            }
            html.links
                .iter()
                .filter(|l| !l.nofollow)
                .map(|l| l.target.clone())
                .collect()
        }
        match self.resolve(h, path) {
            Resource::Html(html) => (Some(Expected::Status(200)), followed(&html)),
            // A 304 is not a redirect, whatever its Location says.
            Resource::Redirect { status: 304, .. } => (Some(Expected::Status(304)), vec![]),
            Resource::Redirect {
                status, location, ..
            } => (Some(Expected::Status(status)), vec![location]),
            Resource::Status(s) => (Some(Expected::Status(s)), vec![]),
            Resource::Transient { then, .. } => match *then {
                Resource::Html(html) => (Some(Expected::Status(200)), followed(&html)),
                _ => (Some(Expected::Status(200)), vec![]),
            },
            Resource::Binary { .. } => (Some(Expected::Status(200)), vec![]),
            Resource::Robots(_) => (None, vec![]),
            Resource::Hostile(kind) => (Some(Expected::Hostile(kind)), vec![]),
            Resource::Trap(_) => (None, vec![]),
            // A sitemap lists URLs of its own host only; host 0's hostile files are not
            // followed by the truth (how much of them a crawler reads is its limits').
            Resource::Sitemap { entries, .. } => (
                Some(Expected::Status(200)),
                entries
                    .into_iter()
                    .map(|e| e.target)
                    .filter(|t| t.host == h && !t.path.starts_with(HOSTILE_SITEMAPS))
                    .collect(),
            ),
            Resource::NotFound => (Some(Expected::Status(404)), vec![]),
        }
    }

    /// The whole ground truth in memory (for tests and small sites).
    pub fn ground_truth(&self) -> GroundTruth {
        self.ground_truth_for(Crawler::default())
    }

    /// [`ground_truth`](Self::ground_truth) for a crawler with `crawler`'s settings.
    pub fn ground_truth_for(&self, crawler: Crawler) -> GroundTruth {
        let mut urls = BTreeMap::new();
        let mut counts = BTreeMap::new();
        self.walk_ground_truth_for(crawler, |url, expected| {
            let previous = urls.insert(url.to_owned(), expected);
            assert!(previous.is_none(), "ground truth visited {url} twice");
            *counts.entry(expected.to_string()).or_insert(0) += 1;
        });
        GroundTruth {
            urls,
            counts,
            trap_prefixes: self.trap_prefixes(),
        }
    }
}

/// One `pages.jsonl` record as [`GroundTruth::check`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The URL recorded.
    pub url: String,
    /// Its HTTP status (`None`: no response).
    pub status: Option<u16>,
    /// Its error, if any.
    pub error: Option<String>,
}

impl GroundTruth {
    /// Checks a crawl's records against the truth: each URL recorded once, none missing,
    /// none extra, every status as expected, and every robots-unavailable URL recorded
    /// without a status and with the robots.txt reason. Hostile URLs need only a record
    /// (their tests check the rest). Says everything that is wrong at once.
    pub fn check(&self, records: impl IntoIterator<Item = Recorded>) -> Result<(), String> {
        let mut seen: BTreeMap<String, Recorded> = BTreeMap::new();
        let mut twice = Vec::new();
        for r in records {
            if let Some(first) = seen.insert(r.url.clone(), r) {
                twice.push(first.url);
            }
        }
        let missing: Vec<&String> = self
            .urls
            .keys()
            .filter(|u| !seen.contains_key(*u))
            .collect();
        // Under a trap prefix a crawl's URLs are its own settings' business (and, for the
        // leaves of changing pages, its timing's): not extra.
        let extra: Vec<&String> = seen
            .keys()
            .filter(|u| !self.urls.contains_key(*u))
            .filter(|u| !self.trap_prefixes.iter().any(|p| u.starts_with(p.as_str())))
            .collect();
        let mut wrong = Vec::new();
        for (url, expected) in &self.urls {
            let Some(r) = seen.get(url) else { continue };
            let ok = match expected {
                Expected::Status(s) => r.status == Some(*s),
                Expected::RobotsUnavailable => {
                    r.status.is_none()
                        && r.error
                            .as_deref()
                            .is_some_and(|e| e.starts_with("robots.txt"))
                }
                Expected::Hostile(_) => true,
            };
            if !ok {
                wrong.push(format!(
                    "{url}: expected {expected}, got {:?} {:?}",
                    r.status, r.error
                ));
            }
        }
        if twice.is_empty() && missing.is_empty() && extra.is_empty() && wrong.is_empty() {
            return Ok(());
        }
        Err(format!(
            "recorded twice {twice:?}\nmissing {missing:?}\nextra {extra:?}\nwrong {wrong:?}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Hostile, SiteConfig};

    /// A site small enough to check by hand: 3 hosts, pages 0..6, fanout 2, no extras, chains
    /// of 2. Page p is on host p % 3; the tree is 0 → 1, 2; 1 → 3, 4; 2 → 5.
    fn tiny() -> Site {
        Site::new(
            SiteConfig {
                pages: 6,
                fanout: 2,
                extra_links: 0,
                hosts: 3,
                depth: 2,
                orphans: 1,
                ..SiteConfig::default()
            },
            8080,
        )
        .unwrap()
    }

    #[test]
    fn tiny_site_truth_by_hand() {
        let truth = tiny().ground_truth();
        let urls: Vec<(&str, String)> = truth
            .urls
            .iter()
            .map(|(u, e)| (u.as_str(), e.to_string()))
            .collect();
        let get = |u: &str| urls.iter().find(|(x, _)| *x == u).map(|(_, e)| e.as_str());
        // Numeric pages: 0 (h0 root), 1 (h1 root), 3 (h0), 4 (h1). Host 2 (robots 500)
        // is fully disallowed: pages 2 and 5 are never fetched; page 2 (linked from page 0)
        // is reached and recorded with the reason, page 5 (linked only from 2) is not.
        assert_eq!(get("http://h0.test:8080/"), Some("200"));
        assert_eq!(get("http://h1.test:8080/"), Some("200"));
        assert_eq!(get("http://h0.test:8080/~u3/p3.html"), Some("200"));
        assert_eq!(get("http://h1.test:8080/s4/d4/p4.html"), Some("200"));
        assert_eq!(get("http://h2.test:8080/"), Some("robots-unavailable"));
        assert_eq!(
            get("http://h2.test:8080/s5/d5/p5.html"),
            None,
            "only page 2, never fetched, links it"
        );
        // Specials of host 0.
        assert_eq!(get("http://h0.test:8080/redirect/301"), Some("301"));
        assert_eq!(get("http://h0.test:8080/redirect/loop-a"), Some("301"));
        assert_eq!(get("http://h0.test:8080/redirect/loop-b"), Some("301"));
        assert_eq!(get("http://h0.test:8080/redirect/chain-end"), Some("200"));
        assert_eq!(get("http://h0.test:8080/redirect/to-private"), Some("301"));
        assert_eq!(
            get("http://h0.test:8080/private/secret.html"),
            None,
            "robots"
        );
        assert_eq!(
            get("http://h1.test:8080/private/secret.html"),
            Some("200"),
            "robots 404"
        );
        assert_eq!(get("http://h0.test:8080/missing"), Some("404"));
        assert_eq!(get("http://h0.test:8080/gone"), Some("410"));
        assert_eq!(
            get("http://h0.test:8080/flaky"),
            Some("200"),
            "after a retry"
        );
        assert_eq!(get("http://h0.test:8080/files/report.pdf"), None, "/*.pdf$");
        assert_eq!(
            get("http://h0.test:8080/files/report.pdf?download=1"),
            Some("200")
        );
        assert_eq!(get("http://h1.test:8080/files/report.pdf"), Some("200"));
        assert_eq!(get("http://h0.test:8080/lie/html-as-image"), Some("200"));
        assert_eq!(
            get("http://h0.test:8080/lie/unreachable"),
            None,
            "not parsed"
        );
        assert_eq!(get("http://h0.test:8080/enc/caf%C3%A9"), Some("200"));
        assert_eq!(get("http://h0.test:8080/nofollow/shown"), Some("200"));
        assert_eq!(get("http://h0.test:8080/nofollow/hidden"), None);
        assert_eq!(get("http://h0.test:8080/meta-nofollow/hidden"), None);
        assert_eq!(get("http://h0.test:8080/chain/1"), Some("200"));
        assert_eq!(
            get("http://h0.test:8080/chain/2"),
            None,
            "depth 2: chain/0, chain/1"
        );
        assert_eq!(get("http://h0.test:8080/orphan/0"), None);
        // Cross-host redirect from host 2 is never fetched (host 2 disallowed), but host 1's
        // cross-host redirect leads to host 2, which is disallowed; host 0's leads to host 1.
        assert_eq!(get("http://h0.test:8080/redirect/cross-host"), Some("301"));
        // Counts add up.
        let total: u64 = truth.counts.values().sum();
        assert_eq!(total as usize, truth.urls.len());
        assert_eq!(truth.counts["410"], 2, "hosts 0 and 1");
        assert!(truth.trap_prefixes.is_empty());
    }

    #[test]
    fn hostile_modes_join_the_truth_and_traps_are_prefixes() {
        let site = Site::new(
            SiteConfig {
                pages: 50,
                hosts: 2,
                hostile: Hostile::all(),
                ..SiteConfig::default()
            },
            8080,
        )
        .unwrap();
        let truth = site.ground_truth();
        assert_eq!(truth.counts["hostile:drip"], 1);
        assert_eq!(
            truth.urls.get("http://h0.test:8080/hostile/nested-target"),
            Some(&Expected::Status(200))
        );
        // The trap's path and calendar, the redirect spiral's steps on hosts 0 and 1, and the
        // hostile sitemaps of hosts 0 and 1.
        assert_eq!(truth.trap_prefixes.len(), 6);
        assert!(!truth.urls.keys().any(|u| u.contains("/hostile/trap/")));
        // The loop is two redirects; the chain's last hop leaves the site.
        for url in [
            "http://h0.test:8080/hostile/redirect-loop",
            "http://h1.test:8080/hostile/redirect-loop",
            "http://h0.test:8080/hostile/redirect-private",
        ] {
            assert_eq!(truth.urls.get(url), Some(&Expected::Status(302)), "{url}");
        }
        // Every one of the 10,000 hosts' roots, each a 404.
        let elsewhere = truth
            .urls
            .iter()
            .filter(|(u, _)| {
                u.starts_with("http://h")
                    && !u.starts_with("http://h0.")
                    && !u.starts_with("http://h1.")
            })
            .collect::<Vec<_>>();
        // Each of their roots and /sitemap.xml, all 404.
        assert_eq!(elsewhere.len(), 2 * crate::MANY_HOSTS as usize);
        assert!(elsewhere.iter().all(|(_, e)| **e == Expected::Status(404)));
    }

    #[test]
    fn sitemaps_follow_the_crawlers_setting() {
        let site = Site::new(
            SiteConfig {
                pages: 50,
                hosts: 3,
                ..SiteConfig::default()
            },
            8080,
        )
        .unwrap();
        let with = site.ground_truth();
        let without = site.ground_truth_for(Crawler { sitemaps: false });
        let only_with: Vec<&String> = with
            .urls
            .keys()
            .filter(|u| !without.urls.contains_key(*u))
            .collect();
        // Host 0 (rules: its robots.txt names listed.xml) and host 1 (no robots.txt): the
        // index, its two files, the pages only they list; host 2's robots.txt fails, so its
        // sitemaps are not read.
        let h0 = |p: &str| format!("http://h0.test:8080{p}");
        for p in [
            "/sitemap.xml",
            "/sitemaps/pages.xml",
            "/sitemaps/more.xml.gz",
            "/sitemaps/listed.xml",
            "/from-sitemap/0.html",
            "/from-sitemap/1.html",
            "/from-sitemap/2.html",
        ] {
            assert_eq!(with.urls.get(&h0(p)), Some(&Expected::Status(200)), "{p}");
        }
        assert!(!with
            .urls
            .contains_key("http://h1.test:8080/sitemaps/listed.xml"));
        assert!(!with.urls.contains_key("http://h2.test:8080/sitemap.xml"));
        assert_eq!(only_with.len(), 7 + 5, "{only_with:?}");
        assert!(without.urls.keys().all(|u| with.urls.contains_key(u)));
    }

    #[test]
    fn walk_is_deterministic() {
        assert_eq!(tiny().ground_truth(), tiny().ground_truth());
    }
}
