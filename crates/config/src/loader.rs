//! Loading a configuration: defaults < file < `CRAWLER_*` environment < flags, then one check
//! of everything against the schema, reporting every problem with its key and origin.

use std::collections::BTreeMap;

use toml::{Table, Value};

use super::schema::{check, kind_of, Kind, SCHEMA, SECTIONS};
use super::suggest::{did_you_mean, did_you_mean_key};
use super::{CrawlConfig, DEFAULT_TOML};
use crate::problem::{ConfigError, Origin, Problem};

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
                message: format!("unknown key{}", did_you_mean_key(section, key)),
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
                    message: format!(
                        "unknown section{}",
                        did_you_mean(&section, SECTIONS.iter().copied())
                            .map(|s| format!("; did you mean [{s}]?"))
                            .unwrap_or_default()
                    ),
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
            let Some((section, key)) = SECTIONS.iter().find_map(|s| {
                lower
                    .strip_prefix(&format!("{s}_"))
                    .map(|k| (*s, k.to_owned()))
            }) else {
                // The closest whole variable (CRAWLER_CRAWLL_CONCURRENCY).
                let hint = did_you_mean(&lower, SCHEMA.iter().map(|(s, k, _)| format!("{s}_{k}")))
                    .map(|v| format!("; did you mean CRAWLER_{}?", v.to_ascii_uppercase()))
                    .unwrap_or_default();
                self.problems.push(Problem {
                    key: lower,
                    origin: Origin::Env(name),
                    message: format!("unknown variable (expected CRAWLER_<SECTION>_<KEY>){hint}"),
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
            problems.extend(crate::rules::cross_key(c, origin));
        }
        match cfg {
            Some(mut c) if problems.is_empty() => {
                c.given = self.origins.into_keys().collect();
                Ok(c)
            }
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
    use crate::schema::SCHEMA;
    use crate::{DedupMode, FrontierBackend, LogFormat, QueueOrder, ScopeKind};

    #[test]
    fn defaults_are_the_shipped_file() {
        let c = CrawlConfig::default();
        assert_eq!(c.crawl.concurrency, 64);
        assert!(c.crawl.respect_robots);
        assert_eq!(Loader::new().build().unwrap(), c);
    }

    /// The shipped file defines every setting: each key has a `#:` type line (the schema is
    /// read from it), its default is of that type and in range, and the structs take the
    /// file as it is (every field required, unknown keys denied).
    #[test]
    fn the_shipped_file_types_every_key_and_the_structs_agree() {
        let schema = crate::schema::read(DEFAULT_TOML).expect("every key typed");
        assert_eq!(schema.len(), SCHEMA.len());
        let table: Table = DEFAULT_TOML.parse().unwrap();
        let mut in_file = 0;
        for (section, keys) in &table {
            for (key, value) in keys.as_table().expect("sections only") {
                in_file += 1;
                let kind = crate::schema::kind_of(section, key)
                    .unwrap_or_else(|| panic!("{section}.{key} has no type"));
                if let Err(e) = check(kind, &coerce(kind, value.clone())) {
                    panic!("the default of {section}.{key}: {e}");
                }
            }
        }
        assert_eq!(in_file, schema.len());
        let _: CrawlConfig = table
            .try_into()
            .expect("the structs take the file as it is");
    }

    /// A file whose key has no `#:` line, or an unknown type, is not a schema.
    #[test]
    fn an_untyped_or_mistyped_key_is_refused() {
        assert!(crate::schema::read("[a]\n# doc\nk = 1\n")
            .unwrap_err()
            .contains("a.k"));
        assert!(crate::schema::read("[a]\n#: integer\nk = 1\n").is_err());
        assert!(crate::schema::read("[a]\n#: colour\nk = 1\n").is_err());
        let ok = crate::schema::read(
            "[a]\n#: integer 1..=5\nk = 1\n#: \"x\" | \"y\"\nc = \"x\"\n#: integer 0.. or \"auto\"\nw = 1\n",
        )
        .unwrap();
        assert_eq!(ok[0], ("a", "k", Kind::UInt { min: 1, max: 5 }));
        assert_eq!(ok[1].2, Kind::Choice(&["x", "y"]));
        assert_eq!(
            ok[2].2,
            Kind::CountOr {
                word: "auto",
                max: u64::MAX
            }
        );
    }

    /// The shipped file is each setting's documentation (`crawler config default` prints it):
    /// every key has a comment of its own directly above it.
    #[test]
    fn every_setting_in_the_shipped_file_is_documented() {
        let mut comment = false;
        let mut undocumented = Vec::new();
        for line in DEFAULT_TOML.lines().map(str::trim) {
            // The `#:` type line is not the setting's documentation.
            if line.starts_with("#:") {
                continue;
            }
            if line.starts_with('#') {
                comment = true;
                continue;
            }
            if let Some((key, _)) = line.split_once('=') {
                if !comment {
                    undocumented.push(key.trim().to_owned());
                }
            }
            // A multi-line value's continuation keeps the key's comment; a blank line or
            // a section header ends it.
            if line.is_empty() || line.starts_with('[') || line.contains('=') {
                comment = false;
            }
        }
        assert!(
            undocumented.is_empty(),
            "no comment above: {undocumented:?}"
        );
    }

    /// Every choice's names parse into its enum and back.
    #[test]
    fn choices_round_trip() {
        fn check<T: for<'de> Deserialize<'de> + Copy + std::fmt::Display>(names: &[&str]) {
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
        check::<FrontierBackend>(FrontierBackend::NAMES);
        check::<crate::RecrawlPolicy>(crate::RecrawlPolicy::NAMES);
        // The shipped file's choices are the enums' names.
        for (key, names) in [
            (("crawl", "log_format"), LogFormat::NAMES),
            (("frontier", "order"), QueueOrder::NAMES),
            (("frontier", "scope"), ScopeKind::NAMES),
            (("frontier", "dedup"), DedupMode::NAMES),
            (("frontier", "backend"), FrontierBackend::NAMES),
            (("recrawl", "policy"), crate::RecrawlPolicy::NAMES),
        ] {
            assert_eq!(
                crate::schema::kind_of(key.0, key.1),
                Some(Kind::Choice(names)),
                "{key:?}"
            );
        }
        let choices = SCHEMA
            .iter()
            .filter(|(_, _, k)| matches!(k, Kind::Choice(_)))
            .count();
        assert_eq!(choices, 6, "a choice without its enum's check above");
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
    fn misspelt_keys_sections_and_variables_get_a_did_you_mean() {
        let text = "[crawl]\nconcurency = 8\ndelay_ms = 0\n[politenes]\nx = 1\n";
        let err = Loader::new()
            .file("crawler.toml", text)
            .env([
                ("CRAWLER_CRAWL_CONCURENCY".to_owned(), "8".to_owned()),
                ("CRAWLER_CRAWLL_CONCURRENCY".to_owned(), "8".to_owned()),
            ])
            .build()
            .unwrap_err()
            .to_string();
        for needle in [
            "crawl.concurency (crawler.toml:2): unknown key; did you mean `crawl.concurrency`?",
            "crawl.delay_ms (crawler.toml:3): unknown key; `delay_ms` belongs under \
             [politeness]: did you mean `politeness.delay_ms`?",
            "politenes (crawler.toml:4): unknown section; did you mean [politeness]?",
            "crawl.concurency (environment CRAWLER_CRAWL_CONCURENCY): unknown key; did you \
             mean `crawl.concurrency`?",
            "crawll_concurrency (environment CRAWLER_CRAWLL_CONCURRENCY): unknown variable \
             (expected CRAWLER_<SECTION>_<KEY>); did you mean CRAWLER_CRAWL_CONCURRENCY?",
        ] {
            assert!(err.contains(needle), "missing {needle:?} in\n{err}");
        }
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
    fn the_grpc_listener_is_off_by_default_and_needs_an_address_of_its_own() {
        assert_eq!(CrawlConfig::default().service.grpc_listen, "");
        let c = Loader::new()
            .env([(
                "CRAWLER_SERVICE_GRPC_LISTEN".to_owned(),
                "127.0.0.1:7071".to_owned(),
            )])
            .build()
            .unwrap();
        assert_eq!(c.service.grpc_listen, "127.0.0.1:7071");
        for (value, needle) in [
            ("localhost:7071", "is not an IP address and port"),
            ("127.0.0.1:8700", "is service.listen too"),
        ] {
            let err = Loader::new()
                .env([("CRAWLER_SERVICE_GRPC_LISTEN".to_owned(), value.to_owned())])
                .build()
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("service.grpc_listen (environment CRAWLER_SERVICE_GRPC_LISTEN)")
                    && err.contains(needle),
                "{value}: {err}"
            );
        }
    }

    #[test]
    fn cross_key_rules() {
        let err = Loader::new()
            .file("c.toml", "[fetch]\nfirst_byte_timeout_ms = 9000\ntotal_timeout_ms = 1000\nresolve = { \"*.test\" = \"nowhere\" }\n[frontier]\nscope = \"domains\"\n")
            .build()
            .unwrap_err();
        assert_eq!(err.0.len(), 3, "{err}");
        let err = Loader::new()
            .file(
                "c.toml",
                "[recrawl]\npolicy = \"fixed\"\ninterval_secs = 10\nmin_interval_secs = 60\n",
            )
            .env([
                ("CRAWLER_FRONTIER_BACKEND".to_owned(), "redis".to_owned()),
                (
                    "CRAWLER_FRONTIER_REDIS_URL".to_owned(),
                    "redis://127.0.0.1:1/0".to_owned(),
                ),
            ])
            .build()
            .unwrap_err()
            .to_string();
        // The bounds are checked; a schedule on the shared frontier is not refused.
        assert!(err.contains("recrawl.interval_secs (c.toml:3)"), "{err}");
        assert!(!err.contains("recrawl.policy"), "{err}");
    }
}
