//! `crawler.toml`: every setting of a crawl, its default, and loading with precedence
//! defaults < file < `CRAWLER_*` environment < command-line flags.
//!
//! Loading never stops at the first problem: the merged settings are checked against a
//! schema and every unknown key, wrong type and impossible value is reported together, each
//! naming the key and where it came from (`crawler.toml:12`, `CRAWLER_FETCH_MAX_BODY_BYTES`,
//! `--concurrency`), as vector does for its configuration.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::Deserialize;
use toml::{Table, Value};

/// A setting with a fixed set of values: an enum whose names are the schema's choices, so
/// the file, the validation and the code cannot disagree on them.
macro_rules! choice {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value's name, as written in `crawler.toml`.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// The name as written in `crawler.toml`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

choice!(
    /// `crawl.log_format`.
    LogFormat {
        /// Human-readable lines.
        Plain = "plain",
        /// One JSON object per line.
        Json = "json",
    }
);

choice!(
    /// `frontier.order`: serving order within a host.
    QueueOrder {
        /// Oldest first.
        BreadthFirst = "breadth-first",
        /// Newest first.
        DepthFirst = "depth-first",
    }
);

choice!(
    /// `frontier.scope`: which hosts links may lead to.
    ScopeKind {
        /// The seeds' hosts.
        SameHost = "same-host",
        /// The seeds' registrable domains.
        SameDomain = "same-domain",
        /// `frontier.domains`.
        Domains = "domains",
        /// Any host.
        Any = "any",
    }
);

choice!(
    /// `frontier.dedup`: how the visited set decides a URL was seen.
    DedupMode {
        /// The Bloom filter alone.
        Bloom = "bloom",
        /// A "maybe seen" is confirmed in the crawl state's exact set.
        Exact = "exact",
    }
);

/// The whole configuration (one struct per `[section]`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrawlConfig {
    /// `[crawl]`
    pub crawl: CrawlSection,
    /// `[fetch]`
    pub fetch: FetchSection,
    /// `[politeness]`
    pub politeness: PolitenessSection,
    /// `[frontier]`
    pub frontier: FrontierSection,
}

/// `[crawl]`: what to crawl, how much, and where the output goes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrawlSection {
    /// Seed URLs.
    pub seeds: Vec<String>,
    /// Output directory (`pages.jsonl`, `stats.json`).
    pub out_dir: PathBuf,
    /// Stop after this many fetched pages (0 = no limit).
    pub max_pages: u64,
    /// Deepest link depth followed (seeds are 0).
    pub max_depth: u32,
    /// Stop after this many seconds (0 = no limit).
    pub max_duration_secs: u64,
    /// Fetches in flight at once.
    pub concurrency: u32,
    /// `User-Agent` header, also matched against robots.txt groups.
    pub user_agent: String,
    /// Obey robots.txt.
    pub respect_robots: bool,
    /// Skip `rel=nofollow` links and pages with `<meta name=robots content=nofollow>`.
    pub respect_nofollow: bool,
    /// Seconds to let in-flight fetches finish after SIGINT/SIGTERM.
    pub drain_secs: u64,
    /// Seconds between progress reports on a non-terminal.
    pub progress_secs: u64,
    /// Seconds between rewrites of `status.json` in the output directory (the heartbeat
    /// `crawler health` reads).
    pub status_secs: u64,
    /// Keep the crawl's state on disk so that it can resume after a crash or a stop.
    pub persist: bool,
    /// Where the state lives (empty: `<out_dir>/state`).
    pub state_dir: String,
    /// Milliseconds between checkpoints of the state.
    pub checkpoint_ms: u64,
    /// `plain` or `json` log lines.
    pub log_format: LogFormat,
}

/// `[fetch]`: HTTP behaviour and limits.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FetchSection {
    /// TCP (and TLS) connect timeout.
    pub connect_timeout_ms: u64,
    /// Longest wait for response headers.
    pub first_byte_timeout_ms: u64,
    /// Longest time for a whole fetch, body included.
    pub total_timeout_ms: u64,
    /// Largest body read (after decompression); longer bodies are cut and recorded as such.
    pub max_body_bytes: u64,
    /// Redirect hops followed from one URL (each hop goes back through the frontier).
    pub max_redirects: u8,
    /// Retries of connection errors, 5xx and 429 (with exponential back-off and jitter).
    pub max_retries: u8,
    /// First delay before a URL is fetched again after a transient failure; doubles each
    /// time (per URL; the host's back-off is `politeness.backoff_base_ms`).
    pub retry_base_ms: u64,
    /// Content types parsed for links.
    pub html_types: Vec<String>,
    /// Host name overrides, like curl's `--resolve`: `"h0.test" = "127.0.0.1"`, or a suffix
    /// pattern `"*.test" = "127.0.0.1"` (the port still comes from the URL).
    pub resolve: BTreeMap<String, String>,
}

/// `[politeness]`: per-host pacing.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolitenessSection {
    /// Minimum gap between fetch starts on one host (robots `Crawl-delay` wins when longer).
    pub delay_ms: u64,
    /// Fetches in flight per host.
    pub max_per_host: u32,
    /// First back-off of a host after an error; doubles with each further error.
    pub backoff_base_ms: u64,
    /// Longest back-off after errors, and longest `Retry-After` honoured.
    pub max_backoff_secs: u64,
}

/// `[frontier]`: the visited set, the queue and the scope.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontierSection {
    /// URLs the Bloom filter is sized for (it grows beyond, keeping its FPP).
    pub expected_urls: u64,
    /// Target false-positive probability of the visited set.
    pub fpp: f64,
    /// Queued URLs kept in memory; the rest spill to disk.
    pub memory_capacity: u64,
    /// Spill directory (empty: a temporary directory).
    pub spill_dir: String,
    /// `breadth-first` or `depth-first`.
    pub order: QueueOrder,
    /// `same-host`, `same-domain`, `domains` or `any`.
    pub scope: ScopeKind,
    /// Domains for `scope = "domains"`.
    pub domains: Vec<String>,
    /// Regexes a URL must match (any), if given.
    pub include: Vec<String>,
    /// Regexes that exclude a URL.
    pub exclude: Vec<String>,
    /// Pages per host (0 = no limit).
    pub max_pages_per_host: u64,
    /// Sort query parameters.
    pub sort_query: bool,
    /// Query parameters to drop (`utm_*` prefixes allowed).
    pub drop_params: Vec<String>,
    /// Treat `www.example.com` as `example.com`.
    pub strip_www: bool,
    /// Longest URL admitted.
    pub max_url_len: u64,
    /// Trap guard: most path segments.
    pub max_path_segments: u64,
    /// Trap guard: most repetitions of one path segment.
    pub max_repeated_segments: u64,
    /// Trap guard: most query parameters.
    pub max_query_params: u64,
    /// `bloom` (the filter alone) or `exact` (a "maybe seen" is confirmed in the state).
    pub dedup: DedupMode,
    /// Exact mode: MiB of memory for the exact set's index (0: every lookup reads the state).
    pub exact_index_mb: u64,
}

/// The default configuration file, every key commented with its default. Parsed as the
/// defaults, printed by `crawler config default`, and the repository's `crawler.toml`.
pub const DEFAULT_TOML: &str = include_str!("../../../crawler.toml");

impl Default for CrawlConfig {
    fn default() -> Self {
        toml::from_str(DEFAULT_TOML).expect("the built-in default configuration is valid")
    }
}

/// Where a setting came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The built-in defaults.
    Default,
    /// A file, with the line of the key when known.
    File { path: String, line: Option<usize> },
    /// An environment variable.
    Env(String),
    /// A command-line flag.
    Flag(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::File {
                path,
                line: Some(l),
            } => write!(f, "{path}:{l}"),
            Origin::File { path, line: None } => f.write_str(path),
            Origin::Env(v) => write!(f, "environment {v}"),
            Origin::Flag(flag) => write!(f, "flag {flag}"),
        }
    }
}

/// One problem with a setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `section.key`.
    pub key: String,
    /// Where the value came from.
    pub origin: Origin,
    /// What is wrong.
    pub message: String,
}

/// Every problem found, in one error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError(pub Vec<Problem>);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} configuration problem(s):", self.0.len())?;
        for p in &self.0 {
            writeln!(f, "  {} ({}): {}", p.key, p.origin, p.message)?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Bool,
    UInt { min: u64, max: u64 },
    Float { min: f64, max: f64 },
    Str,
    Choice(&'static [&'static str]),
    StrList,
    StrMap,
}

/// The schema: every key, its type and its range.
const SCHEMA: &[(&str, &str, Kind)] = &[
    ("crawl", "seeds", Kind::StrList),
    ("crawl", "out_dir", Kind::Str),
    (
        "crawl",
        "max_pages",
        Kind::UInt {
            min: 0,
            max: u64::MAX,
        },
    ),
    (
        "crawl",
        "max_depth",
        Kind::UInt {
            min: 0,
            max: 100_000,
        },
    ),
    (
        "crawl",
        "max_duration_secs",
        Kind::UInt {
            min: 0,
            max: u64::MAX,
        },
    ),
    (
        "crawl",
        "concurrency",
        Kind::UInt {
            min: 1,
            max: 100_000,
        },
    ),
    ("crawl", "user_agent", Kind::Str),
    ("crawl", "respect_robots", Kind::Bool),
    ("crawl", "respect_nofollow", Kind::Bool),
    ("crawl", "drain_secs", Kind::UInt { min: 0, max: 3600 }),
    ("crawl", "progress_secs", Kind::UInt { min: 1, max: 3600 }),
    ("crawl", "status_secs", Kind::UInt { min: 1, max: 3600 }),
    ("crawl", "persist", Kind::Bool),
    ("crawl", "state_dir", Kind::Str),
    (
        "crawl",
        "checkpoint_ms",
        Kind::UInt {
            min: 10,
            max: 3_600_000,
        },
    ),
    ("crawl", "log_format", Kind::Choice(LogFormat::NAMES)),
    (
        "fetch",
        "connect_timeout_ms",
        Kind::UInt {
            min: 1,
            max: 3_600_000,
        },
    ),
    (
        "fetch",
        "first_byte_timeout_ms",
        Kind::UInt {
            min: 1,
            max: 3_600_000,
        },
    ),
    (
        "fetch",
        "total_timeout_ms",
        Kind::UInt {
            min: 1,
            max: 3_600_000,
        },
    ),
    (
        "fetch",
        "max_body_bytes",
        Kind::UInt {
            min: 1,
            max: 1 << 40,
        },
    ),
    ("fetch", "max_redirects", Kind::UInt { min: 0, max: 50 }),
    ("fetch", "max_retries", Kind::UInt { min: 0, max: 20 }),
    (
        "fetch",
        "retry_base_ms",
        Kind::UInt {
            min: 0,
            max: 3_600_000,
        },
    ),
    ("fetch", "html_types", Kind::StrList),
    ("fetch", "resolve", Kind::StrMap),
    (
        "politeness",
        "delay_ms",
        Kind::UInt {
            min: 0,
            max: 3_600_000,
        },
    ),
    (
        "politeness",
        "max_per_host",
        Kind::UInt {
            min: 1,
            max: 10_000,
        },
    ),
    (
        "politeness",
        "backoff_base_ms",
        Kind::UInt {
            min: 1,
            max: 3_600_000,
        },
    ),
    (
        "politeness",
        "max_backoff_secs",
        Kind::UInt {
            min: 0,
            max: 86_400,
        },
    ),
    (
        "frontier",
        "expected_urls",
        Kind::UInt {
            min: 1,
            max: 100_000_000_000,
        },
    ),
    (
        "frontier",
        "fpp",
        Kind::Float {
            min: 1e-12,
            max: 0.5,
        },
    ),
    (
        "frontier",
        "memory_capacity",
        Kind::UInt {
            min: 2,
            max: 1 << 32,
        },
    ),
    ("frontier", "spill_dir", Kind::Str),
    ("frontier", "order", Kind::Choice(QueueOrder::NAMES)),
    ("frontier", "scope", Kind::Choice(ScopeKind::NAMES)),
    ("frontier", "domains", Kind::StrList),
    ("frontier", "include", Kind::StrList),
    ("frontier", "exclude", Kind::StrList),
    (
        "frontier",
        "max_pages_per_host",
        Kind::UInt {
            min: 0,
            max: u64::MAX,
        },
    ),
    ("frontier", "sort_query", Kind::Bool),
    ("frontier", "drop_params", Kind::StrList),
    ("frontier", "strip_www", Kind::Bool),
    (
        "frontier",
        "max_url_len",
        Kind::UInt {
            min: 16,
            max: 65_535,
        },
    ),
    (
        "frontier",
        "max_path_segments",
        Kind::UInt {
            min: 1,
            max: 10_000,
        },
    ),
    (
        "frontier",
        "max_repeated_segments",
        Kind::UInt {
            min: 1,
            max: 10_000,
        },
    ),
    (
        "frontier",
        "max_query_params",
        Kind::UInt {
            min: 0,
            max: 10_000,
        },
    ),
    ("frontier", "dedup", Kind::Choice(DedupMode::NAMES)),
    (
        "frontier",
        "exact_index_mb",
        Kind::UInt {
            min: 0,
            max: 1 << 20,
        },
    ),
];

fn kind_of(section: &str, key: &str) -> Option<Kind> {
    SCHEMA
        .iter()
        .find(|(s, k, _)| *s == section && *k == key)
        .map(|(_, _, kind)| *kind)
}

fn check(kind: Kind, v: &Value) -> Result<(), String> {
    let type_name = v.type_str();
    match (kind, v) {
        (Kind::Bool, Value::Boolean(_)) | (Kind::Str, Value::String(_)) => Ok(()),
        (Kind::UInt { min, max }, Value::Integer(i)) => {
            if *i < 0 || (*i as u64) < min || (*i as u64) > max {
                Err(format!("{i} is out of range {min}..={max}"))
            } else {
                Ok(())
            }
        }
        (Kind::Float { min, max }, Value::Float(x)) => {
            if !(min..=max).contains(x) {
                Err(format!("{x} is out of range {min}..={max}"))
            } else {
                Ok(())
            }
        }
        (Kind::Choice(choices), Value::String(s)) => {
            if choices.contains(&s.as_str()) {
                Ok(())
            } else {
                Err(format!("`{s}` is not one of {}", choices.join(", ")))
            }
        }
        (Kind::StrList, Value::Array(a)) => match a.iter().find(|x| !x.is_str()) {
            Some(x) => Err(format!(
                "list items must be strings, found {}",
                x.type_str()
            )),
            None => Ok(()),
        },
        (Kind::StrMap, Value::Table(t)) => match t.iter().find(|(_, x)| !x.is_str()) {
            Some((k, x)) => Err(format!(
                "value of `{k}` must be a string, found {}",
                x.type_str()
            )),
            None => Ok(()),
        },
        (kind, _) => Err(format!("expected {}, found {type_name}", kind_name(kind))),
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Bool => "a boolean",
        Kind::UInt { .. } => "a non-negative integer",
        Kind::Float { .. } => "a number",
        Kind::Str | Kind::Choice(_) => "a string",
        Kind::StrList => "a list of strings",
        Kind::StrMap => "a table of strings",
    }
}

/// Builds a configuration from layers, then checks everything at once.
#[derive(Debug, Clone)]
pub struct Loader {
    table: Table,
    origins: BTreeMap<String, Origin>,
    problems: Vec<Problem>,
}

impl Default for Loader {
    fn default() -> Self {
        Self::new()
    }
}

impl Loader {
    /// Starts from the built-in defaults.
    pub fn new() -> Self {
        Self {
            table: DEFAULT_TOML.parse().expect("valid defaults"),
            origins: BTreeMap::new(),
            problems: Vec::new(),
        }
    }

    fn set(&mut self, section: &str, key: &str, value: Value, origin: Origin) {
        let path = format!("{section}.{key}");
        match kind_of(section, key) {
            None => self.problems.push(Problem {
                key: path,
                origin,
                message: "unknown key".into(),
            }),
            Some(kind) => {
                let value = coerce(kind, value);
                if let Err(message) = check(kind, &value) {
                    self.problems.push(Problem {
                        key: path.clone(),
                        origin: origin.clone(),
                        message,
                    });
                }
                if let Some(Value::Table(s)) = self.table.get_mut(section) {
                    s.insert(key.to_owned(), value);
                }
                self.origins.insert(path, origin);
            }
        }
    }

    /// Layers a TOML file's text over the current settings.
    pub fn file(mut self, path: &str, text: &str) -> Self {
        let table: Table = match text.parse() {
            Ok(t) => t,
            Err(e) => {
                let line = e
                    .span()
                    .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
                self.problems.push(Problem {
                    key: "(file)".into(),
                    origin: Origin::File {
                        path: path.into(),
                        line,
                    },
                    message: format!("not valid TOML: {}", e.message()),
                });
                return self;
            }
        };
        for (section, value) in table {
            let Value::Table(keys) = value else {
                self.problems.push(Problem {
                    key: section.clone(),
                    origin: Origin::File {
                        path: path.into(),
                        line: line_of(text, None, &section),
                    },
                    message: if kind_of("crawl", &section).is_some() {
                        "keys belong in a [section]; this one goes under [crawl]".into()
                    } else {
                        "unknown top-level key (expected [crawl], [fetch], [politeness] or [frontier])".into()
                    },
                });
                continue;
            };
            if !self.table.contains_key(&section) {
                self.problems.push(Problem {
                    key: section.clone(),
                    origin: Origin::File {
                        path: path.into(),
                        line: line_of(text, None, &format!("[{section}]")),
                    },
                    message: "unknown section".into(),
                });
                continue;
            }
            for (key, v) in keys {
                let origin = Origin::File {
                    path: path.into(),
                    line: line_of(text, Some(&section), &key),
                };
                self.set(&section, &key, v, origin);
            }
        }
        self
    }

    /// Layers `CRAWLER_<SECTION>_<KEY>` variables (values parsed as TOML, else as strings).
    pub fn env(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Self {
        for (name, raw) in vars {
            let Some(rest) = name.strip_prefix("CRAWLER_") else {
                continue;
            };
            if rest == "CONFIG" {
                continue; // names the file, handled by the caller
            }
            let lower = rest.to_ascii_lowercase();
            let Some((section, key)) = ["crawl", "fetch", "politeness", "frontier"]
                .iter()
                .find_map(|s| {
                    lower
                        .strip_prefix(&format!("{s}_"))
                        .map(|k| (*s, k.to_owned()))
                })
            else {
                self.problems.push(Problem {
                    key: lower,
                    origin: Origin::Env(name),
                    message: "unknown variable (expected CRAWLER_<SECTION>_<KEY>)".into(),
                });
                continue;
            };
            let value = parse_scalar(&raw);
            self.set(section, &key, value, Origin::Env(name));
        }
        self
    }

    /// Layers one command-line flag's value onto `section.key`.
    pub fn flag(mut self, flag: &str, section: &str, key: &str, value: Value) -> Self {
        self.set(section, key, value, Origin::Flag(flag.into()));
        self
    }

    /// Checks cross-key rules and builds the configuration, or reports every problem.
    pub fn build(self) -> Result<CrawlConfig, ConfigError> {
        let mut problems = self.problems;
        let cfg: Option<CrawlConfig> = if problems.is_empty() {
            match Value::Table(self.table).try_into() {
                Ok(c) => Some(c),
                Err(e) => {
                    problems.push(Problem {
                        key: "(all)".into(),
                        origin: Origin::Default,
                        message: e.to_string(),
                    });
                    None
                }
            }
        } else {
            None
        };
        if let Some(c) = &cfg {
            let origin = |k: &str| self.origins.get(k).cloned().unwrap_or(Origin::Default);
            if c.fetch.first_byte_timeout_ms > c.fetch.total_timeout_ms {
                problems.push(Problem {
                    key: "fetch.first_byte_timeout_ms".into(),
                    origin: origin("fetch.first_byte_timeout_ms"),
                    message: "must not exceed fetch.total_timeout_ms".into(),
                });
            }
            if c.frontier.dedup == DedupMode::Exact && !c.crawl.persist {
                problems.push(Problem {
                    key: "frontier.dedup".into(),
                    origin: origin("frontier.dedup"),
                    message: "dedup = \"exact\" keeps the exact set in the crawl state: it \
                              needs crawl.persist = true"
                        .into(),
                });
            }
            if c.frontier.scope == ScopeKind::Domains && c.frontier.domains.is_empty() {
                problems.push(Problem {
                    key: "frontier.domains".into(),
                    origin: origin("frontier.domains"),
                    message: "scope = \"domains\" needs at least one domain".into(),
                });
            }
            for (pattern, target) in &c.fetch.resolve {
                if target.parse::<std::net::IpAddr>().is_err() {
                    problems.push(Problem {
                        key: format!("fetch.resolve.\"{pattern}\""),
                        origin: origin("fetch.resolve"),
                        message: format!("`{target}` is not an IP address"),
                    });
                }
            }
        }
        match cfg {
            Some(c) if problems.is_empty() => Ok(c),
            _ => Err(ConfigError(problems)),
        }
    }
}

/// Integers given where floats are expected are accepted as floats (`fpp = 1` style).
fn coerce(kind: Kind, v: Value) -> Value {
    match (kind, v) {
        (Kind::Float { .. }, Value::Integer(i)) => Value::Float(i as f64),
        (_, v) => v,
    }
}

fn parse_scalar(raw: &str) -> Value {
    match format!("v = {raw}").parse::<Table>() {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| Value::String(raw.into())),
        Err(_) => Value::String(raw.into()),
    }
}

/// The 1-based line where `key` is assigned in `[section]` (or where `key` appears at top
/// level), by a simple scan: good enough to point a human at the right line.
fn line_of(text: &str, section: Option<&str>, key: &str) -> Option<usize> {
    let mut current: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            if section.is_none() && t.starts_with(key) {
                return Some(i + 1);
            }
            current = Some(name.trim().to_owned());
            continue;
        }
        let in_section = match section {
            Some(s) => current.as_deref() == Some(s),
            None => current.is_none(),
        };
        if in_section {
            let k = t.split('=').next().unwrap_or("").trim().trim_matches('"');
            if k == key {
                return Some(i + 1);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_shipped_file() {
        let c = CrawlConfig::default();
        assert_eq!(c.crawl.concurrency, 64);
        assert!(c.crawl.respect_robots);
        assert_eq!(Loader::new().build().unwrap(), c);
    }

    /// The shipped file, the schema and the structs list the same keys: the file parses into
    /// the structs (every field required, unknown keys denied), and the schema has exactly
    /// the file's keys.
    #[test]
    fn shipped_file_schema_and_structs_agree() {
        let table: Table = DEFAULT_TOML.parse().unwrap();
        let mut in_file: Vec<(String, String)> = table
            .iter()
            .flat_map(|(section, keys)| {
                let keys = keys.as_table().expect("sections only");
                keys.keys().map(move |k| (section.clone(), k.clone()))
            })
            .collect();
        let mut in_schema: Vec<(String, String)> = SCHEMA
            .iter()
            .map(|(s, k, _)| (s.to_string(), k.to_string()))
            .collect();
        in_file.sort();
        in_schema.sort();
        assert_eq!(in_file, in_schema);
        let _: CrawlConfig = table
            .try_into()
            .expect("the structs take the file as it is");
    }

    /// Every choice's names parse into its enum and back.
    #[test]
    fn choices_round_trip() {
        fn check<T: for<'de> Deserialize<'de> + Copy + fmt::Display>(names: &[&str]) {
            for name in names {
                let v: T = Value::String((*name).to_owned()).try_into().unwrap();
                assert_eq!(v.to_string(), *name);
            }
            assert!(Value::String("nope".into()).try_into::<T>().is_err());
        }
        check::<LogFormat>(LogFormat::NAMES);
        check::<QueueOrder>(QueueOrder::NAMES);
        check::<ScopeKind>(ScopeKind::NAMES);
        check::<DedupMode>(DedupMode::NAMES);
    }

    #[test]
    fn precedence_file_env_flag() {
        let c = Loader::new()
            .file(
                "c.toml",
                "[crawl]\nconcurrency = 8\nmax_pages = 10\n[fetch]\nmax_retries = 1\n",
            )
            .env([
                ("CRAWLER_CRAWL_CONCURRENCY".to_owned(), "16".to_owned()),
                ("CRAWLER_CRAWL_USER_AGENT".to_owned(), "envbot/1".to_owned()),
                ("PATH".to_owned(), "/bin".to_owned()),
            ])
            .flag("--concurrency", "crawl", "concurrency", Value::Integer(32))
            .build()
            .unwrap();
        assert_eq!(c.crawl.concurrency, 32, "flag beats env beats file");
        assert_eq!(c.crawl.max_pages, 10, "file beats default");
        assert_eq!(c.crawl.user_agent, "envbot/1");
        assert_eq!(c.fetch.max_retries, 1);
    }

    #[test]
    fn every_problem_is_reported_with_its_line() {
        let text = "[crawl]\nconcurrency = 0\nbogus = 1\nrespect_robots = \"yes\"\n\n[fetch]\nmax_body_bytes = -5\n[nonsense]\nx = 1\n";
        let err = Loader::new()
            .file("crawler.toml", text)
            .env([("CRAWLER_FRONTIER_FPP".to_owned(), "2.0".to_owned())])
            .build()
            .unwrap_err();
        let shown = err.to_string();
        for needle in [
            "crawl.concurrency (crawler.toml:2)",
            "crawl.bogus (crawler.toml:3): unknown key",
            "crawl.respect_robots (crawler.toml:4): expected a boolean, found string",
            "fetch.max_body_bytes (crawler.toml:7)",
            "nonsense (crawler.toml:8): unknown section",
            "frontier.fpp (environment CRAWLER_FRONTIER_FPP)",
        ] {
            assert!(shown.contains(needle), "missing {needle:?} in\n{shown}");
        }
        assert_eq!(err.0.len(), 6);
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let err = Loader::new()
            .file("x.toml", "[crawl]\nconcurrency = = 3\n")
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("x.toml:2"), "{err}");
    }

    #[test]
    fn cross_key_rules() {
        let err = Loader::new()
            .file("c.toml", "[fetch]\nfirst_byte_timeout_ms = 9000\ntotal_timeout_ms = 1000\nresolve = { \"*.test\" = \"nowhere\" }\n[frontier]\nscope = \"domains\"\n")
            .build()
            .unwrap_err();
        assert_eq!(err.0.len(), 3, "{err}");
    }
}
