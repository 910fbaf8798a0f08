//! A crawl shared in Redis: connecting to it ([`connect`]), and one crawl, one set of rules —
//! the settings every process of it must agree on. Each process offers its values; the crawl keeps the first process' (per key,
//! atomically, in Redis) and every process compares:
//! - a value this process was **given** (file, environment, flag) that differs from the
//!   crawl's is refused, naming each difference (exit 64): two processes would admit,
//!   budget or pace differently, and nothing would say so;
//! - a value left at its **default** that differs is taken from the crawl, with a warning: a
//!   process started with only `--frontier-redis URL` joins the crawl as it is.
//!
//! The rules are what decides which URLs are admitted and how the hosts are treated: the
//! visited set's shape and dedup mode, canonicalisation, scope, budgets, politeness, the
//! lease, link extraction. Values are compared as TOML text.

use std::collections::BTreeMap;
use std::time::Duration;

use frontier::FrontierConfig;

use engine::CrawlConfig;

use crate::LaunchError;

/// The `section.key` settings a shared crawl's processes must agree on.
pub const SHARED_RULES: &[&str] = &[
    "crawl.max_pages",
    "crawl.max_depth",
    "crawl.user_agent",
    "crawl.respect_robots",
    "crawl.respect_nofollow",
    "crawl.sitemaps",
    "fetch.max_redirects",
    "fetch.html_types",
    "politeness.delay_ms",
    "politeness.max_per_host",
    "politeness.backoff_base_ms",
    "politeness.max_backoff_secs",
    "politeness.delay_factor",
    "politeness.max_delay_ms",
    "politeness.ip_delay_ms",
    "politeness.max_per_ip",
    "frontier.expected_urls",
    "frontier.fpp",
    "frontier.dedup",
    "frontier.lease_secs",
    "frontier.order",
    "frontier.scope",
    "frontier.domains",
    "frontier.include",
    "frontier.exclude",
    "frontier.max_pages_per_host",
    "frontier.sort_query",
    "frontier.drop_params",
    "frontier.strip_www",
    "frontier.max_url_len",
    "frontier.max_path_segments",
    "frontier.max_repeated_segments",
    "frontier.max_query_params",
];

/// A setting of this process that differs from the shared crawl's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleDifference {
    /// `section.key`.
    pub key: String,
    /// This process' value (TOML).
    pub ours: String,
    /// The crawl's (TOML).
    pub crawl: String,
}

impl std::fmt::Display for RuleDifference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} = {} here, {} in the crawl",
            self.key, self.ours, self.crawl
        )
    }
}

fn table(cfg: &CrawlConfig) -> toml::Table {
    toml::Table::try_from(cfg).expect("a configuration is a TOML table")
}

/// This process' values of the rules, as TOML text.
pub fn rules(cfg: &CrawlConfig) -> BTreeMap<String, String> {
    let t = table(cfg);
    SHARED_RULES
        .iter()
        .filter_map(|path| {
            let (section, key) = path.split_once('.')?;
            let value = t.get(section)?.get(key)?;
            Some(((*path).to_owned(), value.to_string()))
        })
        .collect()
}

/// `cfg` after comparing its rules with the crawl's `recorded` ones: the crawl's values
/// taken where this process was given none, or every difference in a value it was given.
pub fn reconcile(
    cfg: CrawlConfig,
    recorded: &BTreeMap<String, String>,
) -> Result<(CrawlConfig, Vec<RuleDifference>), Vec<RuleDifference>> {
    let ours = rules(&cfg);
    let mut refused = Vec::new();
    let mut adopted = Vec::new();
    let mut t = table(&cfg);
    for (key, crawl) in recorded {
        // A key this version does not share (a newer process recorded it): not ours to judge.
        let Some(mine) = ours.get(key) else { continue };
        if mine == crawl {
            continue;
        }
        let difference = RuleDifference {
            key: key.clone(),
            ours: mine.clone(),
            crawl: crawl.clone(),
        };
        let value = format!("v = {crawl}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut v| v.remove("v"));
        let (section, name) = key.split_once('.').unwrap_or((key, ""));
        match (cfg.given.contains(key), value) {
            (false, Some(value)) => {
                if let Some(toml::Value::Table(s)) = t.get_mut(section) {
                    s.insert(name.to_owned(), value);
                }
                adopted.push(difference);
            }
            _ => refused.push(difference),
        }
    }
    if !refused.is_empty() {
        return Err(refused);
    }
    let given = cfg.given.clone();
    let mut adopted_cfg: CrawlConfig = match t.try_into() {
        Ok(c) => c,
        // The crawl's value does not fit this version's settings: refuse rather than guess.
        Err(_) => return Err(adopted),
    };
    adopted_cfg.given = given;
    Ok((adopted_cfg, adopted))
}

/// Agrees on the rules with the crawl in Redis (`frontier.redis_url`, `frontier.crawl_id`):
/// records this process' where the crawl has none, then takes or refuses the crawl's.
pub(crate) async fn agree(cfg: CrawlConfig) -> Result<CrawlConfig, LaunchError> {
    let url = cfg.frontier.redis_url.trim().to_owned();
    let crawl_id = cfg.frontier.crawl_id.clone();
    let room = (cfg.frontier.expected_urls, cfg.frontier.fpp);
    let recorded = redis_frontier::agree_rules(&url, &crawl_id, &rules(&cfg), room)
        .await
        .map_err(|error| LaunchError::Redis {
            url: engine::config::redact::redact(&url),
            error,
        })?;
    match reconcile(cfg, &recorded) {
        Ok((cfg, adopted)) => {
            for d in &adopted {
                tracing::warn!(
                    setting = %d.key,
                    value = %d.crawl,
                    instead_of = %d.ours,
                    crawl_id = %crawl_id,
                    "taken from the shared crawl's rules (this process was given no value)"
                );
            }
            Ok(cfg)
        }
        Err(differences) => Err(LaunchError::SharedRules {
            crawl_id,
            differences,
        }),
    }
}

/// Connects to the shared frontier `frontier.redis_url` names.
pub(crate) async fn connect(
    cfg: &CrawlConfig,
    fcfg: FrontierConfig,
    seeds: &[&str],
) -> Result<redis_frontier::RedisFrontier, LaunchError> {
    let f = &cfg.frontier;
    let settings = redis_frontier::RedisConfig {
        url: f.redis_url.trim().to_owned(),
        crawl_id: f.crawl_id.clone(),
        lease: Duration::from_secs(f.lease_secs),
        holder: None,
        partitions: f.partitions,
    };
    let frontier = redis_frontier::RedisFrontier::connect(fcfg, settings, seeds)
        .await
        .map_err(|error| LaunchError::Redis {
            url: engine::config::redact::redact(&f.redis_url),
            error,
        })?;
    tracing::info!(
        url = %engine::config::redact::redact(&f.redis_url),
        crawl_id = %f.crawl_id,
        holder = frontier.holder(),
        "frontier shared in Redis"
    );
    Ok(frontier)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shared_rule_is_a_setting() {
        let r = rules(&CrawlConfig::default());
        assert_eq!(r.len(), SHARED_RULES.len(), "{r:?}");
        assert_eq!(r["frontier.dedup"], "\"bloom\"");
        assert_eq!(r["politeness.delay_ms"], "250");
        assert_eq!(r["frontier.fpp"], "0.01");
    }

    #[test]
    fn given_values_that_differ_are_refused_and_defaults_take_the_crawls() {
        let crawl = {
            let mut c = CrawlConfig::default();
            c.frontier.dedup = engine::DedupMode::Exact;
            c.politeness.delay_ms = 20;
            c.frontier.domains = vec!["test".into()];
            rules(&c)
        };
        // Nothing given: the crawl's values are taken.
        let (adopted, changed) = reconcile(CrawlConfig::default(), &crawl).unwrap();
        assert_eq!(adopted.frontier.dedup, engine::DedupMode::Exact);
        assert_eq!(adopted.politeness.delay_ms, 20);
        assert_eq!(adopted.frontier.domains, ["test"]);
        assert_eq!(changed.len(), 3);
        // Given values that differ: refused, each named.
        let mut given = CrawlConfig::default();
        given.politeness.delay_ms = 500;
        given.given.insert("politeness.delay_ms".into());
        given.given.insert("frontier.dedup".into());
        let refused = reconcile(given, &crawl).unwrap_err();
        let shown: Vec<String> = refused.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "frontier.dedup = \"bloom\" here, \"exact\" in the crawl",
                "politeness.delay_ms = 500 here, 20 in the crawl",
            ]
        );
        // A given value equal to the crawl's is no difference; an unknown key is ignored.
        let mut same = CrawlConfig::default();
        same.politeness.delay_ms = 20;
        same.given.insert("politeness.delay_ms".into());
        let mut newer = crawl.clone();
        newer.insert("frontier.from_the_future".into(), "1".into());
        assert!(reconcile(same, &newer).is_ok());
    }
}
