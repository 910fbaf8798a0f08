//! robots.txt (RFC 9309) per origin: fetched once, cached with an expiry, shared by all
//! workers. Parsing and matching (groups, longest match, `*` and `$`, `Crawl-delay`) are the
//! `texting_robots` crate's, chosen because it compiles each rule once per host instead of
//! re-parsing the file for every URL.
//!
//! Status handling follows the RFC: 2xx → the rules; 4xx → everything allowed; 5xx or an
//! unreachable server → everything disallowed "for a while" (re-fetched after
//! [`UNREACHABLE_RETRY`]); redirects are followed up to five hops; a file larger than 500 KiB
//! is cut there; a body that does not parse at all allows everything.

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

#[derive(Debug)]
enum Rules {
    AllowAll,
    DisallowAll,
    Parsed(texting_robots::Robot),
}

#[derive(Debug)]
struct Entry {
    rules: Rules,
    expires: Instant,
}

/// The verdict for one URL.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    /// Whether the URL may be fetched.
    pub allowed: bool,
    /// The host's `Crawl-delay`, if it has one.
    pub crawl_delay: Option<Duration>,
}

/// Per-origin robots.txt cache.
#[derive(Debug)]
pub struct RobotsCache {
    agent: String,
    /// One cell per origin, so concurrent workers wait for a single fetch.
    entries: DashMap<String, Arc<OnceCell<Entry>>>,
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
        }
    }

    /// Whether `url` may be fetched, fetching its origin's robots.txt on first use.
    pub async fn check(&self, fetcher: &Fetcher, url: &Url) -> Verdict {
        let origin = url.origin().ascii_serialization();
        loop {
            let cell = Arc::clone(self.entries.entry(origin.clone()).or_default().value());
            let entry = cell
                .get_or_init(|| self.fetch_rules(fetcher, &origin))
                .await;
            if entry.expires <= Instant::now() {
                // Stale: drop it (unless another worker already replaced it) and fetch again.
                self.entries
                    .remove_if(&origin, |_, c| Arc::ptr_eq(c, &cell));
                continue;
            }
            return match &entry.rules {
                Rules::AllowAll => Verdict {
                    allowed: true,
                    crawl_delay: None,
                },
                Rules::DisallowAll => Verdict {
                    allowed: false,
                    crawl_delay: None,
                },
                Rules::Parsed(robot) => Verdict {
                    allowed: robot.allowed(url.as_str()),
                    crawl_delay: robot
                        .delay
                        .filter(|d| d.is_finite() && *d > 0.0)
                        .map(|d| Duration::from_secs_f32(d.min(86_400.0))),
                },
            };
        }
    }

    async fn fetch_rules(&self, fetcher: &Fetcher, origin: &str) -> Entry {
        let now = Instant::now();
        let mut target = format!("{origin}/robots.txt");
        for _ in 0..=5 {
            let got = fetcher.fetch(&target, Keep::Always).await;
            match got.status {
                Some(200..=299) => {
                    let mut body = got.body;
                    body.truncate(MAX_ROBOTS_BYTES);
                    let rules = match texting_robots::Robot::new(&self.agent, &body) {
                        Ok(robot) => Rules::Parsed(robot),
                        Err(_) => Rules::AllowAll,
                    };
                    return Entry {
                        rules,
                        expires: now + RULES_TTL,
                    };
                }
                Some(300..=399) => {
                    let next = got
                        .location
                        .and_then(|l| Url::parse(&target).ok()?.join(&l).ok());
                    match next {
                        Some(u) => target = u.to_string(),
                        None => break,
                    }
                }
                Some(400..=499) => {
                    return Entry {
                        rules: Rules::AllowAll,
                        expires: now + RULES_TTL,
                    }
                }
                _ => break,
            }
        }
        tracing::debug!(%origin, "robots.txt unreachable or failing: host disallowed for now");
        Entry {
            rules: Rules::DisallowAll,
            expires: now + UNREACHABLE_RETRY,
        }
    }
}
