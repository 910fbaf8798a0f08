//! Scope: which canonical URLs the crawl may admit at all — by host or registrable domain,
//! by regex, by depth, and by trap guards against ever-growing paths and queries.
//!
//! Budgets (total pages, pages per host) are counted in the frontier, after deduplication,
//! since a duplicate must not use up budget.

use std::collections::HashSet;
use std::fmt;

use url::Url;

/// Which hosts are in scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostScope {
    /// Only the exact hosts of the seeds.
    SameHost,
    /// Any host under a seed's registrable domain (`example.co.uk` for
    /// `www.example.co.uk`, by the public suffix list); IP addresses only match themselves.
    SameDomain,
    /// Any host equal to, or a subdomain of, one of these domains.
    Domains(Vec<String>),
    /// Every host.
    Any,
}

/// The scope rules.
#[derive(Debug, Clone)]
pub struct ScopeConfig {
    /// Which hosts are in scope.
    pub hosts: HostScope,
    /// A URL must match at least one of these (when any are given).
    pub include: Vec<String>,
    /// A URL matching any of these is out of scope.
    pub exclude: Vec<String>,
    /// Deepest link depth admitted (seeds are depth 0).
    pub max_depth: Option<u32>,
    /// Most `/`-separated path segments.
    pub max_path_segments: usize,
    /// Most times one path segment may repeat (`/a/b/a/b/a/…` is a trap).
    pub max_repeated_segments: usize,
    /// Most query parameters.
    pub max_query_params: usize,
}

/// Default trap guard: path segments.
pub const DEFAULT_MAX_PATH_SEGMENTS: usize = 32;
/// Default trap guard: repetitions of one segment.
pub const DEFAULT_MAX_REPEATED_SEGMENTS: usize = 3;
/// Default trap guard: query parameters.
pub const DEFAULT_MAX_QUERY_PARAMS: usize = 16;

impl Default for ScopeConfig {
    fn default() -> Self {
        Self {
            hosts: HostScope::SameDomain,
            include: Vec::new(),
            exclude: Vec::new(),
            max_depth: None,
            max_path_segments: DEFAULT_MAX_PATH_SEGMENTS,
            max_repeated_segments: DEFAULT_MAX_REPEATED_SEGMENTS,
            max_query_params: DEFAULT_MAX_QUERY_PARAMS,
        }
    }
}

/// Why a URL is out of scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum OutOfScope {
    /// Not a canonicalisable http(s) URL.
    Invalid,
    /// Host or domain not in scope.
    Host,
    /// Matched no include pattern.
    NotIncluded,
    /// Matched an exclude pattern.
    Excluded,
    /// Deeper than `max_depth`.
    Depth,
    /// Too many path segments.
    PathSegments,
    /// A path segment repeats too often.
    RepeatedSegments,
    /// Too many query parameters.
    QueryParams,
    /// The host's page budget is used up.
    HostBudget,
    /// Reached through more redirects than allowed.
    Redirects,
}

impl OutOfScope {
    /// Every reason, for counters.
    pub const ALL: [OutOfScope; 10] = [
        OutOfScope::Invalid,
        OutOfScope::Host,
        OutOfScope::NotIncluded,
        OutOfScope::Excluded,
        OutOfScope::Depth,
        OutOfScope::PathSegments,
        OutOfScope::RepeatedSegments,
        OutOfScope::QueryParams,
        OutOfScope::HostBudget,
        OutOfScope::Redirects,
    ];

    /// A stable snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            OutOfScope::Invalid => "invalid",
            OutOfScope::Host => "host",
            OutOfScope::NotIncluded => "not_included",
            OutOfScope::Excluded => "excluded",
            OutOfScope::Depth => "depth",
            OutOfScope::PathSegments => "path_segments",
            OutOfScope::RepeatedSegments => "repeated_segments",
            OutOfScope::QueryParams => "query_params",
            OutOfScope::HostBudget => "host_budget",
            OutOfScope::Redirects => "redirects",
        }
    }

    /// Its position in [`OutOfScope::ALL`]: a counter array's index.
    pub fn index(self) -> usize {
        OutOfScope::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }
}

impl fmt::Display for OutOfScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A regex that failed to compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {which} pattern `{pattern}`: {error}")]
pub struct PatternError {
    /// `include` or `exclude`.
    pub which: &'static str,
    /// The pattern.
    pub pattern: String,
    /// What the regex engine said.
    pub error: String,
}

/// Compiled scope rules plus the seeds' hosts and domains.
#[derive(Debug, Clone)]
pub struct Scope {
    cfg: ScopeConfig,
    include: Vec<regex_lite::Regex>,
    exclude: Vec<regex_lite::Regex>,
    seed_hosts: HashSet<String>,
    seed_domains: HashSet<String>,
}

/// The registrable domain of `host` (the public suffix plus one label), or the host itself
/// for IP addresses, single labels and unknown suffixes.
pub fn registrable_domain(host: &str) -> String {
    if host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') {
        return host.to_owned();
    }
    match psl::domain(host.as_bytes()) {
        Some(d) => String::from_utf8_lossy(d.as_bytes()).into_owned(),
        None => host.to_owned(),
    }
}

impl Scope {
    /// Compiles `cfg` for a crawl starting at `seeds` (canonical URLs). Every bad pattern is
    /// reported, not just the first.
    pub fn new(cfg: ScopeConfig, seeds: &[Url]) -> Result<Self, Vec<PatternError>> {
        let mut errors = Vec::new();
        let mut compile = |which: &'static str, patterns: &[String]| {
            patterns
                .iter()
                .filter_map(|p| match regex_lite::Regex::new(p) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        errors.push(PatternError {
                            which,
                            pattern: p.clone(),
                            error: e.to_string(),
                        });
                        None
                    }
                })
                .collect::<Vec<_>>()
        };
        let include = compile("include", &cfg.include);
        let exclude = compile("exclude", &cfg.exclude);
        if !errors.is_empty() {
            return Err(errors);
        }
        let seed_hosts: HashSet<String> = seeds
            .iter()
            .filter_map(|u| u.host_str().map(str::to_owned))
            .collect();
        let seed_domains = seed_hosts.iter().map(|h| registrable_domain(h)).collect();
        Ok(Self {
            cfg,
            include,
            exclude,
            seed_hosts,
            seed_domains,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ScopeConfig {
        &self.cfg
    }

    /// Adds a seed after construction (its host and domain join the scope).
    pub fn add_seed(&mut self, seed: &Url) {
        if let Some(h) = seed.host_str() {
            self.seed_domains.insert(registrable_domain(h));
            self.seed_hosts.insert(h.to_owned());
        }
    }

    /// Whether canonical `url` at link depth `depth` may be admitted.
    pub fn check(&self, url: &Url, depth: u32) -> Result<(), OutOfScope> {
        if self.cfg.max_depth.is_some_and(|max| depth > max) {
            return Err(OutOfScope::Depth);
        }
        let host = url.host_str().ok_or(OutOfScope::Invalid)?;
        let host_ok = match &self.cfg.hosts {
            HostScope::Any => true,
            HostScope::SameHost => self.seed_hosts.contains(host),
            HostScope::SameDomain => {
                self.seed_hosts.contains(host)
                    || self.seed_domains.contains(&registrable_domain(host))
            }
            HostScope::Domains(list) => list.iter().any(|d| {
                let d = d.trim_start_matches('.').to_ascii_lowercase();
                host == d || host.strip_suffix(&d).is_some_and(|p| p.ends_with('.'))
            }),
        };
        if !host_ok {
            return Err(OutOfScope::Host);
        }
        self.check_traps(url)?;
        let text = url.as_str();
        if !self.include.is_empty() && !self.include.iter().any(|r| r.is_match(text)) {
            return Err(OutOfScope::NotIncluded);
        }
        if self.exclude.iter().any(|r| r.is_match(text)) {
            return Err(OutOfScope::Excluded);
        }
        Ok(())
    }

    fn check_traps(&self, url: &Url) -> Result<(), OutOfScope> {
        // Counted byte by byte: this runs for every offered link, duplicates included.
        let count = count_parts(url.path(), b'/');
        if count > self.cfg.max_path_segments {
            return Err(OutOfScope::PathSegments);
        }
        if count > self.cfg.max_repeated_segments {
            let mut counts: std::collections::HashMap<&str, usize> = Default::default();
            for s in url.path().split('/').filter(|x| !x.is_empty()) {
                let c = counts.entry(s).or_default();
                *c += 1;
                if *c > self.cfg.max_repeated_segments {
                    return Err(OutOfScope::RepeatedSegments);
                }
            }
        }
        if let Some(q) = url.query() {
            if count_parts(q, b'&') > self.cfg.max_query_params {
                return Err(OutOfScope::QueryParams);
            }
        }
        Ok(())
    }
}

/// Number of non-empty parts of `s` separated by `sep`.
fn count_parts(s: &str, sep: u8) -> usize {
    let mut count = 0;
    let mut in_part = false;
    for &b in s.as_bytes() {
        if b == sep {
            in_part = false;
        } else if !in_part {
            in_part = true;
            count += 1;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn host_scopes() {
        let seeds = [url("https://www.example.co.uk/")];
        let same_host = Scope::new(
            ScopeConfig {
                hosts: HostScope::SameHost,
                ..Default::default()
            },
            &seeds,
        )
        .unwrap();
        assert!(same_host
            .check(&url("https://www.example.co.uk/x"), 1)
            .is_ok());
        assert_eq!(
            same_host.check(&url("https://shop.example.co.uk/"), 1),
            Err(OutOfScope::Host)
        );
        let same_domain = Scope::new(ScopeConfig::default(), &seeds).unwrap();
        assert!(same_domain
            .check(&url("https://shop.example.co.uk/"), 1)
            .is_ok());
        assert_eq!(
            same_domain.check(&url("https://other.co.uk/"), 1),
            Err(OutOfScope::Host),
            "co.uk is a public suffix, not a shared domain"
        );
        let listed = Scope::new(
            ScopeConfig {
                hosts: HostScope::Domains(vec!["example.org".into()]),
                ..Default::default()
            },
            &seeds,
        )
        .unwrap();
        assert!(listed.check(&url("http://a.b.example.org/"), 0).is_ok());
        assert!(listed.check(&url("http://badexample.org/"), 0).is_err());
        assert_eq!(registrable_domain("127.0.0.1"), "127.0.0.1");
        assert_eq!(registrable_domain("h3.test"), "h3.test");
    }

    #[test]
    fn patterns_depth_and_traps() {
        let cfg = ScopeConfig {
            hosts: HostScope::Any,
            include: vec![r"^https?://[^/]+/(docs|blog)/".into()],
            exclude: vec![r"\.(jpg|png)$".into()],
            max_depth: Some(3),
            ..Default::default()
        };
        let s = Scope::new(cfg, &[]).unwrap();
        assert!(s.check(&url("http://x.test/docs/a"), 3).is_ok());
        assert_eq!(
            s.check(&url("http://x.test/docs/a"), 4),
            Err(OutOfScope::Depth)
        );
        assert_eq!(
            s.check(&url("http://x.test/other"), 0),
            Err(OutOfScope::NotIncluded)
        );
        assert_eq!(
            s.check(&url("http://x.test/docs/a.png"), 0),
            Err(OutOfScope::Excluded)
        );
        assert_eq!(
            s.check(&url("http://x.test/docs/x/x/x/x"), 0),
            Err(OutOfScope::RepeatedSegments)
        );
        let deep = format!(
            "http://x.test/docs/{}",
            (0..40).map(|i| i.to_string()).collect::<Vec<_>>().join("/")
        );
        assert_eq!(s.check(&url(&deep), 0), Err(OutOfScope::PathSegments));
        let q = format!(
            "http://x.test/docs/?{}",
            (0..20)
                .map(|i| format!("k{i}=v"))
                .collect::<Vec<_>>()
                .join("&")
        );
        assert_eq!(s.check(&url(&q), 0), Err(OutOfScope::QueryParams));
    }

    #[test]
    fn every_bad_pattern_is_reported() {
        let cfg = ScopeConfig {
            include: vec!["(".into(), "ok".into()],
            exclude: vec!["[".into()],
            ..Default::default()
        };
        let errors = Scope::new(cfg, &[]).unwrap_err();
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].which, "include");
        assert_eq!(errors[1].which, "exclude");
    }
}
