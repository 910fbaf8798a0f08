//! robots.txt (RFC 9309) per origin: fetched once, cached with an expiry, shared by all
//! workers. Parsing and matching (groups, longest match, `*` and `$`, `Crawl-delay`) are the
//! `texting_robots` crate's, chosen because it compiles each rule once per host instead of
//! re-parsing the file for every URL.
//!
//! Status handling follows the RFC: 2xx → the rules; 4xx → everything allowed; 5xx or an
//! unreachable server → everything disallowed "for a while" (re-fetched after
//! [`UNREACHABLE_RETRY`]), and the verdict says why (`robots.txt unreachable: Connection
//! refused`, `robots.txt answered 503`), so each URL skipped for it gets a record with that
//! reason instead of vanishing as "disallowed"; redirects are followed up to five hops; a file larger than 500 KiB
//! is cut there; a body that does not parse at all allows everything.
//!
//! With the durable state on, every fetched verdict is handed to a persist hook as a small
//! record (the body and the expiry in wall-clock time), and a resumed crawl [restores]
//! the records that have not expired: a restart neither re-fetches valid rules nor retries an
//! unreachable server before its time.
//!
//! With a frontier shared by several processes ([`RobotsCache::with_shared`]), the same
//! records go through the frontier: the first process to need an origin's rules claims and
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

use crate::fetch::{Fetcher, Keep};

/// How long fetched rules are trusted (the RFC's upper bound).
pub const RULES_TTL: Duration = Duration::from_secs(24 * 3600);
/// How long a 5xx/unreachable robots.txt keeps a host fully disallowed before a new try.
pub const UNREACHABLE_RETRY: Duration = Duration::from_secs(300);
/// Largest robots.txt body considered.
pub const MAX_ROBOTS_BYTES: usize = 500 * 1024;
/// Most `Sitemap:` lines of one robots.txt that are followed.
const MAX_SITEMAP_LINES: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    AllowAll = 0,
    DisallowAll = 1,
    Parsed = 2,
}

/// Record layout: version (1), kind, expiry (Unix ms, little-endian u64), body.
const RECORD_VERSION: u8 = 1;

/// Where fetched rules are persisted: `(origin, record)`.
pub type PersistHook = Box<dyn Fn(&str, Vec<u8>) + Send + Sync>;

#[derive(Debug)]
enum Rules {
    AllowAll,
    /// The robots.txt could not be had: everything disallowed, for this reason.
    Unreachable(Arc<str>),
    Parsed(texting_robots::Robot),
}

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
    /// The crawl's frontier, when it shares verdicts between processes.
    shared: Option<Arc<dyn frontier::Frontier>>,
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
        let agent = user_agent
            .split(|c: char| c == '/' || c.is_whitespace())
            .next()
            .unwrap_or("*")
            .to_owned();
        Self {
            agent,
            entries: DashMap::new(),
            persist: None,
            archive: None,
            shared: None,
        }
    }

    /// This cache, sharing verdicts with the other processes of the crawl through `frontier`
    /// (see the module header).
    pub fn with_shared(mut self, frontier: Arc<dyn frontier::Frontier>) -> Self {
        self.shared = Some(frontier);
        self
    }

    /// The verdict another process of the crawl stored for `origin`, waiting while one is
    /// fetching it; `None`: this process fetches it (it holds the claim, nothing is shared,
    /// the frontier cannot answer, or the record is unusable).
    async fn shared_verdict(&self, origin: &str) -> Option<Entry> {
        let frontier = self.shared.as_ref()?;
        // Longer than a robots.txt fetch takes; a claim of a process that died expires sooner.
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            match frontier.robots_shared(origin).await {
                Ok(frontier::SharedRobots::Record(record)) => {
                    let (kind, expires_ms, body) = decode(&record)?;
                    let left = expires_ms.saturating_sub(crate::output::now_unix_ms());
                    if left == 0 {
                        return None;
                    }
                    return Some(Entry {
                        rules: self.rules(kind, body),
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
        let Some((kind, expires_ms, body)) = decode(record) else {
            return false;
        };
        let left = expires_ms.saturating_sub(crate::output::now_unix_ms());
        if left == 0 {
            return false;
        }
        let rules = self.rules(kind, body);
        let left = Duration::from_millis(left).min(RULES_TTL);
        let cell = OnceCell::new_with(Some(Entry {
            rules,
            expires: Instant::now() + left,
        }));
        self.entries.insert(origin.to_owned(), Arc::new(cell));
        true
    }

    /// The rules a verdict's kind and body stand for (for `DisallowAll`, the body is the
    /// reason; records of earlier versions have none).
    fn rules(&self, kind: Kind, body: &[u8]) -> Rules {
        match kind {
            Kind::AllowAll => Rules::AllowAll,
            Kind::DisallowAll if body.is_empty() => {
                Rules::Unreachable(Arc::from("robots.txt unreachable (an earlier run found)"))
            }
            Kind::DisallowAll => Rules::Unreachable(Arc::from(String::from_utf8_lossy(body))),
            Kind::Parsed => self.parse(body),
        }
    }

    fn parse(&self, body: &[u8]) -> Rules {
        match texting_robots::Robot::new(&self.agent, body) {
            Ok(robot) => Rules::Parsed(robot),
            Err(_) => Rules::AllowAll,
        }
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
                Some(e) => match &e.rules {
                    Rules::AllowAll => ("allow_all", None),
                    Rules::Unreachable(_) => ("unreachable", None),
                    Rules::Parsed(robot) => (
                        "rules",
                        robot
                            .delay
                            .filter(|d| d.is_finite() && *d > 0.0)
                            .map(|d| Duration::from_secs_f32(d.min(86_400.0))),
                    ),
                },
            };
        }
        ("unknown", None)
    }

    /// Whether `url` may be fetched, fetching its origin's robots.txt on first use.
    pub async fn check(&self, fetcher: &Fetcher, url: &Url) -> Verdict {
        let origin = origin_of(url);
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
                        sitemaps = crate::sitemap::robots_sitemaps(&body, MAX_SITEMAP_LINES);
                    }
                    let expires = crate::output::now_unix_ms()
                        .saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
                    if let Some(persist) = &self.persist {
                        persist(origin, encode(kind, expires, &body));
                    }
                    if let Some(frontier) = &self.shared {
                        let record = encode(kind, expires, &body);
                        if let Err(e) = frontier.share_robots(origin, record, ttl).await {
                            tracing::debug!(%origin, error = %e, "robots.txt verdict not shared");
                        }
                    }
                    let rules = self.rules(kind, &body);
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
            return match &entry.rules {
                Rules::AllowAll => Verdict {
                    allowed: true,
                    crawl_delay: None,
                    fetched,
                    unreachable: None,
                    sitemaps,
                },
                Rules::Unreachable(why) => Verdict {
                    allowed: false,
                    crawl_delay: None,
                    fetched,
                    unreachable: Some(Arc::clone(why)),
                    sitemaps,
                },
                Rules::Parsed(robot) => Verdict {
                    allowed: robot.allowed(path_of(url)),
                    crawl_delay: robot
                        .delay
                        .filter(|d| d.is_finite() && *d > 0.0)
                        .map(|d| Duration::from_secs_f32(d.min(86_400.0))),
                    fetched,
                    unreachable: None,
                    sitemaps,
                },
            };
        }
    }

    /// Fetches an origin's robots.txt: the verdict's kind, the body (for `Parsed`; the reason
    /// for `DisallowAll`) and how long it holds.
    async fn fetch_rules(&self, fetcher: &Fetcher, origin: &str) -> (Kind, Vec<u8>, Duration) {
        let mut target = format!("{origin}/robots.txt");
        let mut why = String::from("robots.txt: more than 5 redirects");
        for _ in 0..=5 {
            // Only what is parsed is read: RFC 9309 §2.5 lets a crawler stop at 500 KiB, so a
            // 100 MB robots.txt costs 500 KiB of transfer and memory.
            let mut got = fetcher
                .fetch_with(&target, Keep::Always, MAX_ROBOTS_BYTES as u64, false)
                .await;
            if let (Some(output), Some(capture)) = (&self.archive, got.capture.take()) {
                output.archive(capture).await;
            }
            match got.status {
                Some(200..=299) => {
                    if got.truncated {
                        tracing::info!(%origin, "robots.txt longer than {MAX_ROBOTS_BYTES} bytes: the rest is ignored");
                    }
                    return (Kind::Parsed, got.body, RULES_TTL);
                }
                Some(300..=399) => {
                    let next = got
                        .location
                        .and_then(|l| Url::parse(&target).ok()?.join(&l).ok());
                    match next {
                        Some(u) => target = u.to_string(),
                        None => {
                            why = "robots.txt: a redirect without a usable Location".into();
                            break;
                        }
                    }
                }
                Some(400..=499) => return (Kind::AllowAll, Vec::new(), RULES_TTL),
                Some(status) => {
                    why = format!("robots.txt answered {status}");
                    break;
                }
                None => {
                    why = format!(
                        "robots.txt unreachable: {}",
                        root_cause(got.error.as_deref())
                    );
                    break;
                }
            }
        }
        tracing::debug!(%origin, reason = %why, "host disallowed for now");
        (Kind::DisallowAll, why.into_bytes(), UNREACHABLE_RETRY)
    }
}

/// The innermost cause of a fetch error (`… tcp connect error: Connection refused (os error
/// 111)` → `Connection refused (os error 111)`): what a person needs to read.
fn root_cause(error: Option<&str>) -> &str {
    match error {
        Some(e) => e.rsplit(": ").next().unwrap_or(e),
        None => "no response",
    }
}

fn encode(kind: Kind, expires_unix_ms: u64, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(10 + body.len());
    out.push(RECORD_VERSION);
    out.push(kind as u8);
    out.extend_from_slice(&expires_unix_ms.to_le_bytes());
    out.extend_from_slice(body);
    out
}

fn decode(record: &[u8]) -> Option<(Kind, u64, &[u8])> {
    let (&[version, kind], rest) = record.split_first_chunk::<2>()?;
    if version != RECORD_VERSION {
        return None;
    }
    let kind = match kind {
        0 => Kind::AllowAll,
        1 => Kind::DisallowAll,
        2 => Kind::Parsed,
        _ => return None,
    };
    let (expires, body) = rest.split_first_chunk::<8>()?;
    if body.len() > MAX_ROBOTS_BYTES {
        return None;
    }
    Some((kind, u64::from_le_bytes(*expires), body))
}

/// `url`'s origin as robots.txt is keyed (`scheme://host[:port]`): a slice of the URL's
/// own serialization when it has no user info (the crawl's URLs), which is the origin's
/// ASCII serialization without building it for every fetch.
fn origin_of(url: &Url) -> std::borrow::Cow<'_, str> {
    if url.username().is_empty() && url.password().is_none() && url.has_host() {
        std::borrow::Cow::Borrowed(&url[..url::Position::BeforePath])
    } else {
        std::borrow::Cow::Owned(url.origin().ascii_serialization())
    }
}

/// What the rules match: the path and query, already percent-encoded by the URL parser
/// (the rules' matcher would otherwise parse the whole URL again for every fetch).
fn path_of(url: &Url) -> &str {
    &url[url::Position::BeforePath..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(cache: &RobotsCache, origin: &str, path: &str) -> Option<bool> {
        let cell = Arc::clone(cache.entries.get(origin)?.value());
        let entry = cell.get()?;
        let url = Url::parse(&format!("{origin}{path}")).ok()?;
        Some(match &entry.rules {
            Rules::AllowAll => true,
            Rules::Unreachable(_) => false,
            Rules::Parsed(r) => r.allowed(path_of(&url)),
        })
    }

    #[test]
    fn records_round_trip_and_expired_or_hostile_ones_are_ignored() {
        let later = crate::output::now_unix_ms() + 60_000;
        let cache = RobotsCache::new("crawler/1.0");
        let rules = encode(Kind::Parsed, later, b"User-agent: *\nDisallow: /private/\n");
        assert!(cache.restore("http://a.test", &rules));
        assert_eq!(allowed(&cache, "http://a.test", "/private/x"), Some(false));
        assert_eq!(allowed(&cache, "http://a.test", "/public"), Some(true));
        assert!(cache.restore("http://b.test", &encode(Kind::DisallowAll, later, b"")));
        assert_eq!(allowed(&cache, "http://b.test", "/"), Some(false));

        let past = crate::output::now_unix_ms().saturating_sub(1);
        assert!(!cache.restore("http://c.test", &encode(Kind::AllowAll, past, b"")));
        for hostile in [
            &b""[..],
            &[1],
            &[1, 2, 0, 0],
            &[9, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            &[1, 7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        ] {
            assert!(!cache.restore("http://d.test", hostile), "{hostile:?}");
        }
        assert!(cache.entries.get("http://c.test").is_none());
        assert!(cache.entries.get("http://d.test").is_none());
    }

    /// The slices the check uses give what the whole URL gives: the origin's serialization,
    /// and the rules' verdict on the whole URL.
    #[test]
    fn the_origin_and_path_slices_agree_with_the_whole_url() {
        let robot = texting_robots::Robot::new(
            "crawler",
            "User-agent: *\nDisallow: /a/*.php$\nDisallow: /%7Euser/\nAllow: /a/ok\n\
             Disallow: /a\nDisallow: /*?s=\nDisallow: /\u{e9}t\u{e9}\n"
                .as_bytes(),
        )
        .unwrap();
        for raw in [
            "http://a.test/",
            "http://a.test:8080/a/x.php",
            "http://a.test/a/x.php?q=1",
            "https://a.test/a/ok/more",
            "http://a.test/~user/x",
            "http://a.test/%7Euser/x",
            "http://a.test/b?s=1",
            "http://a.test/\u{e9}t\u{e9}/x",
            "http://a.test/%C3%A9t%C3%A9",
            "http://xn--caf-dma.test/a",
            "http://caf\u{e9}.test/a",
            "http://[::1]:81/a",
            "http://127.0.0.1/robots.txt",
            "http://a.test/a b",
            "http://user:pw@a.test:80/a",
            "https://a.test:443/x#frag",
        ] {
            let url = Url::parse(raw).unwrap();
            assert_eq!(origin_of(&url), url.origin().ascii_serialization(), "{raw}");
            assert_eq!(
                robot.allowed(path_of(&url)),
                robot.allowed(url.as_str()),
                "{raw}"
            );
        }
    }
}
