//! robots.txt per origin: fetched once, cached with an expiry, shared by all workers. What a
//! response means, the rules' matching and the verdict's record are the `robots` crate's;
//! this cache fetches, keeps, persists and shares.
//!
//! With the durable state on, every fetched verdict is handed to a persist hook as a small
//! record (the body and the expiry in wall-clock time), and a resumed crawl [restores]
//! the records that have not expired: a restart neither re-fetches valid rules nor retries an
//! unreachable server before its time.
//!
//! With a frontier shared by several processes ([`RobotsCache::with_shared`]), the same
//! records go through it ([`frontier::RobotsShare`]): the first process to need an origin's rules claims and
//! fetches them and stores the record; the others wait for it and use it, so N processes fetch
//! a robots.txt once (and offer its sitemaps once).
//!
//! [restores]: RobotsCache::restore

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use tokio::sync::OnceCell;
use tokio::time::Instant;
use url::Url;

use robots::{Answer, Kind, Rules, MAX_ROBOTS_BYTES, MAX_SITEMAP_LINES, RULES_TTL};

use crate::fetch::{Fetcher, Keep};

/// Where fetched rules are persisted: `(origin, record)`.
pub type PersistHook = Box<dyn Fn(&str, Vec<u8>) + Send + Sync>;

#[derive(Debug)]
struct Entry {
    rules: Rules,
    expires: Instant,
}

/// The verdict for one URL.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Whether the URL may be fetched.
    pub allowed: bool,
    /// The host's `Crawl-delay`, if it has one.
    pub crawl_delay: Option<Duration>,
    /// Whether this call fetched the robots.txt (the host was contacted just now).
    pub fetched: bool,
    /// Why everything is disallowed, when it is because the robots.txt could not be had
    /// (unreachable server, 5xx, a redirect loop); `None` when rules decided.
    pub unreachable: Option<Arc<str>>,
    /// The `Sitemap:` lines of the robots.txt this call fetched (empty when it fetched none).
    pub sitemaps: Vec<String>,
}

/// Per-origin robots.txt cache.
pub struct RobotsCache {
    agent: String,
    /// One cell per origin, so concurrent workers wait for a single fetch.
    entries: DashMap<String, Arc<OnceCell<Entry>>>,
    persist: Option<PersistHook>,
    /// `output.warc`: robots.txt fetches are archived too.
    archive: Option<crate::output::Output>,
    /// Where the crawl's processes share verdicts, when there are several.
    shared: Option<Arc<dyn frontier::RobotsShare>>,
}

impl std::fmt::Debug for RobotsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RobotsCache")
            .field("agent", &self.agent)
            .field("origins", &self.entries.len())
            .finish_non_exhaustive()
    }
}

impl RobotsCache {
    /// Rules are matched for the first word of `user_agent` (`crawler/0.1 (…)` → `crawler`).
    pub fn new(user_agent: &str) -> Self {
        let agent = robots::agent_token(user_agent).to_owned();
        Self {
            agent,
            entries: DashMap::new(),
            persist: None,
            archive: None,
            shared: None,
        }
    }

    /// This cache, sharing verdicts with the other processes of the crawl through `share`
    /// (see the module header).
    pub fn with_shared(mut self, share: Arc<dyn frontier::RobotsShare>) -> Self {
        self.shared = Some(share);
        self
    }

    /// The verdict another process of the crawl stored for `origin`, waiting while one is
    /// fetching it; `None`: this process fetches it (it holds the claim, nothing is shared,
    /// the frontier cannot answer, or the record is unusable).
    async fn shared_verdict(&self, origin: &str) -> Option<Entry> {
        let share = self.shared.as_ref()?;
        // Longer than a robots.txt fetch takes; a claim of a process that died expires sooner.
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            match share.robots_shared(origin).await {
                Ok(frontier::SharedRobots::Record(record)) => {
                    let (kind, expires_ms, body) = robots::decode(&record)?;
                    let left = expires_ms.saturating_sub(crate::clock::now_unix_ms());
                    if left == 0 {
                        return None;
                    }
                    return Some(Entry {
                        rules: Rules::of(&self.agent, kind, body),
                        expires: Instant::now() + Duration::from_millis(left).min(RULES_TTL),
                    });
                }
                Ok(frontier::SharedRobots::Wait) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                _ => return None,
            }
        }
    }

    /// This cache, archiving the robots.txt fetches it makes through `output`.
    pub fn with_archive(mut self, output: crate::output::Output) -> Self {
        self.archive = Some(output);
        self
    }

    /// Hands every fetched verdict to `hook` (to be restored with [`restore`](Self::restore)).
    pub fn with_persist(mut self, hook: PersistHook) -> Self {
        self.persist = Some(hook);
        self
    }

    /// Restores an origin's verdict persisted by an earlier run. Returns `false` (and
    /// changes nothing) when the record has expired or cannot be read.
    pub fn restore(&self, origin: &str, record: &[u8]) -> bool {
        let Some((kind, expires_ms, body)) = robots::decode(record) else {
            return false;
        };
        let left = expires_ms.saturating_sub(crate::clock::now_unix_ms());
        if left == 0 {
            return false;
        }
        let rules = Rules::of(&self.agent, kind, body);
        let left = Duration::from_millis(left).min(RULES_TTL);
        let cell = OnceCell::new_with(Some(Entry {
            rules,
            expires: Instant::now() + left,
        }));
        self.entries.insert(origin.to_owned(), Arc::new(cell));
        true
    }

    /// What is known of a host's robots.txt (`host` as a politeness key, `host[:port]`):
    /// `"unknown"` (not fetched yet), `"fetching"`, `"allow_all"` (none, or a 4xx),
    /// `"rules"`, or `"unreachable"`; with the rules' `Crawl-delay`.
    pub fn state_of(&self, host: &str) -> (&'static str, Option<Duration>) {
        for scheme in ["http", "https"] {
            let origin = format!("{scheme}://{host}");
            let Some(cell) = self.entries.get(&origin).map(|c| Arc::clone(c.value())) else {
                continue;
            };
            return match cell.get() {
                None => ("fetching", None),
                Some(e) => (e.rules.state(), e.rules.crawl_delay()),
            };
        }
        ("unknown", None)
    }

    /// Whether `url` may be fetched, fetching its origin's robots.txt on first use.
    pub async fn check(&self, fetcher: &Fetcher, url: &Url) -> Verdict {
        let origin = robots::origin_of(url);
        let origin = origin.as_ref();
        let mut fetched = false;
        let mut sitemaps = Vec::new();
        loop {
            // Known origins (all but the first fetch of each) take the shard's read lock.
            let known = self.entries.get(origin).map(|c| Arc::clone(c.value()));
            let cell = known.unwrap_or_else(|| {
                Arc::clone(self.entries.entry(origin.to_owned()).or_default().value())
            });
            let entry = cell
                .get_or_init(|| async {
                    if let Some(entry) = self.shared_verdict(origin).await {
                        return entry;
                    }
                    fetched = true;
                    let (kind, body, ttl) = self.fetch_rules(fetcher, origin).await;
                    if kind == Kind::Parsed {
                        sitemaps = sitemaps::robots_sitemaps(&body, MAX_SITEMAP_LINES);
                    }
                    let expires = crate::clock::now_unix_ms()
                        .saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
                    if let Some(persist) = &self.persist {
                        persist(origin, robots::encode(kind, expires, &body));
                    }
                    if let Some(share) = &self.shared {
                        let record = robots::encode(kind, expires, &body);
                        if let Err(e) = share.share_robots(origin, record, ttl).await {
                            tracing::debug!(%origin, error = %e, "robots.txt verdict not shared");
                        }
                    }
                    let rules = Rules::of(&self.agent, kind, &body);
                    Entry {
                        rules,
                        expires: Instant::now() + ttl,
                    }
                })
                .await;
            if entry.expires <= Instant::now() {
                // Stale: drop it (unless another worker already replaced it) and fetch again.
                self.entries.remove_if(origin, |_, c| Arc::ptr_eq(c, &cell));
                continue;
            }
            return Verdict {
                allowed: entry.rules.allowed(url),
                crawl_delay: entry.rules.crawl_delay(),
                fetched,
                unreachable: entry.rules.unreachable().cloned(),
                sitemaps,
            };
        }
    }

    /// Fetches an origin's robots.txt: the verdict's kind, the body (for `Parsed`; the reason
    /// for `DisallowAll`) and how long it holds.
    async fn fetch_rules(&self, fetcher: &Fetcher, origin: &str) -> (Kind, Vec<u8>, Duration) {
        let mut target = format!("{origin}/robots.txt");
        for _ in 0..=robots::MAX_REDIRECTS {
            // Only what is parsed is read: a 100 MB robots.txt costs 500 KiB of transfer and
            // memory.
            let mut got = fetcher
                .fetch_with(&target, Keep::Always, MAX_ROBOTS_BYTES as u64, false)
                .await;
            if let (Some(output), Some(capture)) = (&self.archive, got.capture.take()) {
                output.archive(capture).await;
            }
            if got.truncated {
                tracing::info!(%origin, "robots.txt longer than {MAX_ROBOTS_BYTES} bytes: the rest is ignored");
            }
            let error = got.error_text();
            let body = std::mem::take(&mut got.body);
            match robots::answer(
                &target,
                got.status,
                body,
                got.location.as_deref(),
                error.as_deref(),
            ) {
                Answer::Follow(next) => target = next,
                Answer::Verdict(v) => return verdict(origin, v),
            }
        }
        verdict(origin, robots::too_many_redirects())
    }
}

fn verdict(origin: &str, v: robots::Fetched) -> (Kind, Vec<u8>, Duration) {
    if v.kind == Kind::DisallowAll {
        tracing::debug!(%origin, reason = %String::from_utf8_lossy(&v.body), "host disallowed for now");
    }
    (v.kind, v.body, v.ttl)
}

/// A robots.txt cache that persists every fetched verdict in `store`, with the verdicts of
/// earlier runs that have not expired restored (their count goes to `summary`).
pub fn restored(
    user_agent: &str,
    store: &Arc<store::Store>,
    summary: &mut resume::StateSummary,
) -> Result<RobotsCache, store::StoreError> {
    let sink = Arc::clone(store);
    let robots = RobotsCache::new(user_agent).with_persist(Box::new(move |origin, record| {
        sink.put_robots(origin, record)
    }));
    if store.resumed() {
        for (origin, record) in store.robots()? {
            summary.restored_robots += u64::from(robots.restore(&origin, &record));
        }
    }
    Ok(robots)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(cache: &RobotsCache, origin: &str, path: &str) -> Option<bool> {
        let cell = Arc::clone(cache.entries.get(origin)?.value());
        let entry = cell.get()?;
        let url = Url::parse(&format!("{origin}{path}")).ok()?;
        Some(entry.rules.allowed(&url))
    }

    #[test]
    fn records_round_trip_and_expired_or_hostile_ones_are_ignored() {
        let later = crate::clock::now_unix_ms() + 60_000;
        let cache = RobotsCache::new("crawler/1.0");
        let rules = robots::encode(Kind::Parsed, later, b"User-agent: *\nDisallow: /private/\n");
        assert!(cache.restore("http://a.test", &rules));
        assert_eq!(allowed(&cache, "http://a.test", "/private/x"), Some(false));
        assert_eq!(allowed(&cache, "http://a.test", "/public"), Some(true));
        assert!(cache.restore(
            "http://b.test",
            &robots::encode(Kind::DisallowAll, later, b"")
        ));
        assert_eq!(allowed(&cache, "http://b.test", "/"), Some(false));

        let past = crate::clock::now_unix_ms().saturating_sub(1);
        assert!(!cache.restore("http://c.test", &robots::encode(Kind::AllowAll, past, b"")));
        // A record that does not decode (the robots crate's tests cover which) changes nothing.
        assert!(!cache.restore("http://d.test", &[9, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
        assert!(cache.entries.get("http://c.test").is_none());
        assert!(cache.entries.get("http://d.test").is_none());
    }
}
