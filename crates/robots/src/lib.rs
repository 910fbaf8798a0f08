//! robots.txt (RFC 9309) without the fetching: what a response means, the rules for one
//! agent, and a compact record of a verdict that a crawl persists or shares. Whoever fetches
//! (the engine's per-origin cache) asks [`answer`] what each response means and keeps the
//! [`Rules`]; nothing here knows of a crawl.
//!
//! Parsing and matching (groups, longest match, `*` and `$`, `Crawl-delay`) are the
//! `texting_robots` crate's, chosen because it compiles each rule once per host instead of
//! re-parsing the file for every URL.
//!
//! Status handling follows the RFC: 2xx → the rules; 4xx → everything allowed; 5xx or an
//! unreachable server → everything disallowed "for a while" ([`UNREACHABLE_RETRY`]), with the
//! reason (`robots.txt unreachable: Connection refused`, `robots.txt answered 503`) so each URL
//! skipped for it can say why; redirects are followed up to [`MAX_REDIRECTS`] hops; a file
//! larger than [`MAX_ROBOTS_BYTES`] is cut there; a body that does not parse allows everything.

#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use url::Url;

/// How long fetched rules (or a 4xx "allow all") are trusted.
pub const RULES_TTL: Duration = Duration::from_secs(24 * 3600);
/// How long a 5xx/unreachable robots.txt keeps a host fully disallowed before a new try.
pub const UNREACHABLE_RETRY: Duration = Duration::from_secs(300);
/// Largest robots.txt body considered (RFC 9309 §2.5 lets a crawler stop at 500 KiB).
pub const MAX_ROBOTS_BYTES: usize = 500 * 1024;
/// Redirects followed to reach a robots.txt (RFC 9309 §2.3.1.2: at least five).
pub const MAX_REDIRECTS: usize = 5;
/// Most `Sitemap:` lines of one robots.txt that are followed.
pub const MAX_SITEMAP_LINES: usize = 100;
/// The longest `Crawl-delay` taken (a day).
const MAX_CRAWL_DELAY_SECS: f32 = 86_400.0;

/// What a verdict rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// No robots.txt (a 4xx): everything allowed.
    AllowAll = 0,
    /// The robots.txt could not be had: everything disallowed for a while.
    DisallowAll = 1,
    /// Rules were fetched.
    Parsed = 2,
}

/// The agent token rules are matched for: the first word of the `User-Agent`
/// (`crawler/0.1 (+https://…)` → `crawler`).
pub fn agent_token(user_agent: &str) -> &str {
    user_agent
        .split(|c: char| c == '/' || c.is_whitespace())
        .next()
        .filter(|t| !t.is_empty())
        .unwrap_or("*")
}

/// An origin's rules for one agent.
#[derive(Debug)]
pub enum Rules {
    /// Everything allowed (no robots.txt, or one that does not parse).
    AllowAll,
    /// The robots.txt could not be had: everything disallowed, for this reason.
    Unreachable(Arc<str>),
    /// The rules of a fetched robots.txt.
    Parsed(texting_robots::Robot),
}

impl Rules {
    /// The rules a verdict's kind and body stand for, for `agent` (see [`agent_token`]). For
    /// [`Kind::DisallowAll`] the body is the reason (empty in records of earlier versions).
    pub fn of(agent: &str, kind: Kind, body: &[u8]) -> Self {
        match kind {
            Kind::AllowAll => Rules::AllowAll,
            Kind::DisallowAll if body.is_empty() => {
                Rules::Unreachable(Arc::from("robots.txt unreachable (an earlier run found)"))
            }
            Kind::DisallowAll => Rules::Unreachable(Arc::from(String::from_utf8_lossy(body))),
            Kind::Parsed => match texting_robots::Robot::new(agent, body) {
                Ok(robot) => Rules::Parsed(robot),
                Err(_) => Rules::AllowAll,
            },
        }
    }

    /// Whether `url` (of this origin) may be fetched.
    pub fn allowed(&self, url: &Url) -> bool {
        match self {
            Rules::AllowAll => true,
            Rules::Unreachable(_) => false,
            Rules::Parsed(robot) => robot.allowed(path_of(url)),
        }
    }

    /// The rules' `Crawl-delay` (positive, at most a day).
    pub fn crawl_delay(&self) -> Option<Duration> {
        match self {
            Rules::Parsed(robot) => robot
                .delay
                .filter(|d| d.is_finite() && *d > 0.0)
                .map(|d| Duration::from_secs_f32(d.min(MAX_CRAWL_DELAY_SECS))),
            _ => None,
        }
    }

    /// Why everything is disallowed, when the robots.txt could not be had.
    pub fn unreachable(&self) -> Option<&Arc<str>> {
        match self {
            Rules::Unreachable(why) => Some(why),
            _ => None,
        }
    }

    /// `"allow_all"`, `"unreachable"` or `"rules"`.
    pub fn state(&self) -> &'static str {
        match self {
            Rules::AllowAll => "allow_all",
            Rules::Unreachable(_) => "unreachable",
            Rules::Parsed(_) => "rules",
        }
    }
}

/// A verdict as fetched: its kind, the body to keep (the rules for `Parsed`, the reason for
/// `DisallowAll`) and how long it holds.
#[derive(Debug, PartialEq, Eq)]
pub struct Fetched {
    pub kind: Kind,
    pub body: Vec<u8>,
    pub ttl: Duration,
}

/// What one response to a robots.txt request means.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// A verdict.
    Verdict(Fetched),
    /// A redirect: fetch this URL next (at most [`MAX_REDIRECTS`] times in all).
    Follow(String),
}

/// What a response to `target` means: its status (`None`: no response, with `error`), body
/// and `Location`.
pub fn answer(
    target: &str,
    status: Option<u16>,
    body: Vec<u8>,
    location: Option<&str>,
    error: Option<&str>,
) -> Answer {
    match status {
        Some(200..=299) => Answer::Verdict(Fetched {
            kind: Kind::Parsed,
            body,
            ttl: RULES_TTL,
        }),
        Some(300..=399) => match location.and_then(|l| Url::parse(target).ok()?.join(l).ok()) {
            Some(next) => Answer::Follow(next.into()),
            None => Answer::Verdict(unreachable(
                "robots.txt: a redirect without a usable Location".into(),
            )),
        },
        Some(400..=499) => Answer::Verdict(Fetched {
            kind: Kind::AllowAll,
            body: Vec::new(),
            ttl: RULES_TTL,
        }),
        Some(status) => Answer::Verdict(unreachable(format!("robots.txt answered {status}"))),
        None => Answer::Verdict(unreachable(format!(
            "robots.txt unreachable: {}",
            root_cause(error.unwrap_or("no response"))
        ))),
    }
}

/// The verdict when more than [`MAX_REDIRECTS`] redirects were followed.
pub fn too_many_redirects() -> Fetched {
    unreachable(format!("robots.txt: more than {MAX_REDIRECTS} redirects"))
}

fn unreachable(why: String) -> Fetched {
    Fetched {
        kind: Kind::DisallowAll,
        body: why.into_bytes(),
        ttl: UNREACHABLE_RETRY,
    }
}

/// The innermost cause of a fetch error (`… tcp connect error: Connection refused (os error
/// 111)` → `Connection refused (os error 111)`): what a person needs to read.
fn root_cause(error: &str) -> &str {
    error.rsplit(": ").next().unwrap_or(error)
}

/// Record layout: version (1), kind, expiry (Unix ms, little-endian u64), body.
const RECORD_VERSION: u8 = 1;

/// A verdict as a record to persist or share: its kind, when it expires (Unix ms) and its
/// body.
pub fn encode(kind: Kind, expires_unix_ms: u64, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(10 + body.len());
    out.push(RECORD_VERSION);
    out.push(kind as u8);
    out.extend_from_slice(&expires_unix_ms.to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// A record [`encode`] wrote; `None` for one of another version, a body over
/// [`MAX_ROBOTS_BYTES`], or bytes that are not a record.
pub fn decode(record: &[u8]) -> Option<(Kind, u64, &[u8])> {
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
pub fn origin_of(url: &Url) -> Cow<'_, str> {
    if url.username().is_empty() && url.password().is_none() && url.has_host() {
        Cow::Borrowed(&url[..url::Position::BeforePath])
    } else {
        Cow::Owned(url.origin().ascii_serialization())
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

    #[test]
    fn records_round_trip_and_hostile_ones_are_refused() {
        let body = b"User-agent: *\nDisallow: /private/\n";
        let record = encode(Kind::Parsed, 42, body);
        assert_eq!(decode(&record), Some((Kind::Parsed, 42, &body[..])));
        let rules = Rules::of("crawler", Kind::Parsed, body);
        assert!(!rules.allowed(&Url::parse("http://a.test/private/x").unwrap()));
        assert!(rules.allowed(&Url::parse("http://a.test/public").unwrap()));
        for hostile in [
            &b""[..],
            &[1],
            &[1, 2, 0, 0],
            &[9, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            &[1, 7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        ] {
            assert_eq!(decode(hostile), None, "{hostile:?}");
        }
        let mut big = encode(Kind::Parsed, 1, &[]);
        big.resize(big.len() + MAX_ROBOTS_BYTES + 1, b'a');
        assert_eq!(decode(&big), None);
    }

    #[test]
    fn responses_mean_what_rfc_9309_says() {
        let t = "http://a.test/robots.txt";
        let verdict = |kind, body: &[u8], ttl| {
            Answer::Verdict(Fetched {
                kind,
                body: body.to_vec(),
                ttl,
            })
        };
        assert_eq!(
            answer(t, Some(200), b"x".to_vec(), None, None),
            verdict(Kind::Parsed, b"x", RULES_TTL)
        );
        assert_eq!(
            answer(t, Some(404), b"gone".to_vec(), None, None),
            verdict(Kind::AllowAll, b"", RULES_TTL)
        );
        assert_eq!(
            answer(t, Some(301), Vec::new(), Some("/r.txt"), None),
            Answer::Follow("http://a.test/r.txt".into())
        );
        assert_eq!(
            answer(t, Some(503), Vec::new(), None, None),
            verdict(
                Kind::DisallowAll,
                b"robots.txt answered 503",
                UNREACHABLE_RETRY
            )
        );
        assert_eq!(
            answer(
                t,
                None,
                Vec::new(),
                None,
                Some(
                    "client error (Connect): tcp connect error: Connection refused (os error 111)"
                ),
            ),
            verdict(
                Kind::DisallowAll,
                b"robots.txt unreachable: Connection refused (os error 111)",
                UNREACHABLE_RETRY
            )
        );
        assert_eq!(
            answer(t, Some(302), Vec::new(), None, None),
            verdict(
                Kind::DisallowAll,
                b"robots.txt: a redirect without a usable Location",
                UNREACHABLE_RETRY
            )
        );
        let rules = Rules::of("crawler", Kind::DisallowAll, b"robots.txt answered 500");
        assert_eq!(rules.state(), "unreachable");
        assert!(!rules.allowed(&Url::parse("http://a.test/").unwrap()));
        assert_eq!(agent_token("crawler/0.1 (+https://x)"), "crawler");
        assert_eq!(agent_token(""), "*");
    }

    #[test]
    fn crawl_delay_is_positive_and_at_most_a_day() {
        let delay = |text: &str| Rules::of("crawler", Kind::Parsed, text.as_bytes()).crawl_delay();
        assert_eq!(
            delay("User-agent: *\nCrawl-delay: 2\n"),
            Some(Duration::from_secs(2))
        );
        assert_eq!(delay("User-agent: *\nCrawl-delay: -1\n"), None);
        assert_eq!(
            delay("User-agent: *\nCrawl-delay: 1e12\n"),
            Some(Duration::from_secs(86_400))
        );
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
