//! What a site looks like: every knob of the generated web, with defaults and validation.

use std::fmt;

/// How virtual hosts are told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addressing {
    /// Hosts are names (`h0.test`, `h1.test`, …) on one listener, told apart by the `Host`
    /// header; a crawler maps the names to the listener (a resolve override, or DNS aliases).
    Names,
    /// Host `i` is the address `127.0.0.{i+1}`, each bound separately on the same port, so no
    /// name resolution is needed at all.
    Ips,
}

/// Hostile behaviours, each switched on separately. All live on host 0 (the redirect loops
/// pass through host 1) and are linked from its root page only when switched on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hostile {
    /// Headers only after `slow_secs`.
    pub slow_first_byte: bool,
    /// Headers at once, then one byte every 500 ms (slowloris), for up to ten minutes.
    pub drip: bool,
    /// A body that never ends.
    pub endless: bool,
    /// A 1 GiB body with a correct `Content-Length`.
    pub huge: bool,
    /// A 1 MiB gzip body that inflates to 1 GiB.
    pub gzip_bomb: bool,
    /// A page with 100,000 links (all to pages that exist anyway).
    pub many_links: bool,
    /// 100,000 levels of unclosed, malformed tags with one link at the bottom.
    pub nested: bool,
    /// A spider trap: an ever-growing path and an endless calendar.
    pub trap: bool,
    /// A response with about 256 KiB of headers.
    pub huge_headers: bool,
    /// A redirect chain that ends at the cloud metadata address (`169.254.169.254`).
    pub redirect_private: bool,
    /// Redirect loops across hosts: host 0 ↔ host 1 on one path, and a spiral of ever-new
    /// URLs alternating between them (only a redirect limit ends it).
    pub redirect_loop: bool,
    /// A page linking 10,000 distinct hosts (named hosts only; each answers 404).
    pub many_hosts: bool,
    /// Host 0's robots.txt is 100 MiB: its rules, then comments, then `Disallow: /` at the
    /// very end (which a crawler reading past RFC 9309's 500 KiB would obey).
    pub huge_robots: bool,
    /// 503 with `Retry-After` of a year, every time.
    pub retry_after_year: bool,
    /// Headers and 64 KiB of a 1 MiB body, then the connection is reset (RST).
    pub reset: bool,
    /// Host 0's sitemap index also names hostile sitemaps: a gzip bomb, 60,000 entries,
    /// broken XML, indexes nested three deep, and an index of 1,500 sitemaps.
    pub sitemap_bomb: bool,
    /// A 304 Not Modified to a request that asked for no such thing, with a `Location` to an
    /// orphan page (a crawler that took it for a redirect finds the orphan).
    pub not_modified: bool,
}

impl Hostile {
    /// Every hostile mode on.
    pub fn all() -> Self {
        Self {
            slow_first_byte: true,
            drip: true,
            endless: true,
            huge: true,
            gzip_bomb: true,
            many_links: true,
            nested: true,
            trap: true,
            huge_headers: true,
            redirect_private: true,
            redirect_loop: true,
            many_hosts: true,
            huge_robots: true,
            retry_after_year: true,
            reset: true,
            sitemap_bomb: true,
            not_modified: true,
        }
    }

    /// The names accepted by [`Hostile::parse`], in order.
    pub const NAMES: [&'static str; 17] = [
        "slow-first-byte",
        "drip",
        "endless",
        "huge",
        "gzip-bomb",
        "many-links",
        "nested",
        "trap",
        "huge-headers",
        "redirect-private",
        "redirect-loop",
        "many-hosts",
        "huge-robots",
        "retry-after-year",
        "reset",
        "sitemap-bomb",
        "not-modified",
    ];

    /// Parses a comma-separated list of mode names, or `all`.
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut h = Hostile::default();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match name {
                "all" => h = Hostile::all(),
                "slow-first-byte" => h.slow_first_byte = true,
                "drip" => h.drip = true,
                "endless" => h.endless = true,
                "huge" => h.huge = true,
                "gzip-bomb" => h.gzip_bomb = true,
                "many-links" => h.many_links = true,
                "nested" => h.nested = true,
                "trap" => h.trap = true,
                "huge-headers" => h.huge_headers = true,
                "redirect-private" => h.redirect_private = true,
                "redirect-loop" => h.redirect_loop = true,
                "many-hosts" => h.many_hosts = true,
                "huge-robots" => h.huge_robots = true,
                "retry-after-year" => h.retry_after_year = true,
                "reset" => h.reset = true,
                "sitemap-bomb" => h.sitemap_bomb = true,
                "not-modified" => h.not_modified = true,
                other => {
                    return Err(format!(
                        "unknown hostile mode `{other}` (known: all, {})",
                        Hostile::NAMES.join(", ")
                    ))
                }
            }
        }
        Ok(h)
    }

    /// Whether any mode is on.
    pub fn any(&self) -> bool {
        *self != Hostile::default()
    }
}

/// Pages that change over time, for measuring recrawls: every numeric page gets new versions
/// at its own rate, as a Poisson process (the model of Cho & Garcia-Molina), with rates spread
/// log-uniformly between the bounds so that they span orders of magnitude.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Changing {
    /// Seconds of one simulated day (60: a month passes in half an hour).
    pub day_secs: f64,
    /// Changes a day of the slowest-changing pages.
    pub min_per_day: f64,
    /// Changes a day of the fastest-changing pages.
    pub max_per_day: f64,
}

impl Changing {
    /// `DAY_SECS,MIN_PER_DAY,MAX_PER_DAY` (the binary's `--changing`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        let [day, min, max] = parts[..] else {
            return Err(format!(
                "--changing takes DAY_SECS,MIN_PER_DAY,MAX_PER_DAY, not `{text}`"
            ));
        };
        let num = |what: &str, v: &str| {
            v.parse::<f64>()
                .map_err(|_| format!("--changing: {what} `{v}` is not a number"))
        };
        Ok(Self {
            day_secs: num("DAY_SECS", day)?,
            min_per_day: num("MIN_PER_DAY", min)?,
            max_per_day: num("MAX_PER_DAY", max)?,
        })
    }
}

/// Most changes a day a page may make (each request counts the page's versions so far).
pub const MAX_CHANGES_PER_DAY: f64 = 10_000.0;

/// Default number of numeric pages.
pub const DEFAULT_PAGES: u64 = 1000;
/// Default tree links per page.
pub const DEFAULT_FANOUT: u32 = 8;
/// Default random (mostly duplicate) links per page.
pub const DEFAULT_EXTRA_LINKS: u32 = 8;
/// Default number of virtual hosts.
pub const DEFAULT_HOSTS: u32 = 5;
/// Default length of each host's deep chain.
pub const DEFAULT_DEPTH: u32 = 20;
/// Default orphan pages per host.
pub const DEFAULT_ORPHANS: u32 = 3;
/// The most pages a site may have (pages are generated on request, never stored).
pub const MAX_PAGES: u64 = 1_000_000_000;

/// The whole description of a generated site. The same config gives the same site.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteConfig {
    /// Numeric pages `/…/p{id}.html`, spread over the hosts.
    pub pages: u64,
    /// Tree links per page: page `p` links to `p·F+1 ..= p·F+F`, so every page is reachable
    /// and breadth-first depth grows as `log_F(pages)`.
    pub fanout: u32,
    /// Extra links per page to pseudo-random pages: duplicates and cross-host links.
    pub extra_links: u32,
    /// Virtual hosts (at most 254 with [`Addressing::Ips`]).
    pub hosts: u32,
    /// Length of each host's chain `/chain/0 → /chain/1 → …`, reachable only link by link.
    pub depth: u32,
    /// Pages per host that exist but are linked from nowhere: a crawler must not find them.
    pub orphans: u32,
    /// Seed of every pseudo-random choice (link targets, how each link is written).
    pub seed: u64,
    /// How hosts are told apart.
    pub addressing: Addressing,
    /// `Crawl-delay` (seconds) announced in host 0's robots.txt, if any.
    pub crawl_delay: Option<f64>,
    /// How long `slow-first-byte` waits, in seconds.
    pub slow_secs: u64,
    /// Hostile behaviours on host 0.
    pub hostile: Hostile,
    /// Write every link as a plain absolute URL instead of one of ten equivalent forms (for
    /// peers whose link extraction misses protocol-relative, upper-case or dot-relative links;
    /// the URL set, and so the ground truth, is the same).
    pub plain_links: bool,
    /// Numeric pages of about 8 MB (filler before their links), spread evenly over the site:
    /// a crawl's memory should follow its links, not its page sizes.
    pub big_pages: u32,
    /// Milliseconds every HTML page waits before it is answered: a site far away (latency,
    /// not CPU — the server does nothing meanwhile), for measuring crawls bound by waiting.
    pub latency_ms: u64,
    /// Per host, milliseconds every answer of the host waits (robots.txt, redirects, errors
    /// and pages alike: a slow server), in place of `latency_ms`: host `i` takes entry `i`
    /// modulo the length (empty: `latency_ms`). For latency-adaptive politeness.
    pub host_latency_ms: Vec<u64>,
    /// Pages that change over time (`None`: a page is the same for ever).
    pub changing: Option<Changing>,
}

impl Default for SiteConfig {
    fn default() -> Self {
        Self {
            pages: DEFAULT_PAGES,
            fanout: DEFAULT_FANOUT,
            extra_links: DEFAULT_EXTRA_LINKS,
            hosts: DEFAULT_HOSTS,
            depth: DEFAULT_DEPTH,
            orphans: DEFAULT_ORPHANS,
            seed: 1,
            addressing: Addressing::Names,
            crawl_delay: None,
            slow_secs: 30,
            hostile: Hostile::default(),
            plain_links: false,
            big_pages: 0,
            latency_ms: 0,
            host_latency_ms: Vec::new(),
            changing: None,
        }
    }
}

/// Every problem with a config, reported together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError(pub Vec<String>);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid site config: {}", self.0.join("; "))
    }
}

impl SiteConfig {
    /// Checks every field; lists all problems at once.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        if self.pages == 0 || self.pages > MAX_PAGES {
            problems.push(format!(
                "pages must be in 1..={MAX_PAGES}, got {}",
                self.pages
            ));
        }
        if self.fanout == 0 || self.fanout > 10_000 {
            problems.push(format!("fanout must be in 1..=10000, got {}", self.fanout));
        }
        if self.extra_links > 10_000 {
            problems.push(format!(
                "extra_links must be at most 10000, got {}",
                self.extra_links
            ));
        }
        let max_hosts = match self.addressing {
            Addressing::Names => 10_000,
            Addressing::Ips => 254,
        };
        if self.hosts == 0 || self.hosts > max_hosts {
            problems.push(format!(
                "hosts must be in 1..={max_hosts}, got {}",
                self.hosts
            ));
        }
        if u64::from(self.hosts) > self.pages {
            problems.push(format!(
                "hosts ({}) must not exceed pages ({}): page i is the root of host i",
                self.hosts, self.pages
            ));
        }
        if self.depth > 100_000 {
            problems.push(format!("depth must be at most 100000, got {}", self.depth));
        }
        if self.orphans > 1000 {
            problems.push(format!(
                "orphans must be at most 1000, got {}",
                self.orphans
            ));
        }
        if let Some(d) = self.crawl_delay {
            if !(d.is_finite() && (0.0..=3600.0).contains(&d)) {
                problems.push(format!("crawl_delay must be in 0..=3600 seconds, got {d}"));
            }
        }
        if u64::from(self.big_pages) > self.pages {
            problems.push(format!(
                "big_pages ({}) must not exceed pages ({})",
                self.big_pages, self.pages
            ));
        }
        if let Some(c) = self.changing {
            if !(c.day_secs.is_finite() && c.day_secs >= 1.0 && c.day_secs <= 86_400.0) {
                problems.push(format!(
                    "changing: a day must be 1 to 86400 seconds, got {}",
                    c.day_secs
                ));
            }
            let rates_ok = c.min_per_day.is_finite()
                && c.max_per_day.is_finite()
                && c.min_per_day > 0.0
                && c.min_per_day <= c.max_per_day
                && c.max_per_day <= MAX_CHANGES_PER_DAY;
            if !rates_ok {
                problems.push(format!(
                    "changing: changes a day must satisfy 0 < min ({}) <= max ({}) <= \
                     {MAX_CHANGES_PER_DAY}",
                    c.min_per_day, c.max_per_day
                ));
            }
        }
        if self.hostile.many_hosts && self.addressing == Addressing::Ips {
            problems.push(
                "hostile mode many-hosts needs named hosts (10,000 addresses cannot be bound)"
                    .to_owned(),
            );
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError(problems))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_every_problem() {
        let cfg = SiteConfig {
            pages: 0,
            fanout: 0,
            hosts: 0,
            ..SiteConfig::default()
        };
        let err = cfg.validate().unwrap_err();
        assert_eq!(err.0.len(), 3, "{err}");
        assert!(SiteConfig::default().validate().is_ok());
    }

    #[test]
    fn parses_hostile_lists() {
        assert_eq!(Hostile::parse("all").unwrap(), Hostile::all());
        let h = Hostile::parse("drip, trap").unwrap();
        assert!(h.drip && h.trap && !h.huge);
        assert!(Hostile::parse("nope").is_err());
    }

    #[test]
    fn changing_is_parsed_and_checked() {
        let c = Changing::parse("60, 0.1, 10").unwrap();
        assert_eq!(
            (c.day_secs, c.min_per_day, c.max_per_day),
            (60.0, 0.1, 10.0)
        );
        assert!(Changing::parse("60,1").is_err());
        assert!(Changing::parse("60,x,1").is_err());
        for bad in ["0,1,2", "60,0,1", "60,2,1", "60,1,100000", "NaN,1,2"] {
            let cfg = SiteConfig {
                changing: Some(Changing::parse(bad).unwrap()),
                ..SiteConfig::default()
            };
            assert!(cfg.validate().is_err(), "{bad}");
        }
        assert!(!Hostile::parse("").unwrap().any());
    }
}
