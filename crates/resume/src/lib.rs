//! The crawl's durable state (`crates/store`) wired to a frontier: which settings a resume must
//! share with the run that wrote the state, where the state lives, and how a frontier is
//! rebuilt from it.

pub mod reconcile;
pub mod replay;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use frontier::Resumable;
use serde::Serialize;
use store::Store;

use config::CrawlConfig;

use crate::reconcile::Tail;

/// How a setting is written into the stored fingerprint (the strings existing states hold:
/// numbers and booleans as Rust prints them, choices by name, lists in `Debug` form).
trait Fingerprint {
    fn fingerprint(&self) -> String;
}

impl<T: std::fmt::Display> Fingerprint for T {
    fn fingerprint(&self) -> String {
        self.to_string()
    }
}

/// A list setting (`Vec<String>` prints no `Display`).
struct List<'a>(&'a [String]);

impl std::fmt::Display for List<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// `[frontier]` settings whose change would make a stored state wrong: canonicalisation and
/// the filter's hashing decide fingerprints; scope and dedup decide what was admitted. Each
/// is named once: its key is its field's name.
macro_rules! resume_settings {
    ($f:ident; $($field:ident),+; lists: $($list:ident),+) => {{
        let mut map = BTreeMap::new();
        $(map.insert(concat!("frontier.", stringify!($field)).to_owned(), $f.$field.fingerprint());)+
        $(map.insert(concat!("frontier.", stringify!($list)).to_owned(), List(&$f.$list).fingerprint());)+
        map
    }};
}

/// The settings a resume must share with the run that wrote the state (see
/// [`resume_settings!`]).
pub fn settings(cfg: &CrawlConfig) -> BTreeMap<String, String> {
    let f = &cfg.frontier;
    let mut map = resume_settings!(f;
        expected_urls, fpp, dedup, scope, sort_query, strip_www, max_url_len;
        lists: domains, include, exclude, drop_params);
    // A state whose URLs are scheduled again is not a one-shot crawl's (its queue holds every
    // URL fetched). Named only when set, so states written before it existed still match.
    if cfg.recrawl.policy != config::RecrawlPolicy::None {
        map.insert("recrawl.policy".to_owned(), cfg.recrawl.policy.to_string());
    }
    map
}

/// The state directory: `crawl.state_dir`, else `<out_dir>/state`.
pub fn state_dir(cfg: &CrawlConfig) -> PathBuf {
    if cfg.crawl.state_dir.is_empty() {
        cfg.crawl.out_dir.join("state")
    } else {
        PathBuf::from(&cfg.crawl.state_dir)
    }
}

/// What a resume restored (`stats.json` → `state`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct StateSummary {
    /// The state directory.
    pub dir: PathBuf,
    /// Whether an earlier run's state was resumed.
    pub resumed: bool,
    /// Admitted URLs restored into the visited set.
    pub restored_seen: u64,
    /// URLs restored into the queue (queued or in flight when the last run ended).
    pub restored_pending: u64,
    /// `pages.jsonl` lines of earlier runs.
    pub pages_before: u64,
    /// Hosts still backing off (errors, `Retry-After`) when the last run stopped.
    pub restored_backoffs: u64,
    /// Origins whose robots.txt verdict was restored (not expired).
    pub restored_robots: u64,
    /// Seconds the restore took.
    pub restore_secs: f64,
    /// Checkpoints committed by this run.
    pub checkpoints: u64,
    /// Lines found after the last checkpoint's output mark: kept (their URLs were done) or
    /// removed with their WARC records (fetched again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tail: Option<crate::reconcile::TailSummary>,
    /// `dedup = "exact"`: the exact set's in-memory index when the run ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact_index: Option<ExactIndexSummary>,
}

/// The exact set's in-memory index (`stats.json` → `state.exact_index`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ExactIndexSummary {
    /// Fingerprints in memory.
    pub fingerprints: u64,
    /// Bytes of memory it takes.
    pub bytes: u64,
    /// Whether the whole exact set fits (else some lookups read the state database; raise
    /// `frontier.exact_index_mb`).
    pub complete: bool,
}

/// Opens the state for `cfg` (`fresh`: delete it first) and restores `frontier` from it; the
/// frontier journals into the state from then on. Also returns what the output holds after
/// the state's last checkpoint, to reconcile before writing more ([`Tail::apply`]).
pub fn open(
    cfg: &CrawlConfig,
    frontier: Box<dyn Resumable>,
    fresh: bool,
) -> Result<(Box<dyn Resumable>, Store, StateSummary, Tail), store::StoreError> {
    let dir = state_dir(cfg);
    let store = Store::open(
        &dir,
        &settings(cfg),
        if cfg.frontier.dedup == config::DedupMode::Exact {
            store::Dedup::Exact {
                index_bytes: usize::try_from(cfg.frontier.exact_index_mb << 20)
                    .unwrap_or(usize::MAX),
            }
        } else {
            store::Dedup::Bloom
        },
        fresh,
        Duration::from_millis(cfg.crawl.checkpoint_ms),
    )?;
    let mut tail = if store.resumed() {
        // Under a recrawl schedule a page is never read back: its URL is not done but
        // scheduled, so a fetch the state does not hold is made again (see `Tail::pending`).
        Tail::read(
            &cfg.crawl.out_dir,
            store.output_mark()?.as_deref(),
            cfg.output.warc && cfg.recrawl.policy == config::RecrawlPolicy::None,
        )
    } else {
        Tail::none()
    };
    let (frontier, summary) = restore_watching(frontier, &store, dir, &mut tail)?;
    Ok((frontier, store, summary, tail))
}

/// Restores `frontier` from `store` (when it holds an earlier run: the visited set, the
/// queue, per-host budgets and back-offs, the pages written) and makes it journal into the
/// store from then on. `dir` is only reported.
pub fn restore(
    frontier: Box<dyn Resumable>,
    store: &Store,
    dir: PathBuf,
) -> Result<(Box<dyn Resumable>, StateSummary), store::StoreError> {
    restore_watching(frontier, store, dir, &mut Tail::none())
}

/// [`restore`], telling `tail` which of its lines' URLs are admitted and which pending.
fn restore_watching(
    frontier: Box<dyn Resumable>,
    store: &Store,
    dir: PathBuf,
    tail: &mut Tail,
) -> Result<(Box<dyn Resumable>, StateSummary), store::StoreError> {
    let started = std::time::Instant::now();
    let mut summary = StateSummary {
        dir,
        resumed: store.resumed(),
        ..StateSummary::default()
    };
    if store.resumed() {
        let watch = !tail.is_empty();
        summary.restored_seen = store.for_each_seen(|fp| {
            frontier.restore_seen(fp);
            if watch {
                tail.admitted(fp);
            }
        })?;
        for (host, n) in store.hosts()? {
            frontier.restore_admitted(&host, n);
        }
        let mut unusable = Vec::new();
        let now_secs = output::clock::now_unix_ms() / 1000;
        summary.restored_pending = store.for_each_pending(|mut entry| {
            frontier.restore_seen(frontier::fingerprint(&entry.url));
            // A client's date passed while the crawl was down: the URL wakes now, a first
            // fetch if it never was fetched (its page, if written, is read back as any).
            if entry.visit.as_ref().is_some_and(|v| v.due <= now_secs) {
                entry.woken();
            }
            let entry = match watch {
                // Held out of the queue: its page is read back from the archive.
                true => match tail.pending(entry) {
                    Some(entry) => entry,
                    None => return,
                },
                false => entry,
            };
            let id = entry.id;
            if !frontier.restore_entry(entry) {
                unusable.push(id);
            }
        })?;
        for id in unusable {
            // Cannot be fetched, so it must not be restored on every resume.
            store.done(id, false);
        }
        summary.pages_before = store.pages_before()?;
        frontier.restore_pages(summary.pages_before);
        let now = output::clock::now_unix_ms();
        for b in store.backoffs()? {
            let wait = Duration::from_millis(b.not_before_unix_ms.saturating_sub(now));
            frontier.restore_backoff(&b.host, b.backoff, wait);
            summary.restored_backoffs += 1;
        }
        summary.restore_secs = started.elapsed().as_secs_f64();
        tracing::info!(
            dir = %summary.dir.display(),
            seen = summary.restored_seen,
            pending = summary.restored_pending,
            pages_before = summary.pages_before,
            backing_off = summary.restored_backoffs,
            secs = format_args!("{:.2}", summary.restore_secs),
            "resuming the crawl from its state"
        );
    }
    let mut frontier = frontier;
    frontier.set_journal(store.journal());
    Ok((frontier, summary))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fingerprint of the shipped settings is the one states already on disk hold, so
    /// they still resume.
    #[test]
    fn resume_settings_keep_their_stored_form() {
        let mut cfg = CrawlConfig::default();
        cfg.frontier.domains = vec!["a.test".into(), "b.test".into()];
        let want: BTreeMap<String, String> = [
            ("frontier.expected_urls", "10000000"),
            ("frontier.fpp", "0.01"),
            ("frontier.dedup", "bloom"),
            ("frontier.scope", "same-domain"),
            ("frontier.domains", r#"["a.test", "b.test"]"#),
            ("frontier.include", "[]"),
            ("frontier.exclude", "[]"),
            ("frontier.sort_query", "false"),
            ("frontier.drop_params", "[]"),
            ("frontier.strip_www", "false"),
            ("frontier.max_url_len", "2048"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(settings(&cfg), want);
    }
}
