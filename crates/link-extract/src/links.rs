//! The link rules: which elements and attributes lead to other pages, seen in document order
//! (by the tokenizer in a crawl, by a DOM walk in the tests' oracle), and their resolution at
//! the end of the page — each target once, each URL once, in the order first found.

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::BuildHasher;

use url::Url;

use super::{resolve, Extracted};

/// The link rules, applied to a page's elements in document order — by the tokenizer in a
/// crawl, by a DOM walk in the tests that check the tokenizer against a tree builder.
#[derive(Debug)]
pub struct Links {
    respect_nofollow: bool,
    /// The first `<base href>`.
    base: Option<String>,
    /// Link targets as written (attribute values decoded), resolved at the end against the
    /// base, which may come after them.
    raw: RawLinks,
    meta_nofollow: bool,
    nofollow_skipped: usize,
    /// What had been found when the body started, to go back to if a frameset replaces it.
    at_body: Option<(usize, bool, bool, usize)>,
}

impl Links {
    /// Rules for one page.
    pub fn new(respect_nofollow: bool) -> Self {
        Self {
            respect_nofollow,
            base: None,
            raw: RawLinks::default(),
            meta_nofollow: false,
            nofollow_skipped: 0,
            at_body: None,
        }
    }

    pub(super) fn body_starts(&mut self) {
        self.at_body = Some((
            self.raw.ends.len(),
            self.base.is_some(),
            self.meta_nofollow,
            self.nofollow_skipped,
        ));
    }

    /// A frameset replaced the body: what was found in it is gone.
    pub(super) fn drop_body(&mut self) {
        if let Some((links, base, meta_nofollow, skipped)) = self.at_body {
            self.raw.truncate(links);
            if !base {
                self.base = None;
            }
            self.meta_nofollow = meta_nofollow;
            self.nofollow_skipped = skipped;
        }
    }

    /// An element named `name` (lower case), with `attr` giving its decoded attribute values.
    pub fn element<'a>(&mut self, name: &str, attr: impl Fn(&str) -> Option<Cow<'a, str>>) {
        let target = match name {
            "a" | "area" => attr("href"),
            "frame" | "iframe" => attr("src"),
            "link" => {
                // Only links that name other pages, not stylesheets or icons.
                let rel = attr("rel").unwrap_or_default().to_ascii_lowercase();
                let wanted = rel
                    .split_ascii_whitespace()
                    .any(|r| matches!(r, "canonical" | "alternate" | "next" | "prev"));
                if !wanted {
                    return;
                }
                attr("href")
            }
            "base" => {
                if self.base.is_none() {
                    self.base = attr("href").map(Cow::into_owned);
                }
                return;
            }
            "meta" => {
                self.meta(&attr);
                return;
            }
            _ => return,
        };
        let Some(target) = target else { return };
        if self.respect_nofollow
            && attr("rel").is_some_and(|rel| {
                rel.split_ascii_whitespace()
                    .any(|r| r.eq_ignore_ascii_case("nofollow"))
            })
        {
            self.nofollow_skipped += 1;
            return;
        }
        self.raw.push(&target);
    }

    fn meta<'a>(&mut self, attr: &impl Fn(&str) -> Option<Cow<'a, str>>) {
        let content = attr("content");
        if self.respect_nofollow
            && attr("name").is_some_and(|n| n.eq_ignore_ascii_case("robots"))
            && content.as_ref().is_some_and(|c| {
                c.to_ascii_lowercase()
                    .split(',')
                    .any(|t| matches!(t.trim(), "nofollow" | "none"))
            })
        {
            self.meta_nofollow = true;
        }
        if attr("http-equiv").is_some_and(|h| h.trim().eq_ignore_ascii_case("refresh")) {
            if let Some(url) = content.as_deref().and_then(refresh_url) {
                self.raw.push(url);
            }
        }
    }

    /// The links, resolved against the base (or `page`).
    pub fn finish(self, page: &Url) -> Extracted {
        if self.meta_nofollow {
            return Extracted {
                meta_nofollow: true,
                ..Extracted::default()
            };
        }
        let base = self.base.and_then(|href| page.join(href.trim()).ok());
        let base = base.as_ref().unwrap_or(page);
        let mut links = Unique::with_capacity(self.raw.ends.len());
        let mut found = 0;
        // A target written again (a type's page named in every signature of a documentation
        // page) resolves as it did the first time: only whether it gave a link is kept.
        let mut written = Written::with_capacity(self.raw.ends.len());
        for raw in self.raw.iter() {
            let raw = raw.trim();
            if let Some(gave) = written.get(raw) {
                found += usize::from(gave);
                continue;
            }
            let link = link(base, raw);
            written.insert(raw, link.is_some());
            if let Some(u) = link {
                found += 1;
                links.push(u);
            }
        }
        Extracted {
            links: links.urls,
            found,
            meta_nofollow: false,
            nofollow_skipped: self.nofollow_skipped,
        }
    }
}

/// The http(s) URL a link target written as `raw` (trimmed) leads to from `base`, without its
/// fragment.
fn link(base: &Url, raw: &str) -> Option<Url> {
    let starts = |p: &str| {
        raw.as_bytes()
            .get(..p.len())
            .is_some_and(|b| b.eq_ignore_ascii_case(p.as_bytes()))
    };
    if starts("javascript:") || starts("mailto:") || starts("data:") || starts("tel:") {
        return None;
    }
    let mut u = resolve::resolve(base, raw)?;
    if !matches!(u.scheme(), "http" | "https") {
        return None;
    }
    if u.fragment().is_some() {
        u.set_fragment(None);
    }
    Some(u)
}

/// A page's tables are keyed with foldhash, seeded at random per table: a page cannot
/// write links that collide without knowing the seed, which it never sees (no output of the
/// crawl depends on it). std's SipHash was 2% of a crawl of large documentation pages.
type Seeded = foldhash::fast::RandomState;

/// Link targets as written on one page, and whether each gave a link: a few are scanned,
/// more are looked up in a [`Seeded`] table.
#[derive(Default)]
struct Written<'a> {
    few: Vec<(&'a str, u64, bool)>,
    many: HashMap<&'a str, bool, Seeded>,
}

impl<'a> Written<'a> {
    /// A table for `n` targets: the scanned ones allocated once.
    fn with_capacity(n: usize) -> Self {
        Self {
            few: Vec::with_capacity(n.min(Unique::SCAN)),
            many: HashMap::default(),
        }
    }

    fn get(&self, raw: &str) -> Option<bool> {
        if self.many.is_empty() {
            let tail = tail(raw);
            self.few
                .iter()
                .find(|(r, t, _)| *t == tail && *r == raw)
                .map(|(_, _, gave)| *gave)
        } else {
            self.many.get(raw).copied()
        }
    }

    fn insert(&mut self, raw: &'a str, gave: bool) {
        if self.many.is_empty() && self.few.len() < Unique::SCAN {
            self.few.push((raw, tail(raw), gave));
            return;
        }
        if self.many.is_empty() {
            self.many
                .extend(self.few.drain(..).map(|(raw, _, gave)| (raw, gave)));
        }
        self.many.insert(raw, gave);
    }
}

/// A page's links, each once, in the order of first occurrence. Few links are compared with
/// each other directly; past [`Unique::SCAN`] a [`Seeded`] hash of each URL points to its
/// place (a hash that matches another URL keeps both: only equal strings are dropped), so a
/// page cannot choose URLs that pile into one bucket.
#[derive(Default)]
struct Unique {
    urls: Vec<Url>,
    /// [`tail`] of each of the first [`Unique::SCAN`] URLs, compared before the URLs are.
    tails: Vec<u64>,
    first: HashMap<u64, usize, Seeded>,
    state: Seeded,
}

impl Unique {
    /// Up to this many links a scan is cheaper than hashing each one.
    const SCAN: usize = 32;

    /// Room for `n` links, allocated once for a page of few (many targets are often
    /// repeats, so a page of many grows its table as links are found).
    fn with_capacity(n: usize) -> Self {
        Self {
            urls: Vec::with_capacity(n.min(Self::SCAN)),
            tails: Vec::with_capacity(n.min(Self::SCAN)),
            first: HashMap::default(),
            state: Seeded::default(),
        }
    }

    fn push(&mut self, url: Url) {
        if self.urls.len() < Self::SCAN {
            let tail = tail(url.as_str());
            let seen = self
                .tails
                .iter()
                .zip(&self.urls)
                .any(|(t, u)| *t == tail && u.as_str() == url.as_str());
            if !seen {
                self.tails.push(tail);
                self.urls.push(url);
            }
            return;
        }
        if self.first.is_empty() {
            for (at, u) in self.urls.iter().enumerate() {
                self.first
                    .entry(self.state.hash_one(u.as_str()))
                    .or_insert(at);
            }
        }
        match self.first.entry(self.state.hash_one(url.as_str())) {
            Entry::Occupied(at) if self.urls[*at.get()].as_str() == url.as_str() => {}
            Entry::Occupied(_) => self.urls.push(url),
            Entry::Vacant(at) => {
                at.insert(self.urls.len());
                self.urls.push(url);
            }
        }
    }
}

/// The last eight bytes of `s` (fewer when it is shorter) and its length, in one word: two
/// links on a page that differ mostly differ there (`p134.html`, `p135.html`), so scans
/// compare this before the strings (whose compare was most of the scans' time).
fn tail(s: &str) -> u64 {
    let b = s.as_bytes();
    let last = match b.len().checked_sub(8) {
        Some(from) => b[from..].try_into().map_or(0, u64::from_le_bytes),
        None => b.iter().fold(0, |w, &x| (w << 8) | u64::from(x)),
    };
    last ^ (b.len() as u64).rotate_left(56)
}

/// Link targets as written, in one buffer (not a string each).
#[derive(Debug, Default)]
struct RawLinks {
    text: String,
    ends: Vec<usize>,
}

impl RawLinks {
    /// Room taken at the first link: a small page's links fit, so its buffer is allocated
    /// once instead of doubling from a few bytes (+2.5% on the test site's pages); a large
    /// page's grows from there.
    const FIRST_TEXT: usize = 1024;
    const FIRST_LINKS: usize = 32;

    fn push(&mut self, link: &str) {
        if self.ends.is_empty() {
            self.text.reserve(Self::FIRST_TEXT.max(link.len()));
            self.ends.reserve(Self::FIRST_LINKS);
        }
        self.text.push_str(link);
        self.ends.push(self.text.len());
    }

    fn truncate(&mut self, links: usize) {
        self.ends.truncate(links);
        self.text.truncate(self.ends.last().copied().unwrap_or(0));
    }

    fn iter(&self) -> impl Iterator<Item = &str> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(from, &to)| &self.text[from..to])
    }
}

/// The URL of a `<meta http-equiv="refresh" content="5; url=...">`, read as the HTML
/// standard's shared declarative refresh steps read it; `None` for a plain reload or a
/// malformed value.
fn refresh_url(content: &str) -> Option<&str> {
    let is_space = |c: char| matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' ');
    let s = content.trim_start_matches(is_space);
    let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 && !s.starts_with('.') {
        return None;
    }
    let s = s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    if s.is_empty() {
        return None;
    }
    let first = s.chars().next()?;
    if !(first == ';' || first == ',' || is_space(first)) {
        return None;
    }
    let s = s.trim_start_matches(is_space);
    let s = s
        .strip_prefix([';', ','])
        .unwrap_or(s)
        .trim_start_matches(is_space);
    let url = match s.get(..3) {
        // `url =` then a quoted or bare URL; `u` not followed by `rl =` is the URL itself.
        Some(p) if p.eq_ignore_ascii_case("url") => {
            match s[3..].trim_start_matches(is_space).strip_prefix('=') {
                Some(value) => unquote(value.trim_start_matches(is_space)),
                None => s,
            }
        }
        _ if s.starts_with(['u', 'U']) => s,
        _ => unquote(s),
    };
    (!url.is_empty()).then_some(url)
}

/// A refresh URL in quotes ends at the closing quote (or the value's end).
fn unquote(url: &str) -> &str {
    match url.chars().next() {
        Some(q @ ('"' | '\'')) => {
            let inner = &url[1..];
            inner.find(q).map_or(inner, |end| &inner[..end])
        }
        _ => url,
    }
}
