//! The site model: which URLs exist, what each one serves and where its links point — all
//! computed on demand from the config and its seed, so a site of 10^8 pages costs no memory.
//!
//! Every URL the model produces is in the canonical form a correct normaliser yields (lower
//! case host, no default port, no dot segments, no fragment, UTF-8 percent-encoded path), so
//! the ground truth is a list of canonical URLs. How each link is *written* in a page (relative,
//! protocol-relative, upper-case host, `%7E`, …) is chosen separately, in `render`.

use std::fmt;

use crate::config::{Addressing, SiteConfig};

mod hostile;
mod sitemaps;
pub use hostile::MANY_HOSTS;
pub use sitemaps::{SitemapEntry, FROM_SITEMAP, HOSTILE_SITEMAPS};
mod changes;
mod routes;
pub use changes::Validators;

/// Index of a virtual host.
pub type HostId = u32;

/// A canonical link target: a host and a canonical path (with query, if any).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target {
    /// The host serving the target.
    pub host: HostId,
    /// Canonical path and query, starting with `/`.
    pub path: String,
}

/// A link on a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Where it points.
    pub target: Target,
    /// `rel="nofollow"`.
    pub nofollow: bool,
}

/// How an HTML page declares its character set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charset {
    /// UTF-8, declared in the header.
    Utf8,
    /// ISO-8859-1, declared only in the `Content-Type` header.
    Latin1Header,
    /// Shift_JIS, declared only in a `<meta charset>`.
    ShiftJisMeta,
    /// Declared UTF-8 but with invalid byte sequences in the text.
    BrokenUtf8,
}

/// Content-Encoding a page is served with when the client accepts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `gzip`.
    Gzip,
    /// `br`.
    Brotli,
}

/// A hostile behaviour (see [`crate::config::Hostile`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostileKind {
    SlowFirstByte,
    Drip,
    Endless,
    Huge,
    GzipBomb,
    HugeHeaders,
    /// The last hop of a redirect chain: to the cloud metadata address.
    RedirectPrivate,
    /// A redirect to the next URL of a spiral between hosts 0 and 1 (`n` is its step).
    RedirectSpiral(u32),
    /// 503 with `Retry-After: 31536000`.
    RetryAfterYear,
    /// Part of the body, then a connection reset.
    Reset,
    /// A gzip'd "sitemap" that inflates to 1 GiB.
    SitemapBomb,
    /// A sitemap whose XML breaks after its first entry.
    SitemapBroken,
}

impl HostileKind {
    /// The mode's name.
    pub fn name(self) -> &'static str {
        match self {
            HostileKind::SlowFirstByte => "slow-first-byte",
            HostileKind::Drip => "drip",
            HostileKind::Endless => "endless",
            HostileKind::Huge => "huge",
            HostileKind::GzipBomb => "gzip-bomb",
            HostileKind::HugeHeaders => "huge-headers",
            HostileKind::RedirectPrivate => "redirect-private",
            HostileKind::RedirectSpiral(_) => "redirect-spiral",
            HostileKind::RetryAfterYear => "retry-after-year",
            HostileKind::Reset => "reset",
            HostileKind::SitemapBomb => "sitemap-bomb",
            HostileKind::SitemapBroken => "sitemap-broken",
        }
    }
}

/// The robots.txt policy of a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RobotsKind {
    /// Disallow `/private/` but allow `/private/public/`, disallow `/*.pdf$`, and an optional
    /// `Crawl-delay`.
    Rules,
    /// robots.txt answers 404: everything is allowed.
    Missing,
    /// robots.txt answers 500: RFC 9309 says treat the host as fully disallowed.
    ServerError,
    /// robots.txt is binary garbage with no valid rule: everything is allowed.
    Garbage,
}

/// An HTML document as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Html {
    /// `<title>`.
    pub title: String,
    /// Links in document order.
    pub links: Vec<Link>,
    /// `<base href>` directory (a canonical path ending in `/`), if the page has one.
    pub base: Option<String>,
    /// `<meta name="robots" content="nofollow, noindex">`.
    pub meta_nofollow: bool,
    /// How the character set is declared.
    pub charset: Charset,
    /// Compression used when the client accepts it.
    pub encoding: Option<Encoding>,
    /// A `Content-Type` that lies (the body is HTML, the header says otherwise).
    pub content_type_lie: Option<&'static str>,
    /// Filler paragraphs (the page's size beyond its links).
    pub filler: u32,
    /// Levels of unclosed, malformed tags before the links (the `nested` hostile mode).
    pub nesting: u32,
    /// The page's version, shown in its text, when pages change.
    pub version: Option<u64>,
}

impl Html {
    fn new(title: impl Into<String>, links: Vec<Link>) -> Self {
        Self {
            title: title.into(),
            links,
            base: None,
            meta_nofollow: false,
            charset: Charset::Utf8,
            encoding: None,
            content_type_lie: None,
            filler: 1,
            nesting: 0,
            version: None,
        }
    }
}

/// What a URL serves.
#[derive(Debug, Clone, PartialEq)]
pub enum Resource {
    /// An HTML page (status 200).
    Html(Html),
    /// A redirect.
    Redirect {
        /// 301, 302, 307 or 308.
        status: u16,
        /// Where to.
        location: Target,
        /// Whether `Location` is written as a relative reference.
        relative: bool,
    },
    /// A status with a short body and nothing else.
    Status(u16),
    /// Fails with `status` (with `Retry-After` if set) on the first request, then serves `then`.
    Transient {
        /// The first answer: 500, 503 or 429.
        status: u16,
        /// `Retry-After` seconds.
        retry_after: Option<u32>,
        /// What later requests get.
        then: Box<Resource>,
    },
    /// Non-HTML bytes with a content type.
    Binary {
        /// `Content-Type`.
        content_type: &'static str,
        /// Seed of the generated bytes.
        seed: u64,
        /// Length of the body.
        len: usize,
    },
    /// robots.txt of a host.
    Robots(RobotsKind),
    /// A hostile behaviour.
    Hostile(HostileKind),
    /// A spider-trap page: valid HTML whose links lead ever deeper.
    Trap(Html),
    /// A sitemap file: an index of sitemaps or a URL set.
    Sitemap {
        /// `<sitemapindex>` (else `<urlset>`).
        index: bool,
        /// Served gzip'd as a file (`application/gzip`, not a transfer encoding).
        gzip: bool,
        /// Its entries, in order.
        entries: Vec<SitemapEntry>,
    },
    /// Nothing here.
    NotFound,
}

/// What a correct crawler with default settings records for a URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Expected {
    /// A final HTTP status (after retries of transient failures).
    Status(u16),
    /// A hostile behaviour: the record must exist and say what went wrong (or was cut).
    Hostile(HostileKind),
    /// Not fetched, because the host's robots.txt answers 5xx: the record has no status and
    /// says so in its error.
    RobotsUnavailable,
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expected::Status(s) => write!(f, "{s}"),
            Expected::Hostile(k) => write!(f, "hostile:{}", k.name()),
            Expected::RobotsUnavailable => f.write_str("robots-unavailable"),
        }
    }
}

/// splitmix64 over a combination of inputs: the site's only source of "randomness".
pub fn mix(seed: u64, a: u64, b: u64) -> u64 {
    let mut z = seed
        .wrapping_add(a.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(b.wrapping_mul(0xD1B5_4A32_D192_ED03));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A generated site bound to a port (URLs contain it unless it is 80).
#[derive(Debug, Clone)]
pub struct Site {
    cfg: SiteConfig,
    port: u16,
}

impl Site {
    /// A site for `cfg` served on `port`.
    pub fn new(cfg: SiteConfig, port: u16) -> Result<Self, crate::config::ConfigError> {
        cfg.validate()?;
        Ok(Self { cfg, port })
    }

    /// The configuration.
    pub fn config(&self) -> &SiteConfig {
        &self.cfg
    }

    /// Milliseconds host `h`'s answers wait (see `SiteConfig::host_latency_ms`).
    pub fn latency_of(&self, h: HostId) -> u64 {
        match self.cfg.host_latency_ms.as_slice() {
            [] => self.cfg.latency_ms,
            each => each[h as usize % each.len()],
        }
    }

    /// The port in every URL.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Host `h`'s name as it appears in URLs (`h3.test` or `127.0.0.4`).
    pub fn host_name(&self, h: HostId) -> String {
        match self.cfg.addressing {
            Addressing::Names => format!("h{h}.test"),
            Addressing::Ips => format!("127.0.0.{}", h + 1),
        }
    }

    /// The host a `Host` header value (or a bound address) names, if it is one of ours.
    pub fn host_id(&self, authority: &str) -> Option<HostId> {
        let host = match authority.rsplit_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => authority,
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let id = match self.cfg.addressing {
            Addressing::Names => host
                .strip_prefix('h')?
                .strip_suffix(".test")?
                .parse()
                .ok()?,
            Addressing::Ips => host
                .strip_prefix("127.0.0.")?
                .parse::<u32>()
                .ok()?
                .checked_sub(1)?,
        };
        // Reject "h01.test" and the like: only the canonical spelling names a host.
        (id < self.cfg.hosts && self.host_name(id) == host).then_some(id)
    }

    /// `http://host[:port]`.
    pub fn origin(&self, h: HostId) -> String {
        if self.port == 80 {
            format!("http://{}", self.host_name(h))
        } else {
            format!("http://{}:{}", self.host_name(h), self.port)
        }
    }

    /// The canonical absolute URL of a target.
    pub fn url(&self, t: &Target) -> String {
        format!("{}{}", self.origin(t.host), t.path)
    }

    /// The crawl's seed: host 0's root page.
    pub fn seed_url(&self) -> String {
        format!("{}/", self.origin(0))
    }

    /// Which robots.txt policy host `h` has.
    pub fn robots_kind(&self, h: HostId) -> RobotsKind {
        match h {
            // A host the site does not have answers 404 to everything.
            _ if h >= self.cfg.hosts => RobotsKind::Missing,
            1 => RobotsKind::Missing,
            2 => RobotsKind::ServerError,
            3 => RobotsKind::Garbage,
            _ => RobotsKind::Rules,
        }
    }

    /// The robots.txt text of a host with [`RobotsKind::Rules`].
    pub fn robots_rules(&self, h: HostId) -> String {
        let mut text = format!(
            "# robots.txt of {}\nUser-agent: *\nDisallow: /private/\nAllow: /private/public/\nDisallow: /*.pdf$\n",
            self.host_name(h)
        );
        if let (0, Some(delay)) = (h, self.cfg.crawl_delay) {
            text.push_str(&format!("Crawl-delay: {delay}\n"));
        }
        for path in self.robots_sitemaps(h) {
            text.push_str(&format!("Sitemap: {}{path}\n", self.origin(h)));
        }
        text.push_str("\nUser-agent: BadBot\nDisallow: /\n");
        text
    }

    /// Whether a correct crawler may fetch `path` (canonical path and query) on host `h`.
    pub fn is_disallowed(&self, h: HostId, path: &str) -> bool {
        if path == "/robots.txt" {
            return false;
        }
        match self.robots_kind(h) {
            RobotsKind::Missing | RobotsKind::Garbage => false,
            RobotsKind::ServerError => true,
            RobotsKind::Rules => {
                (path.starts_with("/private/") && !path.starts_with("/private/public/"))
                    || path.ends_with(".pdf")
            }
        }
    }

    /// The host of numeric page `p`.
    pub fn page_host(&self, p: u64) -> HostId {
        (p % u64::from(self.cfg.hosts)) as HostId
    }

    /// The canonical path of numeric page `p`. Pages `0..hosts` are the hosts' root pages.
    pub fn page_path(&self, p: u64) -> String {
        if p < u64::from(self.cfg.hosts) {
            "/".to_owned()
        } else if p % 50 == 7 {
            format!("/private/p{p}.html")
        } else if p % 50 == 17 {
            format!("/private/public/p{p}.html")
        } else if p % 11 == 3 {
            format!("/~u{}/p{p}.html", p % 5)
        } else {
            format!("/s{}/d{}/p{p}.html", p % 7, p % 13)
        }
    }

    /// The numeric page at canonical `path` on host `h`, if any.
    pub fn page_at(&self, h: HostId, path: &str) -> Option<u64> {
        if h >= self.cfg.hosts {
            return None;
        }
        if path == "/" {
            return Some(u64::from(h));
        }
        let name = path.rsplit('/').next()?;
        let p: u64 = name
            .strip_prefix('p')?
            .strip_suffix(".html")?
            .parse()
            .ok()?;
        (p < self.cfg.pages && self.page_host(p) == h && self.page_path(p) == path).then_some(p)
    }

    /// A target for numeric page `p`.
    pub fn page_target(&self, p: u64) -> Target {
        Target {
            host: self.page_host(p),
            path: self.page_path(p),
        }
    }

    /// The `k`-th page of host `h` (wrapping to its root if the site is small).
    fn some_page(&self, h: HostId, k: u64) -> Target {
        let p = u64::from(h) + u64::from(self.cfg.hosts) * (k + 1);
        if p < self.cfg.pages {
            self.page_target(p)
        } else {
            Target {
                host: h,
                path: "/".into(),
            }
        }
    }

    fn link(&self, host: HostId, path: &str) -> Link {
        Link {
            target: Target {
                host,
                path: path.to_owned(),
            },
            nofollow: false,
        }
    }

    /// The numeric pages page `p` links to: its tree children `p·F+1 ..= p·F+F`, then
    /// `extra_links` pseudo-random pages.
    pub fn page_link_ids(&self, p: u64) -> impl Iterator<Item = u64> + '_ {
        let cfg = &self.cfg;
        let f = u64::from(cfg.fanout);
        let first_child = p.saturating_mul(f).saturating_add(1);
        let children = first_child
            ..first_child
                .saturating_add(f)
                .min(cfg.pages)
                .max(first_child);
        let extras = (0..u64::from(cfg.extra_links))
            .map(move |j| mix(cfg.seed, p, j + 1_000_000) % cfg.pages);
        children.chain(extras)
    }

    /// Whether numeric page `p` is disallowed by its host's robots.txt (fast path of
    /// [`is_disallowed`](Self::is_disallowed), no strings).
    pub fn page_disallowed(&self, p: u64) -> bool {
        match self.robots_kind(self.page_host(p)) {
            RobotsKind::ServerError => true,
            RobotsKind::Rules => p >= u64::from(self.cfg.hosts) && p % 50 == 7,
            RobotsKind::Missing | RobotsKind::Garbage => false,
        }
    }

    /// The links of numeric page `p`: [`page_link_ids`](Self::page_link_ids), and on root
    /// pages the host's special resources, chain and (host 0) hostile pages.
    pub fn page_links(&self, p: u64) -> Vec<Link> {
        let cfg = &self.cfg;
        let mut links = Vec::with_capacity((cfg.fanout + cfg.extra_links) as usize + 8);
        links.extend(self.page_link_ids(p).map(|t| Link {
            target: self.page_target(t),
            nofollow: false,
        }));
        if p < u64::from(cfg.hosts) {
            let h = p as HostId;
            links.extend(self.special_links().map(|s| self.link(h, &s)));
            if h == 0 {
                links.extend(self.hostile_links().into_iter().map(|s| self.link(0, s)));
            }
        }
        links
    }

    /// The HTML of numeric page `p`.
    pub fn page_html(&self, p: u64) -> Html {
        let mut html = Html::new(format!("Page {p}"), self.page_links(p));
        if p % 13 == 4 && p >= u64::from(self.cfg.hosts) {
            html.base = Some(format!("/b{}/", p % 3));
        }
        // One page in ten of each encoding: enough to exercise decoders everywhere, few
        // enough that compressing on request does not make the server the bottleneck.
        html.encoding = match p % 10 {
            1 => Some(Encoding::Gzip),
            2 => Some(Encoding::Brotli),
            _ => None,
        };
        html.filler = 1 + (mix(self.cfg.seed, p, 7) % 3) as u32;
        if self.is_big(p) {
            // About 120 bytes a paragraph: 8 MB before the links.
            html.filler = 66_000;
            html.encoding = None;
        }
        html
    }

    /// Whether numeric page `p` is one of the site's big pages (see `SiteConfig::big_pages`).
    pub fn is_big(&self, p: u64) -> bool {
        let big = u64::from(self.cfg.big_pages);
        if big == 0 {
            return false;
        }
        let stride = (self.cfg.pages / big).max(1);
        p % stride == stride / 2 && p / stride < big
    }
}

#[cfg(test)]
mod tests;
