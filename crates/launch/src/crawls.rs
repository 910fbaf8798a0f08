//! Named crawls ([`engine::crawls`]) made from the started crawl's configuration: each crawl ID
//! is a crawl of its own, launched as the started one was, on the same kind of frontier.
//!
//! A named crawl `ID` differs from the started crawl in what keeps crawls apart, and in that
//! its clients fetch: no built-in workers (`crawl.workers = 0`), no seeds, no WARC; output in
//! `<out_dir>/crawls/ID`, state in `<state_dir>/crawls/ID` (by default under the output),
//! spill in `<spill_dir>/crawls/ID` (when one is set); in Redis, the crawl
//! `<frontier.crawl_id>/ID`, listed in the service's registry in Redis, so the replicas of
//! one service share their named crawls and services with different crawl IDs do not.
//! Everything else (scope, politeness, budgets, the visited set's shape, `[recrawl]`) is the
//! started crawl's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use engine::crawls::{CrawlMaker, Made, MakerFuture};
use engine::{CrawlConfig, FrontierBackend, RunOptions, Workers};

/// Makes the named crawls of a service started with `base` and `opts`.
#[derive(Debug, Clone)]
pub struct Maker {
    base: CrawlConfig,
    opts: RunOptions,
}

impl Maker {
    /// The maker of a service whose started crawl is `base` (as given: `launch::start` has
    /// not yet agreed a shared crawl's rules into it) run with `opts`.
    /// Sweeps what interrupted deletes left in the crawls' directories first.
    pub fn new(base: CrawlConfig, opts: RunOptions) -> Self {
        let maker = Self { base, opts };
        for root in maker.roots() {
            sweep(&root);
        }
        maker
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
        cfg.frontier.crawl_id = match base.frontier.backend {
            // A crawl of the service this one fetches for: the same ID there.
            FrontierBackend::UrlFrontier => id.to_owned(),
            _ => redis_frontier::named_crawl_id(&base.frontier.crawl_id, id),
        };
        cfg
    }

    /// The directories that hold the named crawls (`<out_dir>/crawls`, and under
    /// `state_dir` and `spill_dir` when set).
    fn roots(&self) -> Vec<PathBuf> {
        let base = &self.base;
        let mut roots = vec![base.crawl.out_dir.join("crawls")];
        for extra in [&base.crawl.state_dir, &base.frontier.spill_dir] {
            if !extra.is_empty() {
                roots.push(Path::new(extra).join("crawls"));
            }
        }
        roots
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

/// The name a directory being removed has meanwhile.
const DELETING: &str = ".deleting-";

/// Moves `dir` aside (`.deleting-<name>` beside it, an earlier leftover removed first): what
/// it held is no crawl's from now on. `None` when there is no such directory.
fn set_aside(dir: &Path) -> std::io::Result<Option<PathBuf>> {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Ok(None);
    };
    let aside = parent.join(format!("{DELETING}{}", name.to_string_lossy()));
    if aside.exists() {
        std::fs::remove_dir_all(&aside)?;
    }
    match std::fs::rename(dir, &aside) {
        Ok(()) => Ok(Some(aside)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Removes `dirs` and what they hold: all moved aside first, so that a crawl of the same
/// name made right after starts empty even if a removal fails or is cut short (what is left
/// aside is swept when the service next lists its crawls).
fn remove_dirs(dirs: &[PathBuf]) -> Result<(), String> {
    let mut aside = Vec::new();
    for dir in dirs {
        match set_aside(dir) {
            Ok(Some(a)) => aside.push(a),
            Ok(None) => {}
            Err(e) => return Err(format!("{}: {e}", dir.display())),
        }
    }
    for a in aside {
        std::fs::remove_dir_all(&a).map_err(|e| format!("{}: {e}", a.display()))?;
    }
    Ok(())
}

/// Removes what interrupted deletes left in `root` (a `crawls` directory).
fn sweep(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(DELETING) {
            if let Err(e) = std::fs::remove_dir_all(entry.path()) {
                tracing::warn!(dir = %entry.path().display(), error = %e,
                    "cannot remove what an interrupted crawl delete left");
            }
        }
    }
}

impl Maker {
    fn shared(&self) -> bool {
        self.base.frontier.backend == FrontierBackend::Redis
    }

    /// In Redis: makes (`create`) or joins the named crawl `id`: its incarnation.
    async fn register(&self, id: &str, create: bool) -> Result<u64, String> {
        let base = &self.base.frontier;
        if base.crawl_id.contains('/') {
            return Err(format!(
                "frontier.crawl_id `{}` holds a `/`, which separates a service's crawl from its \
                 named crawls in Redis: give the service a crawl ID without one",
                base.crawl_id
            ));
        }
        let redis = |e: redis_frontier::RedisFrontierError| format!("Redis: {e}");
        if !create {
            return redis_frontier::join_crawl(&base.redis_url, &base.crawl_id, id)
                .await
                .map_err(redis)?
                .ok_or_else(|| "it is not alive in Redis (deleted, or being made)".to_owned());
        }
        match redis_frontier::create_crawl(&base.redis_url, &base.crawl_id, id)
            .await
            .map_err(redis)?
        {
            redis_frontier::Created::Alive(n) => Ok(n),
            redis_frontier::Created::Deleting => Err(format!(
                "a crawl `{id}` is being deleted; try again once it is (a DeleteCrawl of it \
                 finishes a delete that was cut short)"
            )),
        }
    }

    /// Removes `dirs` off the async threads.
    async fn remove_dirs(&self, id: &str) -> Result<(), String> {
        let dirs = self.dirs(id);
        tokio::task::spawn_blocking(move || remove_dirs(&dirs))
            .await
            .map_err(|e| e.to_string())?
    }
}

impl CrawlMaker for Maker {
    fn start<'a>(&'a self, id: &'a str, create: bool) -> MakerFuture<'a, Made> {
        Box::pin(async move {
            let incarnation = if self.shared() {
                self.register(id, create).await?
            } else {
                0
            };
            let opts = RunOptions {
                fresh: false,
                ..self.opts
            };
            let running = crate::start(self.config(id), opts)
                .await
                .map_err(|e| e.to_string())?;
            Ok(Made {
                running,
                incarnation,
            })
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> MakerFuture<'a, ()> {
        Box::pin(async move {
            if self.shared() {
                let base = &self.base.frontier;
                redis_frontier::delete_crawl(&base.redis_url, &base.crawl_id, id)
                    .await
                    .map_err(|e| format!("its keys in Redis: {e}"))?;
            }
            self.remove_dirs(id).await
        })
    }

    fn forget<'a>(&'a self, id: &'a str) -> MakerFuture<'a, ()> {
        Box::pin(self.remove_dirs(id))
    }

    fn shared(&self) -> bool {
        Maker::shared(self)
    }

    /// In Redis, the alive crawls of the service's registry; otherwise the directories of
    /// `<out_dir>/crawls`.
    fn stored(&self) -> MakerFuture<'_, Option<BTreeMap<String, u64>>> {
        Box::pin(async move {
            let base = &self.base;
            if base.frontier.backend == FrontierBackend::Redis {
                if base.frontier.crawl_id.contains('/') {
                    return Ok(Some(BTreeMap::new())); // No named crawls (see `register`).
                }
                return redis_frontier::named_crawls(
                    &base.frontier.redis_url,
                    &base.frontier.crawl_id,
                )
                .await
                .map_err(|e| format!("the crawls in Redis: {e}"));
            }
            let dir = base.crawl.out_dir.join("crawls");
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Ok(Some(BTreeMap::new()))
                }
                Err(e) => return Err(format!("{}: {e}", dir.display())),
            };
            let mut ids = BTreeMap::new();
            for entry in entries {
                let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
                if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                let name = entry.file_name().to_string_lossy().into_owned();
                if !name.starts_with(DELETING) {
                    ids.insert(name, 0);
                }
            }
            Ok(Some(ids))
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
    fn removed_directories_are_gone_and_missing_ones_are_fine() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("crawls").join("x");
        std::fs::create_dir_all(dir.join("state")).unwrap();
        std::fs::write(dir.join("state").join("f"), b"1").unwrap();
        let missing = tmp.path().join("spill").join("crawls").join("x");
        remove_dirs(&[dir.clone(), missing]).unwrap();
        assert!(!dir.exists());
        let left = std::fs::read_dir(tmp.path().join("crawls"))
            .unwrap()
            .count();
        assert_eq!(left, 0);
        remove_dirs(&[dir]).unwrap();
    }

    #[test]
    fn what_an_interrupted_delete_left_is_swept_and_not_listed() {
        let tmp = tempfile::tempdir().unwrap();
        let mut base = CrawlConfig::default();
        base.crawl.out_dir = tmp.path().to_path_buf();
        let crawls = tmp.path().join("crawls");
        for d in ["kept", ".deleting-gone"] {
            std::fs::create_dir_all(crawls.join(d).join("state")).unwrap();
        }
        std::fs::write(crawls.join("a-file"), b"").unwrap();
        let opts = RunOptions {
            progress: engine::ProgressMode::Log,
            fresh: false,
            serve: true,
        };
        let maker = Maker::new(base, opts);
        assert!(!crawls.join(".deleting-gone").exists());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let ids = rt.block_on(maker.stored()).unwrap().unwrap();
        assert_eq!(ids.into_keys().collect::<Vec<_>>(), ["kept"]);
    }
}
