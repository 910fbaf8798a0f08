//! Named crawls of one service ([`Crawls`]): the crawl the service was started with, named
//! `DEFAULT`, and those its clients create by naming them (the url-frontier API's crawl IDs).
//!
//! Design choices:
//! - **Each named crawl is a whole crawl** (a [`Running`]): its own visited set, queues,
//!   politeness, state and output, made by a [`CrawlMaker`] (the `launch` crate derives its
//!   configuration from the started crawl's). Crawls share the process and nothing else.
//! - **Only writes create a crawl**: [`Crawls::get`] of a crawl nobody made answers `None`
//!   (the API answers as for an empty crawl), [`Crawls::get_or_create`] makes it — or takes
//!   it up from what an earlier run stored.
//! - **Bounded**: at most `service.max_crawls` besides `DEFAULT`; one more is refused.
//! - **A delete is whole and serialised with creation**: the crawl is unlisted, stopped (its
//!   tasks drained, its state checkpointed), retired (calls that found it before it was
//!   unlisted end, later ones are refused: [`Control::retire`]) and then its files or keys
//!   removed, all under the lock creations take, so a put racing the delete makes a new,
//!   empty crawl only after the old one is gone.
//! - **Restored at start** ([`Crawls::restore`]): the crawls an earlier run left are taken up
//!   before the service answers, so their figures and queues are there before any put.
//! - **Replicas converge on positive evidence** ([`Crawls::sync`], every few seconds): with a
//!   shared frontier, each process joins the crawls others made (it never makes one it only
//!   read of, so a crawl deleted meanwhile stays deleted) and lets go of those the shared
//!   record says were deleted or made again (an incarnation of its own) — stopped, retired,
//!   its own files removed; a record that was lost lets go of nothing.
//! - **Generations**: each crawl made gets a new number, so a layer that keeps its own state
//!   per crawl (the gRPC API's held URLs) can tell a crawl from a later one of the same name.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::sync::lock;
use crate::{Control, EngineError, Running, Summary};

/// The name of the crawl a service was started with (and of a request naming none).
pub const DEFAULT_CRAWL: &str = "DEFAULT";

/// The longest crawl ID.
pub const MAX_ID_LEN: usize = 64;

/// What a [`CrawlMaker`] call returns: its result, or why it failed.
pub type MakerFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

/// Makes and removes named crawls (implemented by the `launch` crate, which knows the
/// frontiers and the started crawl's configuration).
pub trait CrawlMaker: Send + Sync + fmt::Debug {
    /// Starts the crawl `id`: a new one, or the one an earlier run (or, with a shared
    /// frontier, another process) left. Without `create` it only joins a crawl that is
    /// there: with a shared frontier, one alive in it (a crawl deleted meanwhile is not made
    /// again).
    fn start<'a>(&'a self, id: &'a str, create: bool) -> MakerFuture<'a, Made>;
    /// Removes what the stopped crawl `id` left: its files, its keys in a shared frontier.
    fn remove<'a>(&'a self, id: &'a str) -> MakerFuture<'a, ()>;
    /// The crawls earlier runs (or, with a shared frontier, other processes) left, with
    /// their incarnations (unchecked: [`Crawls::restore`] checks the IDs); `None` when a
    /// shared frontier's record of them was lost (then nothing is let go).
    fn stored(&self) -> MakerFuture<'_, Option<BTreeMap<String, u64>>>;
    /// Removes this process's own files of crawl `id`, which another process deleted from
    /// the shared frontier.
    fn forget<'a>(&'a self, id: &'a str) -> MakerFuture<'a, ()>;
    /// Whether the crawls are shared with other processes (a frontier in Redis): then they
    /// are synchronised ([`Crawls::sync`]).
    fn shared(&self) -> bool;
}

/// A crawl a [`CrawlMaker`] started.
#[derive(Debug)]
pub struct Made {
    /// The crawl.
    pub running: Running,
    /// Which crawl of that ID it is in a shared frontier (0 in a process of its own): a
    /// process lets go of its crawl when the shared record names another.
    pub incarnation: u64,
}

/// One crawl of the service.
#[derive(Debug, Clone)]
pub struct Crawl {
    /// Its ID ([`DEFAULT_CRAWL`] for the started one).
    pub id: Arc<str>,
    /// Which crawl of that name (0 for `DEFAULT`; a crawl deleted and made again gets a new
    /// number).
    pub generation: u64,
    /// Its incarnation in a shared frontier ([`Made::incarnation`]).
    pub incarnation: u64,
    /// Its handle.
    pub control: Control,
}

/// Why a crawl could not be had or deleted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CrawlsError {
    /// Not a crawl ID.
    #[error(
        "crawl ID `{0}`: expected 1 to 64 ASCII letters, digits, `.`, `_` or `-`, starting \
         with a letter or a digit"
    )]
    BadId(String),
    /// `service.max_crawls` reached.
    #[error(
        "this service holds {0} crawls besides DEFAULT (service.max_crawls); delete one \
         before making another"
    )]
    Full(usize),
    /// This service was built without a maker (it holds `DEFAULT` only).
    #[error("this service holds the crawl DEFAULT only")]
    Fixed,
    /// The service is stopping: no crawl is made.
    #[error("the service is stopping")]
    Stopping,
    /// The maker failed to start the crawl.
    #[error("the crawl `{id}` could not start: {why}")]
    Start {
        /// The crawl ID.
        id: String,
        /// Why.
        why: String,
    },
    /// The crawls earlier runs left could not be listed.
    #[error("the stored crawls could not be listed: {0}")]
    List(String),
    /// The crawl stopped, but what it left could not be removed.
    #[error("the crawl `{id}` is stopped but what it stored could not be removed: {why}")]
    Remove {
        /// The crawl ID.
        id: String,
        /// Why.
        why: String,
    },
}

/// A named crawl's running part.
struct Started {
    stop: CancellationToken,
    task: JoinHandle<Result<Summary, EngineError>>,
}

/// The crawls of one service: `DEFAULT` and the named ones.
pub struct Crawls {
    default: Crawl,
    maker: Option<Arc<dyn CrawlMaker>>,
    max: usize,
    generation: AtomicU64,
    /// The crawls by ID, for lookups (`DEFAULT` not among them).
    listed: RwLock<BTreeMap<Arc<str>, Crawl>>,
    /// The named crawls' tasks; held across a creation or a delete.
    started: tokio::sync::Mutex<BTreeMap<Arc<str>, Started>>,
    /// Paused by [`Crawls::set_paused`]: crawls made later start paused too.
    paused: AtomicBool,
    /// Orders a pause against a crawl being listed.
    pausing: std::sync::Mutex<()>,
    closed: AtomicBool,
}

impl fmt::Debug for Crawls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Crawls")
            .field("ids", &self.ids())
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

/// `id` as a crawl ID: [`DEFAULT_CRAWL`] for an empty one; 1 to [`MAX_ID_LEN`] ASCII
/// letters, digits, `.`, `_` or `-`, starting with a letter or a digit (safe as a directory
/// name and inside a Redis key).
pub fn crawl_id(id: &str) -> Result<&str, CrawlsError> {
    if id.is_empty() {
        return Ok(DEFAULT_CRAWL);
    }
    let ok = id.len() <= MAX_ID_LEN
        && id.as_bytes()[0].is_ascii_alphanumeric()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(id)
    } else {
        Err(CrawlsError::BadId(id.chars().take(80).collect()))
    }
}

impl Crawls {
    /// The crawls of a service started with `default`; `maker` makes the named ones (none:
    /// `DEFAULT` only), at most `max` of them at once.
    pub fn new(default: Control, maker: Option<Arc<dyn CrawlMaker>>, max: usize) -> Self {
        Self {
            default: Crawl {
                id: Arc::from(DEFAULT_CRAWL),
                generation: 0,
                incarnation: 0,
                control: default,
            },
            maker,
            max,
            generation: AtomicU64::new(1),
            listed: RwLock::default(),
            started: tokio::sync::Mutex::default(),
            paused: AtomicBool::new(false),
            pausing: std::sync::Mutex::default(),
            closed: AtomicBool::new(false),
        }
    }

    /// The crawl the service was started with.
    pub fn default_crawl(&self) -> &Crawl {
        &self.default
    }

    fn listed(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<Arc<str>, Crawl>> {
        self.listed.read().unwrap_or_else(|e| e.into_inner())
    }

    fn listed_mut(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<Arc<str>, Crawl>> {
        self.listed.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The IDs: `DEFAULT` first, then the named crawls by name.
    pub fn ids(&self) -> Vec<String> {
        std::iter::once(DEFAULT_CRAWL.to_owned())
            .chain(self.listed().keys().map(|k| k.to_string()))
            .collect()
    }

    /// Every crawl: `DEFAULT` first, then by name.
    pub fn all(&self) -> Vec<Crawl> {
        std::iter::once(self.default.clone())
            .chain(self.listed().values().cloned())
            .collect()
    }

    /// The crawl `id` names (empty: `DEFAULT`), `None` when there is none.
    pub fn get(&self, id: &str) -> Result<Option<Crawl>, CrawlsError> {
        let id = crawl_id(id)?;
        if id == DEFAULT_CRAWL {
            return Ok(Some(self.default.clone()));
        }
        Ok(self.listed().get(id).cloned())
    }

    /// The crawl `id` names, made (or taken up from what an earlier run stored) when there
    /// is none.
    pub async fn get_or_create(&self, id: &str) -> Result<Crawl, CrawlsError> {
        self.start(id, true).await
    }

    /// The crawl `id` names, or the one stored, joined (see [`CrawlMaker::start`]).
    async fn start(&self, id: &str, create: bool) -> Result<Crawl, CrawlsError> {
        if let Some(crawl) = self.get(id)? {
            return Ok(crawl);
        }
        let id = crawl_id(id)?;
        let maker = self.maker.as_ref().ok_or(CrawlsError::Fixed)?;
        let mut started = self.started.lock().await;
        if let Some(crawl) = self.listed().get(id) {
            return Ok(crawl.clone()); // Made while this call waited.
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(CrawlsError::Stopping);
        }
        if started.len() >= self.max {
            return Err(CrawlsError::Full(started.len()));
        }
        let made = maker
            .start(id, create)
            .await
            .map_err(|why| CrawlsError::Start {
                id: id.to_owned(),
                why,
            })?;
        let running = made.running;
        let crawl = Crawl {
            id: Arc::from(id),
            generation: self.generation.fetch_add(1, Ordering::Relaxed),
            incarnation: made.incarnation,
            control: running.control(),
        };
        let stop = CancellationToken::new();
        let task = tokio::spawn(running.finish(stop.clone()));
        started.insert(crawl.id.clone(), Started { stop, task });
        self.listed_mut().insert(crawl.id.clone(), crawl.clone());
        {
            // After it is listed: a pause from now on finds it, one before is seen here.
            let _order = lock(&self.pausing);
            if self.paused.load(Ordering::SeqCst) {
                crawl.control.pause();
            }
        }
        tracing::info!(crawl = id, "crawl made");
        Ok(crawl)
    }

    /// Takes up the crawls earlier runs left (up to `service.max_crawls`, by name), or with
    /// `fresh` removes them. Answers the IDs taken up; a crawl that cannot start (or be
    /// removed) is logged and left as it is stored. `Err` only when they cannot be listed.
    pub async fn restore(&self, fresh: bool) -> Result<Vec<String>, CrawlsError> {
        let Some(maker) = &self.maker else {
            return Ok(Vec::new());
        };
        let stored = maker.stored().await.map_err(CrawlsError::List)?;
        let mut restored = Vec::new();
        for id in stored.unwrap_or_default().into_keys() {
            match crawl_id(&id) {
                Ok(DEFAULT_CRAWL) | Err(_) => {
                    tracing::warn!(crawl = %id.escape_debug(), "not a crawl ID: left alone");
                    continue;
                }
                Ok(_) => {}
            }
            if fresh {
                match maker.remove(&id).await {
                    Ok(()) => tracing::info!(crawl = %id, "crawl removed (--fresh)"),
                    Err(why) => tracing::warn!(crawl = %id, error = %why, "crawl not removed"),
                }
                continue;
            }
            match self.start(&id, false).await {
                Ok(_) => restored.push(id),
                Err(e) => {
                    tracing::warn!(crawl = %id, error = %e, "crawl not taken up");
                }
            }
        }
        Ok(restored)
    }

    /// With a shared frontier: takes up the crawls other processes made and lets go of those
    /// the shared record says were deleted or made again (see the module's header). It acts
    /// on positive evidence only: a crawl missing from a lost record is kept.
    pub async fn sync(&self) -> Result<(), CrawlsError> {
        let Some(maker) = self.maker.as_ref().filter(|m| m.shared()) else {
            return Ok(());
        };
        let Some(stored) = maker.stored().await.map_err(CrawlsError::List)? else {
            return Ok(());
        };
        let listed: Vec<Crawl> = self.listed().values().cloned().collect();
        for crawl in listed {
            if stored.get(&*crawl.id) != Some(&crawl.incarnation) {
                self.let_go(maker.as_ref(), &crawl).await;
            }
        }
        for id in stored.keys() {
            if matches!(crawl_id(id), Ok(i) if i != DEFAULT_CRAWL) && self.get(id)?.is_none() {
                if let Err(e) = self.start(id, false).await {
                    tracing::debug!(crawl = %id, error = %e, "crawl not taken up");
                }
            }
        }
        Ok(())
    }

    /// Lets go of `crawl`, which another process deleted: unlisted (if it still is that
    /// crawl), stopped, retired, and this process's files of it removed.
    async fn let_go(&self, maker: &dyn CrawlMaker, crawl: &Crawl) {
        let mut started = self.started.lock().await;
        {
            let mut listed = self.listed_mut();
            if listed.get(&crawl.id).map(|c| c.generation) != Some(crawl.generation) {
                return;
            }
            listed.remove(&crawl.id);
        }
        if let Some(s) = started.remove(&crawl.id) {
            stop(&crawl.id, s).await;
        }
        crawl.control.retire().await;
        if let Err(why) = maker.forget(&crawl.id).await {
            tracing::warn!(crawl = %crawl.id, error = %why, "files of a deleted crawl left");
        }
        tracing::info!(crawl = %crawl.id, "crawl deleted by another process: let go");
    }

    /// Runs [`Crawls::sync`] every `period` until `stop` (nothing without a shared frontier).
    pub async fn sync_every(self: Arc<Self>, period: std::time::Duration, stop: CancellationToken) {
        if !self.maker.as_ref().is_some_and(|m| m.shared()) {
            return;
        }
        let mut said = false;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(period) => {}
            }
            match self.sync().await {
                Ok(()) => said = false,
                Err(e) if !said => {
                    said = true;
                    tracing::warn!(error = %e, "the shared crawls could not be read; retrying");
                }
                Err(_) => {}
            }
        }
    }

    /// Pauses (or resumes) every crawl, and those made later.
    pub fn set_paused(&self, paused: bool) {
        let _order = lock(&self.pausing);
        self.paused.store(paused, Ordering::SeqCst);
        for crawl in self.all() {
            if paused {
                crawl.control.pause();
            } else {
                crawl.control.resume();
            }
        }
    }

    /// Deletes the named crawl `id`: unlisted, stopped, and what it stored removed. Answers
    /// how many URLs it held (queued or out), `None` when this process held no such crawl
    /// (what is stored of it is removed all the same). `DEFAULT`
    /// is not deleted here (the service runs on it): its callers empty its queues.
    pub async fn delete(&self, id: &str) -> Result<Option<u64>, CrawlsError> {
        let id = crawl_id(id)?;
        if id == DEFAULT_CRAWL {
            return Ok(None);
        }
        let mut started = self.started.lock().await;
        let Some(crawl) = self.listed_mut().remove(id) else {
            // Not here: a delete cut short is finished, and what is stored of a crawl not
            // taken up (or, shared, alive in another process only) goes.
            if let Some(maker) = &self.maker {
                maker.remove(id).await.map_err(|why| CrawlsError::Remove {
                    id: id.to_owned(),
                    why,
                })?;
            }
            return Ok(None);
        };
        let held = match crawl.control.frontier_stats().await {
            Ok(s) => s.queued + s.in_flight,
            Err(_) => 0,
        };
        if let Some(s) = started.remove(id) {
            stop(id, s).await;
        }
        // Calls that found the crawl before it was unlisted end before its data goes.
        crawl.control.retire().await;
        drop(crawl);
        if let Some(maker) = &self.maker {
            maker.remove(id).await.map_err(|why| CrawlsError::Remove {
                id: id.to_owned(),
                why,
            })?;
        }
        tracing::info!(crawl = id, urls = held, "crawl deleted");
        Ok(Some(held))
    }

    /// Stops every named crawl (their state kept), at the service's end; none is made after.
    pub async fn finish_all(&self) {
        self.closed.store(true, Ordering::Release);
        let mut started = self.started.lock().await;
        self.listed_mut().clear();
        for (id, s) in std::mem::take(&mut *started) {
            stop(&id, s).await;
        }
    }
}

/// Stops one named crawl and waits for its end.
async fn stop(id: &str, s: Started) {
    s.stop.cancel();
    match s.task.await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::warn!(crawl = id, error = %e, "the crawl ended with an error"),
        Err(e) => tracing::warn!(crawl = id, error = %e, "the crawl's task failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crawl_ids_are_safe_names_and_empty_is_the_default() {
        assert_eq!(crawl_id("").unwrap(), DEFAULT_CRAWL);
        for ok in ["DEFAULT", "news", "a.b_c-1", "9", &"x".repeat(64)] {
            assert_eq!(crawl_id(ok).unwrap(), ok);
        }
        for bad in [
            "-x",
            ".hidden",
            "..",
            "a/b",
            "a b",
            "a{b}",
            "é",
            "a*",
            &"x".repeat(65),
        ] {
            assert!(matches!(crawl_id(bad), Err(CrawlsError::BadId(_))), "{bad}");
        }
    }
}
