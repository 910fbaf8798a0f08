//! Every key of `crawler.toml`: its type and range. The loader checks the merged layers
//! against it; the choices' names come from their enums.

use toml::Value;

use super::{DedupMode, FrontierBackend, LogFormat, QueueOrder, ScopeKind};

#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Bool,
    UInt {
        min: u64,
        max: u64,
    },
    Float {
        min: f64,
        max: f64,
    },
    Str,
    Choice(&'static [&'static str]),
    StrList,
    StrMap,
    /// A count in `0..=max`, or the word standing for a default taken from another key.
    CountOr {
        word: &'static str,
        max: u64,
    },
}

/// The schema: every key, its type and its range.
pub(super) const SCHEMA: &[(&str, &str, Kind)] = &[
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
    (
        "crawl",
        "workers",
        Kind::CountOr {
            word: "concurrency",
            max: 100_000,
        },
    ),
    ("crawl", "user_agent", Kind::Str),
    ("crawl", "respect_robots", Kind::Bool),
    ("crawl", "respect_nofollow", Kind::Bool),
    ("crawl", "sitemaps", Kind::Bool),
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
    ("fetch", "allow_private", Kind::Bool),
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
    ("frontier", "backend", Kind::Choice(FrontierBackend::NAMES)),
    ("frontier", "redis_url", Kind::Str),
    ("frontier", "crawl_id", Kind::Str),
    (
        "frontier",
        "lease_secs",
        Kind::UInt {
            min: 1,
            max: 86_400,
        },
    ),
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
    ("service", "listen", Kind::Str),
    ("service", "api_token", Kind::Str),
    ("service", "protect_metrics", Kind::Bool),
    (
        "service",
        "max_body_bytes",
        Kind::UInt {
            min: 1024,
            max: 1 << 30,
        },
    ),
    (
        "service",
        "max_urls_per_call",
        Kind::UInt {
            min: 1,
            max: 1_000_000,
        },
    ),
    (
        "service",
        "lease_secs",
        Kind::UInt {
            min: 1,
            max: 86_400,
        },
    ),
    ("service", "allow_private_seeds", Kind::Bool),
    ("output", "warc", Kind::Bool),
    (
        "output",
        "warc_max_mb",
        Kind::UInt {
            min: 1,
            max: 1 << 20,
        },
    ),
    ("output", "warc_gzip_level", Kind::UInt { min: 1, max: 9 }),
];

pub(super) fn kind_of(section: &str, key: &str) -> Option<Kind> {
    SCHEMA
        .iter()
        .find(|(s, k, _)| *s == section && *k == key)
        .map(|(_, _, kind)| *kind)
}

pub(super) fn check(kind: Kind, v: &Value) -> Result<(), String> {
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
        (Kind::CountOr { max, .. }, Value::Integer(i)) => {
            if *i < 0 || (*i as u64) > max {
                Err(format!("{i} is out of range 0..={max}"))
            } else {
                Ok(())
            }
        }
        (Kind::CountOr { word, .. }, Value::String(s)) if s == word => Ok(()),
        (kind, _) => Err(format!("expected {}, found {type_name}", kind_name(kind))),
    }
}

pub(super) fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Bool => "a boolean",
        Kind::UInt { .. } => "a non-negative integer",
        Kind::Float { .. } => "a number",
        Kind::Str | Kind::Choice(_) => "a string",
        Kind::StrList => "a list of strings",
        Kind::StrMap => "a table of strings",
        Kind::CountOr { .. } => "a non-negative integer or \"concurrency\"",
    }
}
