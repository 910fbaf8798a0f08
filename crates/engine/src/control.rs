//! [`Control`]: what a running crawl offers its service — status, seeds, pause and resume,
//! hosts and their controls, external leases, the event stream and the figures `/metrics`
//! shows. The HTTP layer (`crates/service`) only translates; every rule lives here or in the
//! frontier, so a call over HTTP does exactly what the command line or a worker would.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use frontier::{
    Admission, Canonicalizer, HostControls, HostInfo, HostPage, HostQuery, Link, Recrawled,
};
use tokio::sync::broadcast;
use url::Url;

use crate::leases::{Completed, Completion, ExternalLeases, Leased};
use crate::metrics::HistogramSnapshot;
use crate::output::Status;
use crate::record::Recorder;
use crate::report::{live_status, Report};
use crate::sync::lock;

/// What became of one seed given to a running crawl.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeedResult {
    /// New and in scope: queued.
    Admitted,
    /// The crawl has seen it.
    Duplicate,
    /// Refused by a scope rule (its name).
    OutOfScope(&'static str),
    /// Not a crawlable URL, and why.
    Invalid(String),
}

/// What became of one URL to forget on a running crawl.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForgetResult {
    /// It was done: it is queued again and will be fetched.
    Requeued,
    /// It is still queued or in flight: it will be fetched anyway.
    Queued,
    /// This crawl never admitted it.
    Unknown,
    /// Not a crawlable URL, and why.
    Invalid(String),
}

/// One host as the service shows it: the frontier's view (its `errors` counting failed
/// robots.txt fetches of this process too) and the robots.txt verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct HostView {
    /// The frontier's figures.
    pub info: HostInfo,
    /// `unknown`, `fetching`, `allow_all`, `rules` or `unreachable`.
    pub robots: &'static str,
}

/// Everything `/metrics` shows, read at once.
#[derive(Debug, Clone)]
pub struct MetricsSnapshot {
    /// Records by status class (`1xx` … `5xx`, `error` for no response).
    pub fetches_by_class: BTreeMap<String, u64>,
    /// Fetch durations.
    pub latency: HistogramSnapshot,
    /// Body bytes read.
    pub bytes: u64,
    /// Retries scheduled.
    pub retries: u64,
    /// URLs robots.txt disallowed.
    pub robots_disallowed: u64,
    /// The frontier's counters.
    pub frontier: frontier::Stats,
    /// Uncommitted state events.
    pub state_backlog: u64,
    /// Checkpoints committed.
    pub checkpoints: u64,
    /// Seconds spent in checkpoints (output sync included), and the last one's.
    pub checkpoint_seconds: f64,
    pub last_checkpoint_seconds: f64,
    /// External leases out.
    pub leases_out: u64,
    /// External leases that expired.
    pub leases_expired: u64,
    /// Records written.
    pub pages: u64,
    /// Frontier calls that failed, by kind (`unavailable`, `full`, `failed`).
    pub frontier_failures: Vec<(&'static str, u64)>,
    /// Seconds the frontier has been failing now (0: it answers).
    pub frontier_unavailable_secs: f64,
    /// The frontier's lost leases: expired before this process wrote their records.
    pub leases_lost: u64,
    /// `[recrawl]`: refetches recorded that found the page changed, and unchanged.
    pub refetches_changed: u64,
    pub refetches_unchanged: u64,
    /// `[recrawl]`: 304s to conditional requests, and the body bytes they saved (the last full
    /// responses' sizes).
    pub not_modified: u64,
    pub not_modified_bytes_saved: u64,
    /// The memory governor, when on (`crawl.max_memory_mb`).
    pub memory: Option<crate::output::MemoryStatus>,
}

/// The handle a service holds on a running crawl: the reports' sources (counters, frontier,
/// run, state), the external leases, the recorder's event stream and robots.txt verdicts.
#[derive(Debug, Clone)]
pub struct Control {
    pub(crate) report: Arc<Report>,
    pub(crate) leases: ExternalLeases,
    pub(crate) recorder: Recorder,
    pub(crate) canon: Arc<Canonicalizer>,
    /// `service.allow_private_seeds`: an API seed's addresses pass the SSRF guard.
    pub(crate) allow_private_seeds: bool,
    /// `service.lease_secs`: an external lease's default length.
    pub(crate) lease_secs: u64,
    /// `[recrawl]`.
    pub(crate) recrawl: recrawl::Policy,
}

/// What `POST /api/v1/recrawl` did with a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecrawlResult {
    /// Fetched before: due at the time asked now.
    Scheduled,
    /// Queued or in flight already: fetched soon anyway.
    Queued,
    /// This crawl never admitted it.
    NeverSeen,
    /// Not a crawlable URL, and why.
    Invalid(String),
}

impl Control {
    /// `status.json`'s content, now.
    pub async fn status(&self) -> Status {
        let stats = self.report.frontier.stats().await;
        live_status(&self.report, &stats)
    }

    /// Offers seeds as the command line's are (canonicalised, widening the scope); says
    /// what became of each.
    pub async fn add_seeds(&self, urls: &[String]) -> Vec<SeedResult> {
        self.try_add_seeds(urls).await.unwrap_or_else(|| {
            urls.iter()
                .map(|_| SeedResult::Invalid("the crawl is stopping".into()))
                .collect()
        })
    }

    /// [`add_seeds`](Self::add_seeds), or `None` when the frontier took none of them (the
    /// crawl is stopping): the caller may offer them again elsewhere or later.
    pub async fn try_add_seeds(&self, urls: &[String]) -> Option<Vec<SeedResult>> {
        self.offer_seeds(urls, self.allow_private_seeds, Vec::new(), None, false)
            .await
    }

    /// URLs from a client that fetches them itself (url-frontier's puts): taken as seeds
    /// are — canonicalised, widening the scope — but never let through the SSRF guard of
    /// the built-in workers, whatever `service.allow_private_seeds` says (a client's link is
    /// not an operator's seed). `None` when the frontier took none of them (the crawl is
    /// stopping: a URL taken now could miss the crawl state). With `due` (Unix seconds: a
    /// client's date), those admitted sleep until then ([`frontier::Link::due`]); `infos`
    /// (one per URL, or none) are kept with them and handed back ([`frontier::Link::client`]).
    /// A URL without fields keeps the string put where canonicalisation changes it (so it
    /// comes back as put): the fields are made here, for those URLs alone.
    pub async fn offer_from_client(
        &self,
        urls: &[String],
        infos: Vec<Option<Box<frontier::ClientInfo>>>,
        due: Option<u64>,
    ) -> Option<Vec<SeedResult>> {
        self.offer_seeds(urls, false, infos, due, true).await
    }

    async fn offer_seeds(
        &self,
        urls: &[String],
        allow_private: bool,
        infos: Vec<Option<Box<frontier::ClientInfo>>>,
        due: Option<u64>,
        keep_as_put: bool,
    ) -> Option<Vec<SeedResult>> {
        let mut infos = infos.into_iter();
        if self.report.run.stopped() {
            return None;
        }
        let mut results: Vec<Option<SeedResult>> = Vec::with_capacity(urls.len());
        let mut links = Vec::new();
        for raw in urls {
            let mut client = infos.next().flatten();
            match self.check_seed(raw) {
                Ok((url, canonical)) => {
                    if keep_as_put && client.is_none() && canonical.as_str() != raw {
                        client = frontier::ClientInfo::new(raw, Vec::new()).ok();
                    }
                    if allow_private {
                        // Names are resolved when the client connects to them.
                        let guard = self.leases.fetching.fetcher.guard();
                        for origin in
                            crate::operator_origins(std::slice::from_ref(&url), &self.canon)
                        {
                            guard.allow_origin(&origin);
                        }
                    }
                    links.push(Link {
                        due,
                        client,
                        ..Link::new(url, 0)
                    });
                    results.push(None);
                }
                Err(why) => results.push(Some(SeedResult::Invalid(why))),
            }
        }
        let admissions = if links.is_empty() {
            Vec::new()
        } else {
            self.report
                .frontier
                .with_frontier("seed", |f| f.seed(links.clone()))
                .await?
        };
        let mut admissions = admissions.into_iter();
        let results = results
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| match admissions.next() {
                    Some(Admission::Admitted) => SeedResult::Admitted,
                    Some(Admission::Duplicate) => SeedResult::Duplicate,
                    Some(Admission::OutOfScope(frontier::OutOfScope::Invalid)) => {
                        SeedResult::Invalid("not a crawlable URL".into())
                    }
                    Some(Admission::OutOfScope(rule)) => SeedResult::OutOfScope(rule.name()),
                    None => SeedResult::Invalid("the crawl is stopping".into()),
                })
            })
            .collect();
        Some(results)
    }

    /// Why a host's `recrawl_secs` cannot be set, if it cannot: the crawl keeps no schedule.
    /// (A value outside the crawl's bounds is clamped to them when it applies.)
    pub fn check_host_recrawl(&self) -> Result<(), String> {
        if self.recrawl.schedule == recrawl::Schedule::None {
            return Err("recrawl.policy is \"none\": no URL is scheduled again".into());
        }
        Ok(())
    }

    /// Makes fetched URLs due again at `at` (Unix seconds; now when `None` or past). `Err`
    /// when the crawl keeps no schedule or its frontier refuses.
    pub async fn recrawl(
        &self,
        urls: &[String],
        at: Option<u64>,
    ) -> Result<Vec<RecrawlResult>, String> {
        if self.recrawl.schedule == recrawl::Schedule::None {
            return Err(
                "recrawl.policy is \"none\": no URL is scheduled again (forget queues one)".into(),
            );
        }
        self.move_due(urls, at).await
    }

    /// As [`recrawl`](Self::recrawl), whatever the crawl's schedule: a client's date for URLs
    /// that sleep because a client gave them one (without a schedule, no other URL sleeps).
    pub async fn move_due(
        &self,
        urls: &[String],
        at: Option<u64>,
    ) -> Result<Vec<RecrawlResult>, String> {
        let mut results: Vec<Option<RecrawlResult>> = Vec::with_capacity(urls.len());
        let mut asked = Vec::new();
        for raw in urls {
            match self.canonical(raw) {
                Ok(url) => {
                    asked.push(url);
                    results.push(None);
                }
                Err(why) => results.push(Some(RecrawlResult::Invalid(why))),
            }
        }
        let answers = self
            .report
            .frontier
            .with_frontier("recrawl", |f| f.recrawl(asked.clone(), at))
            .await
            .ok_or("the crawl is stopping")?;
        let mut answers = answers.into_iter();
        Ok(results
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| match answers.next() {
                    Some(Recrawled::Scheduled) => RecrawlResult::Scheduled,
                    Some(Recrawled::Queued) => RecrawlResult::Queued,
                    Some(Recrawled::NeverSeen) | None => RecrawlResult::NeverSeen,
                })
            })
            .collect())
    }

    /// An operator's URL in the crawl's canonical form, or why it is not a crawlable URL.
    pub fn canonical(&self, raw: &str) -> Result<Url, String> {
        self.check_seed(raw).map(|(_, canonical)| canonical)
    }

    /// `raw` parsed, and its canonical form, or why it is not a URL this crawl takes.
    fn check_seed(&self, raw: &str) -> Result<(Url, Url), String> {
        let url = Url::parse(raw.trim()).map_err(|e| e.to_string())?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err("only http and https are crawled".into());
        }
        let canonical = self
            .canon
            .canonicalize(url.as_str(), None)
            .map_err(|e| e.to_string())?;
        Ok((url, canonical))
    }

    /// Like `crawler forget` on the running crawl: each URL (canonicalised with the crawl's
    /// rules) that was done is queued again. Needs the crawl state (`crawl.persist`), which
    /// knows what is done; `Err` says why when there is none or it cannot be read.
    pub async fn forget(&self, urls: &[String]) -> Result<Vec<ForgetResult>, String> {
        let Some(store) = self.report.store.clone() else {
            return Err("forgetting needs the crawl state (crawl.persist = true)".into());
        };
        let mut results: Vec<Option<ForgetResult>> = Vec::with_capacity(urls.len());
        let mut asked = Vec::new();
        for raw in urls {
            match self.canonical(raw) {
                Ok(url) => {
                    let url = url.to_string();
                    let fp = frontier::fingerprint(&url);
                    asked.push((url, fp));
                    results.push(None);
                }
                Err(why) => results.push(Some(ForgetResult::Invalid(why))),
            }
        }
        let lookup = {
            let asked = asked.clone();
            tokio::task::spawn_blocking(move || store.forget_lookup(&asked))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?
        };
        let mut again = Vec::new();
        let mut found = Vec::with_capacity(asked.len());
        for ((url, _), state) in asked.iter().zip(lookup) {
            found.push(match state {
                store::LiveForget::Done { depth } => match Url::parse(url) {
                    Ok(u) => {
                        again.push(Link::new(u, depth));
                        ForgetResult::Requeued
                    }
                    Err(e) => ForgetResult::Invalid(e.to_string()),
                },
                store::LiveForget::Queued => ForgetResult::Queued,
                store::LiveForget::NeverSeen => ForgetResult::Unknown,
            });
        }
        if !again.is_empty()
            && self
                .report
                .frontier
                .with_frontier("requeue", |f| f.requeue(again.clone()))
                .await
                .is_none()
        {
            return Err("the crawl is stopping".into());
        }
        let mut found = found.into_iter();
        Ok(results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| found.next().unwrap_or(ForgetResult::Unknown)))
            .collect())
    }

    /// No new fetch starts until [`resume`](Self::resume); fetches in flight finish.
    pub fn pause(&self) {
        self.report.run.hold(true);
        tracing::info!("paused by the operator");
    }

    /// Fetching starts again.
    pub fn resume(&self) {
        self.report.run.hold(false);
        tracing::info!("resumed by the operator");
    }

    /// Retires the crawl before its data is removed (a deleted named crawl, once it is
    /// stopped): every frontier call from this process is refused from now on, and this
    /// waits for the calls under way to end.
    pub async fn retire(&self) {
        self.report.frontier.retire().await;
    }

    /// Whether an operator has paused the crawl ([`pause`](Self::pause)).
    pub fn paused(&self) -> bool {
        self.report.run.held()
    }

    /// A page of hosts as the frontier sees them; `None` when it does not answer.
    pub async fn host_page(&self, query: HostQuery) -> Option<HostPage> {
        self.report
            .frontier
            .read_frontier("hosts", |f| f.hosts(query.clone()))
            .await
    }

    /// A page of hosts with their robots.txt state.
    pub async fn hosts(&self, query: HostQuery) -> Option<(Vec<HostView>, HostPage)> {
        let mut page = self.host_page(query).await?;
        let views = std::mem::take(&mut page.hosts)
            .into_iter()
            .map(|mut info| {
                let (robots, _) = self.leases.fetching.robots.state_of(&info.host);
                // A robots.txt that could not be had is an error of its host too.
                info.errors += lock(&self.report.counters.robots_failures)
                    .get(&info.host)
                    .copied()
                    .unwrap_or(0);
                HostView { info, robots }
            })
            .collect();
        Some((views, page))
    }

    /// Changes a host's limits; `false` if the crawl knows no such host.
    pub async fn set_host(&self, host: &str, controls: HostControls) -> bool {
        self.report
            .frontier
            .with_frontier("set_host", |f| f.set_host(host, controls.clone()))
            .await
            .unwrap_or(false)
    }

    /// Sets the delay of every host without its own ([`Frontier::set_default_delay`]);
    /// `false` when the frontier did not answer.
    ///
    /// [`Frontier::set_default_delay`]: frontier::Frontier::set_default_delay
    pub async fn set_default_delay(&self, delay: Duration) -> bool {
        self.report
            .frontier
            .with_frontier("set_default_delay", |f| f.set_default_delay(delay))
            .await
            .is_some()
    }

    /// Drops every URL queued for `host` or asleep in its queue — with `days` > 0 those
    /// admitted more than `days` days ago only ([`Frontier::delete_queue`]): how many, 0 for
    /// an unknown host; `None` when the frontier did not answer.
    ///
    /// [`Frontier::delete_queue`]: frontier::Frontier::delete_queue
    pub async fn delete_queue(&self, host: &str, days: u32) -> Option<u64> {
        self.report
            .frontier
            .with_frontier("delete_queue", |f| f.delete_queue(host, days))
            .await
    }

    /// Leases up to `max` due URLs to an external fetcher for `lease_secs` (the service's
    /// default when `None`).
    pub async fn lease(&self, max: usize, lease_secs: Option<u64>) -> Vec<Leased> {
        let secs = lease_secs.unwrap_or(self.lease_secs);
        self.leases
            .lease(max, secs.clamp(1, 86_400), true, None)
            .await
    }

    /// As [`lease`](Self::lease), for a client that decides the SSRF guard's and robots.txt's
    /// questions itself (a url-frontier client): every due URL is handed out, unchecked; of
    /// the queue `key` (a host's politeness key) alone when given.
    pub async fn lease_unchecked(
        &self,
        max: usize,
        lease_secs: u64,
        key: Option<&str>,
    ) -> Vec<Leased> {
        self.leases
            .lease(max, lease_secs.clamp(1, 86_400), false, key)
            .await
    }

    /// Ends the external leases whose hold has passed, now rather than when the reaper next
    /// looks: a client's figures read next count their URLs as queued, not held.
    pub async fn release_expired(&self) {
        self.leases.release_expired(false).await;
    }

    /// Finishes lease `id` as fetched by its client, who keeps the record: the URL is done
    /// (a page, for the budgets) and due again at `due_at` (Unix seconds) when given, with a
    /// recrawl schedule or without; then with `client`'s string and metadata in place of
    /// those it was put with, when given. `false` when no such lease is out (expired, or
    /// finished).
    pub async fn finish_by_client(
        &self,
        id: u64,
        due_at: Option<u64>,
        client: Option<Box<frontier::ClientInfo>>,
    ) -> bool {
        self.leases.finish_by_client(id, due_at, client).await
    }

    /// The frontier's own figures now (what `status` is made from), or why it cannot give
    /// them (a shared frontier's Redis is unreachable).
    pub async fn frontier_stats(&self) -> Result<frontier::Stats, String> {
        self.report
            .frontier
            .try_stats()
            .await
            .map_err(|e| e.to_string())
    }

    /// Takes an external fetcher's results.
    pub async fn complete(&self, completions: Vec<Completion>) -> Vec<Completed> {
        let mut out = Vec::with_capacity(completions.len());
        for c in completions {
            out.push(self.leases.complete(c).await);
        }
        out
    }

    /// The newest `n` error records (no response, or a status of 400 or more), newest
    /// first; at most [`crate::recent::RECENT_ERRORS`] are kept.
    pub fn recent_errors(&self, n: usize) -> Vec<Arc<crate::output::PageRecord>> {
        self.report.counters.recent_errors.newest(n)
    }

    /// Every record written from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<crate::output::PageRecord>> {
        self.recorder.events.subscribe()
    }

    /// Whether the crawl is stopping (the service should stop too).
    pub fn stopping(&self) -> bool {
        self.report.run.stopped()
    }

    /// The figures `/metrics` shows; no per-host work.
    pub async fn metrics(&self) -> MetricsSnapshot {
        let r = &self.report;
        let c = &r.counters;
        let mut fetches_by_class: BTreeMap<String, u64> = BTreeMap::new();
        for (status, n) in lock(&c.by_status).iter() {
            let class = match status.as_bytes().first() {
                Some(d @ b'1'..=b'5') if status.len() == 3 => format!("{}xx", *d as char),
                _ => "error".to_owned(),
            };
            *fetches_by_class.entry(class).or_default() += n;
        }
        let store = r.store.as_ref().map(|s| s.stats());
        let frontier = r.frontier.stats().await;
        let leases_lost = frontier.extra("leases_lost_here");
        MetricsSnapshot {
            fetches_by_class,
            latency: c.latency.snapshot(),
            bytes: c.bytes.load(Ordering::Relaxed),
            retries: c.retries.load(Ordering::Relaxed),
            robots_disallowed: c.robots_disallowed.load(Ordering::Relaxed),
            frontier,
            state_backlog: r.store.as_ref().map_or(0, |s| s.backlog()),
            checkpoints: store.as_ref().map_or(0, |s| s.checkpoints),
            checkpoint_seconds: store
                .as_ref()
                .map_or(0.0, |s| s.checkpoint_micros as f64 / 1e6),
            last_checkpoint_seconds: store
                .as_ref()
                .map_or(0.0, |s| s.last_checkpoint_micros as f64 / 1e6),
            leases_out: r.leases.out(),
            leases_expired: r.leases.expired.load(Ordering::Relaxed),
            pages: c.pages.load(Ordering::Relaxed),
            frontier_failures: r.frontier.health().failures().to_vec(),
            frontier_unavailable_secs: r.frontier.health().unavailable_secs().unwrap_or(0.0),
            leases_lost,
            refetches_changed: c.refetches_changed.load(Ordering::Relaxed),
            refetches_unchanged: c.refetches_unchanged.load(Ordering::Relaxed),
            not_modified: c.not_modified.load(Ordering::Relaxed),
            not_modified_bytes_saved: c.not_modified_bytes_saved.load(Ordering::Relaxed),
            memory: r.governor.as_ref().map(|g| g.reading().status()),
        }
    }
}
