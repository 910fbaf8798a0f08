//! Loading a configuration: defaults < file < `CRAWLER_*` environment < flags, then one check
//! of everything against the schema, reporting every problem with its key and origin.

use std::collections::BTreeMap;
use std::fmt;

use toml::{Table, Value};

use super::schema::{check, kind_of, Kind};
use super::{CrawlConfig, DedupMode, FrontierBackend, ScopeKind, DEFAULT_TOML};

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
            let Some((section, key)) = [
                "crawl",
                "fetch",
                "politeness",
                "frontier",
                "service",
                "output",
            ]
            .iter()
            .find_map(|s| {
                lower
                    .strip_prefix(&format!("{s}_"))
                    .map(|k| (*s, k.to_owned()))
            }) else {
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
            let redis = c.frontier.backend == FrontierBackend::Redis;
            if redis && c.frontier.redis_url.trim().is_empty() {
                problems.push(Problem {
                    key: "frontier.redis_url".into(),
                    origin: origin("frontier.redis_url"),
                    message: "backend = \"redis\" needs the server's URL, e.g. \
                              redis://127.0.0.1:6379/0 (or --frontier-redis URL)"
                        .into(),
                });
            }
            if c.frontier.dedup == DedupMode::Exact && !c.crawl.persist && !redis {
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
            if c.service.listen.parse::<std::net::SocketAddr>().is_err() {
                problems.push(Problem {
                    key: "service.listen".into(),
                    origin: origin("service.listen"),
                    message: format!(
                        "`{}` is not an IP address and port (e.g. 127.0.0.1:8700)",
                        c.service.listen
                    ),
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
    use serde::Deserialize;

    use super::*;
    use crate::config::schema::SCHEMA;
    use crate::config::{LogFormat, QueueOrder};

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
