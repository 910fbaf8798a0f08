//! Named crawls ([`engine::crawls`]) made from the started crawl's configuration: each crawl ID
//! is a crawl of its own, launched as the started one was, on the same kind of frontier.
//!
//! A named crawl `ID` differs from the started crawl in what keeps crawls apart, and in that
//! its clients fetch: no built-in workers (`crawl.workers = 0`), no seeds, no WARC; output in
//! `<out_dir>/crawls/ID`, state in `<state_dir>/crawls/ID` (by default under the output),
//! spill in `<spill_dir>/crawls/ID` (when one is set); in Redis, the crawl
//! `<frontier.crawl_id>/ID`, so the replicas of one service share their named crawls and
//! services with different crawl IDs do not. Everything else (scope, politeness, budgets,
//! the visited set's shape, `[recrawl]`) is the started crawl's.

use std::path::{Path, PathBuf};

use engine::crawls::{CrawlMaker, MakerFuture};
use engine::{CrawlConfig, FrontierBackend, RunOptions, Running, Workers};

/// Makes the named crawls of a service started with `base` and `opts`.
#[derive(Debug, Clone)]
pub struct Maker {
    base: CrawlConfig,
    opts: RunOptions,
}

impl Maker {
    /// The maker of a service whose started crawl is `base` (as given: `launch::start` has
    /// not yet agreed a shared crawl's rules into it) run with `opts`.
    pub fn new(base: CrawlConfig, opts: RunOptions) -> Self {
        Self { base, opts }
    }

    /// The configuration of the named crawl `id`.
    pub fn config(&self, id: &str) -> CrawlConfig {
        let base = &self.base;
        let mut cfg = base.clone();
        cfg.crawl.seeds.clear();
        cfg.crawl.workers = Workers::Count(0);
        cfg.output.warc = false;
        cfg.crawl.out_dir = base.crawl.out_dir.join("crawls").join(id);
        if !base.crawl.state_dir.is_empty() {
            cfg.crawl.state_dir = under(Path::new(&base.crawl.state_dir), id);
        }
        if !base.frontier.spill_dir.is_empty() {
            cfg.frontier.spill_dir = under(Path::new(&base.frontier.spill_dir), id);
        }
        cfg.frontier.crawl_id = format!("{}/{id}", base.frontier.crawl_id);
        cfg
    }

    /// The directories the named crawl `id` writes.
    fn dirs(&self, id: &str) -> Vec<PathBuf> {
        let cfg = self.config(id);
        let mut dirs = vec![cfg.crawl.out_dir.clone()];
        for extra in [&cfg.crawl.state_dir, &cfg.frontier.spill_dir] {
            if !extra.is_empty() {
                dirs.push(PathBuf::from(extra));
            }
        }
        dirs
    }
}

/// `<dir>/crawls/<id>` as a setting's text.
fn under(dir: &Path, id: &str) -> String {
    dir.join("crawls").join(id).to_string_lossy().into_owned()
}

/// Removes `dir` and what it holds: renamed aside first (`.deleting-<name>`), so that a crawl
/// of the same name made right after starts empty even if the removal is cut short; an
/// earlier leftover is removed on the way.
fn remove_dir(dir: &Path) -> std::io::Result<()> {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Ok(());
    };
    let aside = parent.join(format!(".deleting-{}", name.to_string_lossy()));
    if aside.exists() {
        std::fs::remove_dir_all(&aside)?;
    }
    match std::fs::rename(dir, &aside) {
        Ok(()) => std::fs::remove_dir_all(&aside),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

impl CrawlMaker for Maker {
    fn start<'a>(&'a self, id: &'a str) -> MakerFuture<'a, Running> {
        Box::pin(async move {
            let opts = RunOptions {
                fresh: false,
                ..self.opts
            };
            crate::start(self.config(id), opts)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> MakerFuture<'a, ()> {
        Box::pin(async move {
            let cfg = self.config(id);
            if cfg.frontier.backend == FrontierBackend::Redis {
                redis_frontier::delete_crawl(&cfg.frontier.redis_url, &cfg.frontier.crawl_id)
                    .await
                    .map_err(|e| format!("its keys in Redis: {e}"))?;
            }
            for dir in self.dirs(id) {
                remove_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            }
            Ok(())
        })
    }

    /// In Redis, the crawls under `<frontier.crawl_id>/`; otherwise the directories of
    /// `<out_dir>/crawls` (removing what an interrupted delete left).
    fn stored(&self) -> MakerFuture<'_, Vec<String>> {
        Box::pin(async move {
            let base = &self.base;
            if base.frontier.backend == FrontierBackend::Redis {
                let prefix = format!("{}/", base.frontier.crawl_id);
                return redis_frontier::crawls_under(&base.frontier.redis_url, &prefix)
                    .await
                    .map_err(|e| format!("the crawls in Redis: {e}"));
            }
            let dir = base.crawl.out_dir.join("crawls");
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(e) => return Err(format!("{}: {e}", dir.display())),
            };
            let mut ids = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
                if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with(".deleting-") {
                    if let Err(e) = std::fs::remove_dir_all(entry.path()) {
                        tracing::warn!(dir = %entry.path().display(), error = %e,
                            "cannot remove what an interrupted crawl delete left");
                    }
                    continue;
                }
                ids.push(name);
            }
            Ok(ids)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_crawl_keeps_apart_and_has_no_workers() {
        let mut base = CrawlConfig::default();
        base.crawl.out_dir = PathBuf::from("out");
        base.crawl.seeds = vec!["http://a.test/".into()];
        base.output.warc = true;
        base.frontier.spill_dir = "spill".into();
        base.frontier.crawl_id = "main".into();
        let opts = RunOptions {
            progress: engine::ProgressMode::Log,
            fresh: true,
            serve: true,
        };
        let cfg = Maker::new(base.clone(), opts).config("news");
        assert_eq!(cfg.crawl.out_dir, Path::new("out/crawls/news"));
        assert_eq!(
            cfg.crawl.state_dir, "",
            "state under the crawl's own output"
        );
        assert_eq!(
            Path::new(&cfg.frontier.spill_dir),
            Path::new("spill/crawls/news")
        );
        assert_eq!(cfg.frontier.crawl_id, "main/news");
        assert_eq!(cfg.crawl.workers, Workers::Count(0));
        assert!(cfg.crawl.seeds.is_empty() && !cfg.output.warc);
        assert_eq!(cfg.politeness, base.politeness);
        assert_eq!(cfg.frontier.scope, base.frontier.scope);
    }

    #[test]
    fn a_removed_directory_is_gone_and_a_missing_one_is_fine() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("crawls").join("x");
        std::fs::create_dir_all(dir.join("state")).unwrap();
        std::fs::write(dir.join("state").join("f"), b"1").unwrap();
        remove_dir(&dir).unwrap();
        assert!(!dir.exists());
        assert_eq!(
            std::fs::read_dir(tmp.path().join("crawls"))
                .unwrap()
                .count(),
            0
        );
        remove_dir(&dir).unwrap();
    }
}
