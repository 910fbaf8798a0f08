//! [`RedisFrontier`]: the [`Frontier`] trait over one Redis that several crawler processes
//! share.
//!
//! What stays in the process is what needs no agreement: canonicalisation and the scope
//! check (each process has the same rules and seeds; seeds given at run time are also stored
//! in Redis, so a process that starts later widens its scope the same way). Everything shared
//! — the visited set, the per-host queues and politeness state, leases, counters and budgets
//! — changes only inside the server-side scripts of [`crate::scripts`].
//!
//! A *near cache* of the visited set saves Redis the common case: most links a crawl offers
//! are duplicates, and a URL this process has already seen answered by Redis (admitted or
//! seen) is a duplicate without asking again. It is a local Bloom filter at a tenth of the
//! FPP (a new URL is skipped with probability ≈ 1.1 × `fpp` instead of `fpp`), off with
//! `dedup = "exact"`, and dropped whenever a call fails: Redis can only forget acknowledged
//! writes (a crash of its machine with `appendfsync everysec`) by restarting, which breaks
//! the connection, and after that a URL the cache remembers may have to be admitted again.
//!
//! Waiting: Redis does not tell a process when another one queued a URL, so a process polls.
//! Only one of its waiting workers polls at a time (the others wait on a local wake-up); a
//! worker that gets a lease wakes the next, so a burst of ready URLs is taken quickly, and an
//! idle process makes at most one call per poll interval.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use frontier::{
    host_key, Admission, BoxFuture, Canonicalizer, End, Entry, Frontier, FrontierConfig,
    FrontierError, HostControls, HostPage, HostQuery, Lease, Link, Next, Order, OutOfScope,
    Outcome, Scope, SharedRobots, Stats, Via,
};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{RetryMethod, Value};
use tokio::sync::Notify;
use url::Url;

use crate::scripts::Scripts;
use crate::{hosts, RedisFrontierError, Visited};

/// The longest a waiting process goes without asking Redis again.
const POLL: Duration = Duration::from_millis(25);
/// The longest a worker that is not the poller waits for a local wake-up.
const IDLE: Duration = Duration::from_millis(500);

/// Where the shared frontier is and how this process takes part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis://[user:password@]host:port/db`.
    pub url: String,
    /// The crawl's name: every key starts with `crawl:{ID}:`, so several crawls share a Redis.
    pub crawl_id: String,
    /// How long a lease lasts without a heartbeat: a process that dies loses its URLs to the
    /// others after this.
    pub lease: Duration,
    /// This process' name in the leases (`None`: host name, pid and start time).
    pub holder: Option<String>,
}

impl RedisConfig {
    /// The default lease.
    pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
}

/// A frontier in Redis, shared by every process that opens the same `crawl_id`.
#[derive(Debug)]
pub struct RedisFrontier {
    shared: Arc<Shared>,
    heartbeat: tokio::task::JoinHandle<()>,
}

/// What the heartbeat task shares with the frontier.
#[derive(Debug)]
struct Shared {
    conn: ConnectionManager,
    scripts: Scripts,
    visited: Visited,
    canon: Canonicalizer,
    scope: RwLock<Scope>,
    cfg: FrontierConfig,
    lease: Duration,
    holder: String,
    /// Lease ids this process holds (renewed by the heartbeat).
    held: Mutex<HashSet<u64>>,
    /// Leases this process held that expired and went to another process meanwhile.
    lost: AtomicU64,
    closed: AtomicBool,
    /// URLs Redis answered for (see the module header); `None` with exact deduplication.
    near: Option<RwLock<Arc<Near>>>,
    /// Offers the near cache answered, not yet added to the crawl's counters.
    near_dups: AtomicU64,
    /// Wakes this process' waiting workers (a local offer, completion or close).
    wake: Notify,
    /// Held by the one waiting worker that polls Redis.
    poller: tokio::sync::Mutex<()>,
}

type Near = bloom::ScalableBloomFilter<str, bloom::StringFunnel>;

/// An empty near cache (none with exact deduplication).
fn near_cache(cfg: &FrontierConfig) -> Option<Arc<Near>> {
    if cfg.dedup == frontier::Dedup::Exact {
        return None;
    }
    Near::new(bloom::StringFunnel, cfg.expected_urls, cfg.fpp / 10.0)
        .ok()
        .map(Arc::new)
}

/// What the lease script answered.
enum Leased {
    Lease(Lease),
    Budget,
    Wait {
        due: Option<u64>,
        queued: u64,
        leases: u64,
        now: u64,
    },
}

impl RedisFrontier {
    /// Connects to the crawl `redis.crawl_id` (created by the first offer), with the rules of
    /// `cfg` and the operator's `seeds` (their hosts and domains, and the seeds stored by
    /// earlier processes, make the host scope). Fails when Redis cannot be reached.
    pub async fn connect(
        cfg: FrontierConfig,
        redis: RedisConfig,
        seeds: &[&str],
    ) -> Result<Self, RedisFrontierError> {
        check_crawl_id(&redis.crawl_id)?;
        let visited = Visited::new(&redis.crawl_id, cfg.expected_urls, cfg.fpp)?;
        let client = redis::Client::open(redis.url.as_str())?;
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(Duration::from_secs(10)))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_secs(1));
        let mut conn = ConnectionManager::new_with_config(client, manager).await?;
        check_version(&mut conn).await?;
        crate::export::check_shape(&mut conn, &visited).await?;
        let canon = Canonicalizer::new(cfg.canon.clone());
        let stored: Vec<String> = redis::cmd("SMEMBERS")
            .arg(format!("{}seeds", visited.prefix()))
            .query_async(&mut conn)
            .await?;
        let seed_urls: Vec<Url> = seeds
            .iter()
            .copied()
            .chain(stored.iter().map(String::as_str))
            .filter_map(|s| canon.canonicalize(s, None).ok())
            .collect();
        let scope = Scope::new(cfg.scope.clone(), &seed_urls)
            .map_err(|e| RedisFrontierError::Frontier(frontier::BuildError::Patterns(e)))?;
        let holder = redis
            .holder
            .clone()
            .unwrap_or_else(default_holder)
            .replace('\n', " ");
        let near = near_cache(&cfg).map(RwLock::new);
        let shared = Arc::new(Shared {
            conn,
            scripts: Scripts::new(),
            visited,
            canon,
            scope: RwLock::new(scope),
            lease: redis.lease.max(Duration::from_millis(100)),
            cfg,
            holder,
            held: Mutex::default(),
            lost: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            near,
            near_dups: AtomicU64::new(0),
            wake: Notify::new(),
            poller: tokio::sync::Mutex::new(()),
        });
        let heartbeat = tokio::spawn(heartbeat(Arc::downgrade(&shared)));
        Ok(Self { shared, heartbeat })
    }

    /// The visited set's shape and keys.
    pub fn visited(&self) -> &Visited {
        &self.shared.visited
    }

    /// This process' name in the leases.
    pub fn holder(&self) -> &str {
        &self.shared.holder
    }
}

impl Drop for RedisFrontier {
    fn drop(&mut self) {
        // Leases still held expire and go to the other processes.
        self.heartbeat.abort();
    }
}

/// A crawl id: printable, no braces (they delimit the hash tag), at most 128 bytes.
pub(crate) fn check_crawl_id(id: &str) -> Result<(), RedisFrontierError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_graphic() && c != '{' && c != '}');
    if ok {
        Ok(())
    } else {
        Err(RedisFrontierError::CrawlId(id.to_owned()))
    }
}

/// The scripts need Redis 6.2 or later (`ZRANGE … BYSCORE`).
async fn check_version(conn: &mut ConnectionManager) -> Result<(), RedisFrontierError> {
    let info: String = redis::cmd("INFO").arg("server").query_async(conn).await?;
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("0")
        .trim()
        .to_owned();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if (major, minor) >= (6, 2) {
        Ok(())
    } else {
        Err(RedisFrontierError::Version(version))
    }
}

fn default_holder() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{host}-{}-{nanos:08x}", std::process::id())
}

/// A Redis error as the engine sees it: worth retrying (connection, timeout, loading) or not.
pub(crate) fn frontier_error(e: redis::RedisError) -> FrontierError {
    if matches!(e.retry_method(), RetryMethod::NoRetry) && !e.is_timeout() {
        FrontierError::Failed(e.to_string())
    } else {
        FrontierError::Unavailable(e.to_string())
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Renews this process' leases every third of a lease, until the frontier is dropped.
async fn heartbeat(shared: std::sync::Weak<Shared>) {
    let period = match shared.upgrade() {
        Some(s) => s.lease / 3,
        None => return,
    };
    loop {
        tokio::time::sleep(period).await;
        let Some(s) = shared.upgrade() else { return };
        let ids: Vec<u64> = s
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .copied()
            .collect();
        if ids.is_empty() {
            continue;
        }
        let mut call = s.invoke(&s.scripts.renew);
        call.arg(s.holder.as_str()).arg(ms(s.lease));
        for id in &ids {
            call.arg(*id);
        }
        let mut conn = s.conn.clone();
        match call.invoke_async::<Vec<u64>>(&mut conn).await {
            Ok(lost) if !lost.is_empty() => {
                let mut held = s.held.lock().unwrap_or_else(|e| e.into_inner());
                let gone: Vec<u64> = lost.into_iter().filter(|id| held.remove(id)).collect();
                drop(held);
                if !gone.is_empty() {
                    s.lost.fetch_add(gone.len() as u64, Ordering::Relaxed);
                    tracing::warn!(
                        leases = gone.len(),
                        "leases expired before their heartbeat; other processes fetch those URLs"
                    );
                }
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "lease heartbeat failed; retrying"),
        }
    }
}

impl Shared {
    /// A call of `script` with the arguments every script takes.
    fn invoke<'s>(&self, script: &'s redis::Script) -> redis::ScriptInvocation<'s> {
        let p = &self.cfg.politeness;
        let mut call = script.key(format!("{}stats", self.visited.prefix()));
        call.arg(self.visited.prefix())
            .arg(ms(p.delay))
            .arg(p.max_per_host.max(1))
            .arg(ms(p.backoff_base))
            .arg(ms(p.max_backoff));
        call
    }

    /// Canonicalises and scope-checks `links`, then admits the rest in one script.
    /// `requeue`: queue them even though seen (no scope, no budget).
    async fn admit(
        &self,
        parent: Option<&str>,
        links: Vec<Link>,
        requeue: bool,
    ) -> Result<Vec<Admission>, FrontierError> {
        let near = match (&self.near, requeue) {
            (Some(n), false) => Some(Arc::clone(&n.read().unwrap_or_else(|e| e.into_inner()))),
            _ => None,
        };
        let mut near_dups = 0u64;
        let mut out: Vec<Option<Admission>> = vec![None; links.len()];
        let mut refused = [0u64; OutOfScope::ALL.len()];
        let mut batch: Vec<(usize, String, String, Vec<u8>)> = Vec::new();
        {
            let scope = self.scope.read().unwrap_or_else(|e| e.into_inner());
            for (i, l) in links.into_iter().enumerate() {
                let mut refuse = |reason: OutOfScope| {
                    if let Some(n) = OutOfScope::ALL.iter().position(|r| *r == reason) {
                        refused[n] += 1;
                    }
                    out[i] = Some(Admission::OutOfScope(reason));
                };
                let Ok(canonical) = self.canon.canonicalize_url(l.url) else {
                    refuse(OutOfScope::Invalid);
                    continue;
                };
                if !requeue {
                    if l.hops > self.cfg.max_redirects {
                        refuse(OutOfScope::Redirects);
                        continue;
                    }
                    if let Err(reason) = scope.check(&canonical, l.depth) {
                        refuse(reason);
                        continue;
                    }
                }
                if near
                    .as_ref()
                    .is_some_and(|n| n.might_contain(canonical.as_str()))
                {
                    near_dups += 1;
                    out[i] = Some(Admission::Duplicate);
                    continue;
                }
                let host = host_key(&canonical).to_owned();
                let url = String::from(canonical);
                let mut entry = if requeue {
                    Entry::new(url.clone(), l.depth, None)
                } else {
                    let mut e = Entry::new(url.clone(), l.depth, parent.map(str::to_owned));
                    e.hops = l.hops;
                    e.via = l.via;
                    e.sitemap = l.sitemap;
                    e.lastmod = l.lastmod;
                    e
                };
                entry.id = 0;
                let mut bytes = Vec::with_capacity(url.len() + 32);
                entry.encode(&mut bytes);
                batch.push((i, url, host, bytes));
            }
        }
        let counted: Vec<(OutOfScope, u64)> = OutOfScope::ALL
            .iter()
            .zip(refused)
            .filter(|(_, n)| *n > 0)
            .map(|(r, n)| (*r, n))
            .collect();
        if !requeue {
            near_dups += self.near_dups.swap(0, Ordering::Relaxed);
        }
        if batch.is_empty() && near_dups > 0 && counted.is_empty() {
            // Nothing for Redis: count the answers with the next call.
            self.near_dups.fetch_add(near_dups, Ordering::Relaxed);
        } else if !batch.is_empty() || (!requeue && !counted.is_empty()) {
            let k = self.visited.hashes();
            let mut call = self.invoke(&self.scripts.admit);
            let budget = self.cfg.max_pages_per_host.unwrap_or(0);
            let order = match self.cfg.order {
                Order::BreadthFirst => "b",
                Order::DepthFirst => "d",
            };
            call.arg(k)
                .arg(batch.len())
                .arg(u8::from(self.cfg.dedup == frontier::Dedup::Exact))
                .arg(budget)
                .arg(order)
                .arg(u8::from(requeue))
                .arg(near_dups)
                .arg(if requeue { 0 } else { counted.len() });
            if !requeue {
                for (reason, n) in &counted {
                    call.arg(reason.name()).arg(*n);
                }
            }
            for (_, url, ..) in &batch {
                for bit in self.visited.indices(url) {
                    call.arg("SET").arg("u1").arg(bit).arg(1u8);
                }
            }
            for (_, url, host, entry) in &batch {
                call.arg(&frontier::fingerprint(url).to_le_bytes()[..])
                    .arg(host.as_str())
                    .arg(entry.as_slice());
            }
            let codes: Vec<u8> = match call.invoke_async(&mut self.conn.clone()).await {
                Ok(c) => c,
                Err(e) => {
                    self.near_dups.fetch_add(near_dups, Ordering::Relaxed);
                    return Err(self.failed(e));
                }
            };
            if let Some(n) = &near {
                for (_, url, ..) in &batch {
                    n.put(url.as_str());
                }
            }
            for ((i, ..), code) in batch.iter().zip(codes) {
                out[*i] = Some(match code {
                    1 => Admission::Admitted,
                    2 => Admission::OutOfScope(OutOfScope::HostBudget),
                    _ => Admission::Duplicate,
                });
            }
            if out.contains(&Some(Admission::Admitted)) {
                self.wake.notify_one();
            }
        }
        Ok(out
            .into_iter()
            .map(|a| a.unwrap_or(Admission::Duplicate))
            .collect())
    }

    /// A failed call: the near cache is dropped (Redis may have restarted without its last
    /// writes), and the error is the engine's.
    fn failed(&self, e: redis::RedisError) -> FrontierError {
        if let Some(near) = &self.near {
            if let Some(fresh) = near_cache(&self.cfg) {
                *near.write().unwrap_or_else(|e| e.into_inner()) = fresh;
            }
        }
        frontier_error(e)
    }

    /// One call of the lease script.
    async fn lease_once(&self) -> Result<Leased, FrontierError> {
        let mut call = self.invoke(&self.scripts.lease);
        call.arg(self.holder.as_str())
            .arg(ms(self.lease))
            .arg(self.cfg.max_pages.unwrap_or(0));
        let reply: Vec<Value> = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        let bad = || FrontierError::Failed("unexpected reply of the lease script".into());
        let text = |v: &Value| match v {
            Value::BulkString(b) => Some(b.clone()),
            Value::SimpleString(s) => Some(s.clone().into_bytes()),
            _ => None,
        };
        let int = |v: &Value| match v {
            Value::Int(n) => Some(*n),
            _ => None,
        };
        match reply.first().and_then(text).as_deref() {
            Some(b"lease") if reply.len() == 5 => {
                let id = int(&reply[1])
                    .and_then(|n| u64::try_from(n).ok())
                    .ok_or_else(bad)?;
                let host = text(&reply[2])
                    .and_then(|h| String::from_utf8(h).ok())
                    .ok_or_else(bad)?;
                let bytes = text(&reply[3]).ok_or_else(bad)?;
                let last = int(&reply[4]) == Some(1);
                let Some(entry) = Entry::decode_all(&bytes, 1).and_then(|mut v| v.pop()) else {
                    // Not an entry this version writes: give it up rather than loop on it.
                    self.finish(id, "skip", None, None).await?;
                    return Err(FrontierError::Failed(format!(
                        "an undecodable queue entry of {host} was dropped"
                    )));
                };
                self.held
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(id);
                Ok(Leased::Lease(
                    Lease::new(entry, Arc::from(host), id).with_last_of_host(last),
                ))
            }
            Some(b"budget") => Ok(Leased::Budget),
            Some(b"wait") if reply.len() == 5 => {
                let n = |i: usize| int(&reply[i]).ok_or_else(bad);
                Ok(Leased::Wait {
                    due: u64::try_from(n(1)?).ok(),
                    queued: u64::try_from(n(2)?).unwrap_or(0),
                    leases: u64::try_from(n(3)?).unwrap_or(0),
                    now: u64::try_from(n(4)?).unwrap_or(0),
                })
            }
            _ => Err(bad()),
        }
    }

    /// One call of the completion script; `Ok(false)`: the lease was not out.
    async fn finish(
        &self,
        id: u64,
        kind: &str,
        hint: Option<Duration>,
        retry: Option<&Entry>,
    ) -> Result<bool, FrontierError> {
        let mut bytes = Vec::new();
        if let Some(e) = retry {
            e.encode(&mut bytes);
        }
        let mut call = self.invoke(&self.scripts.complete);
        call.arg(id)
            .arg(kind)
            .arg(hint.map_or(0, ms))
            .arg(bytes.as_slice())
            .arg(self.holder.as_str());
        let done: u8 = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        Ok(done == 1)
    }

    async fn next(&self) -> Result<Next, FrontierError> {
        loop {
            if self.closed.load(Ordering::Acquire) {
                return Ok(Next::End(End::Closed));
            }
            // Registered before looking, so a wake-up while the script runs is not missed.
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.lease_once().await? {
                Leased::Lease(l) => {
                    // More may be ready: let the next waiting worker look.
                    self.wake.notify_one();
                    return Ok(Next::Lease(l));
                }
                Leased::Budget => {
                    self.wake.notify_waiters();
                    return Ok(Next::End(End::Budget));
                }
                Leased::Wait {
                    due,
                    queued,
                    leases,
                    now,
                } => {
                    if queued == 0 && leases == 0 && !self.cfg.keep_open {
                        self.wake.notify_waiters();
                        return Ok(Next::End(End::Finished));
                    }
                    let nap = due.map_or(POLL, |d| {
                        Duration::from_millis(d.saturating_sub(now))
                            .clamp(Duration::from_millis(1), POLL)
                    });
                    match self.poller.try_lock() {
                        Ok(_polling) => {
                            tokio::select! {
                                _ = tokio::time::sleep(nap) => {}
                                _ = notified => {}
                            }
                        }
                        Err(_) => {
                            tokio::select! {
                                _ = tokio::time::sleep(IDLE) => {}
                                _ = notified => {}
                            }
                        }
                    }
                }
            }
        }
    }

    async fn try_next(&self) -> Result<Option<Lease>, FrontierError> {
        if self.closed.load(Ordering::Acquire) {
            return Ok(None);
        }
        match self.lease_once().await? {
            Leased::Lease(l) => Ok(Some(l)),
            Leased::Budget | Leased::Wait { .. } => Ok(None),
        }
    }

    async fn complete(&self, lease: Lease, outcome: Outcome) -> Result<(), FrontierError> {
        let id = lease.token();
        let (kind, hint, retry) = match outcome {
            Outcome::Done => ("done", None, None),
            Outcome::Skipped => ("skip", None, None),
            Outcome::HostError { retry_after } => ("error", retry_after, None),
            Outcome::Retry { after } => {
                let mut e = lease.into_entry();
                e.attempt = e.attempt.saturating_add(1);
                ("retry", after, Some(e))
            }
            Outcome::Released => ("release", None, None),
        };
        // A completion that comes back after the lease expired changes nothing (`false`):
        // the URL was handed to another process, which completes it.
        self.finish(id, kind, hint, retry.as_ref()).await?;
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        self.wake.notify_one();
        Ok(())
    }

    async fn seed(&self, links: Vec<Link>) -> Result<Vec<Admission>, FrontierError> {
        let canonical: Vec<Url> = links
            .iter()
            .filter_map(|l| self.canon.canonicalize(l.url.as_str(), None).ok())
            .collect();
        if !canonical.is_empty() {
            let mut cmd = redis::cmd("SADD");
            cmd.arg(format!("{}seeds", self.visited.prefix()));
            for u in &canonical {
                cmd.arg(u.as_str());
            }
            let _: u64 = cmd
                .query_async(&mut self.conn.clone())
                .await
                .map_err(frontier_error)?;
            let mut scope = self.scope.write().unwrap_or_else(|e| e.into_inner());
            for u in &canonical {
                scope.add_seed(u);
            }
        }
        let seeds = links
            .into_iter()
            .map(|l| Link {
                via: Via::Seed,
                ..l
            })
            .collect();
        let out = self.admit(None, seeds, false).await?;
        self.wake.notify_waiters();
        Ok(out)
    }

    async fn host_script(
        &self,
        script: &redis::Script,
        host: &str,
        args: &[String],
    ) -> Result<bool, FrontierError> {
        let mut call = self.invoke(script);
        call.arg(host);
        for a in args {
            call.arg(a.as_str());
        }
        let r: u8 = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(frontier_error)?;
        self.wake.notify_waiters();
        Ok(r == 1)
    }

    async fn stats(&self) -> Result<Stats, FrontierError> {
        let p = self.visited.prefix();
        let (counters, leases, hosts, set): (Vec<(String, i64)>, u64, u64, u64) = redis::pipe()
            .cmd("HGETALL")
            .arg(format!("{p}stats"))
            .cmd("ZCARD")
            .arg(format!("{p}leases"))
            .cmd("SCARD")
            .arg(format!("{p}hosts"))
            .cmd("BITCOUNT")
            .arg(format!("{p}visited"))
            .query_async(&mut self.conn.clone())
            .await
            .map_err(frontier_error)?;
        let get = |k: &str| {
            counters
                .iter()
                .find(|(n, _)| n == k)
                .map_or(0, |(_, v)| u64::try_from(*v).unwrap_or(0))
        };
        let out_of_scope = OutOfScope::ALL
            .iter()
            .map(|r| (*r, get(&format!("oos:{}", r.name()))))
            .filter(|(_, n)| *n > 0)
            .collect();
        let bits = self.visited.bit_size();
        let fill = set as f64 / bits.max(1) as f64;
        let mut stats = Stats {
            offered: get("offered"),
            admitted: get("admitted"),
            duplicates: get("duplicates"),
            out_of_scope,
            queued: get("queued"),
            in_flight: leases,
            hosts,
            pages: get("pages"),
            filter_bits: bits,
            filter_bits_set: set,
            filter_fpp: fill.powi(self.visited.hashes() as i32),
            extra: Default::default(),
        };
        let pending = self.near_dups.load(Ordering::Relaxed);
        stats.offered += pending;
        stats.duplicates += pending;
        stats.extra.insert("leases_expired", get("expired"));
        stats
            .extra
            .insert("leases_lost_here", self.lost.load(Ordering::Relaxed));
        Ok(stats)
    }
}

impl Frontier for RedisFrontier {
    fn offer<'a>(
        &'a self,
        parent: Option<&'a str>,
        links: Vec<Link>,
    ) -> BoxFuture<'a, Result<Vec<Admission>, FrontierError>> {
        Box::pin(self.shared.admit(parent, links, false))
    }

    fn seed(&self, links: Vec<Link>) -> BoxFuture<'_, Result<Vec<Admission>, FrontierError>> {
        Box::pin(self.shared.seed(links))
    }

    fn next(&self) -> BoxFuture<'_, Result<Next, FrontierError>> {
        Box::pin(self.shared.next())
    }

    fn try_next(&self) -> BoxFuture<'_, Result<Option<Lease>, FrontierError>> {
        Box::pin(self.shared.try_next())
    }

    fn complete(&self, lease: Lease, outcome: Outcome) -> BoxFuture<'_, Result<(), FrontierError>> {
        Box::pin(self.shared.complete(lease, outcome))
    }

    fn set_crawl_delay<'a>(
        &'a self,
        host: &'a str,
        delay: Duration,
    ) -> BoxFuture<'a, Result<(), FrontierError>> {
        Box::pin(async move {
            let s = &self.shared;
            s.host_script(&s.scripts.crawl_delay, host, &[ms(delay).to_string()])
                .await
                .map(drop)
        })
    }

    fn host_contacted<'a>(&'a self, host: &'a str) -> BoxFuture<'a, Result<(), FrontierError>> {
        Box::pin(async move {
            let s = &self.shared;
            s.host_script(&s.scripts.contacted, host, &[])
                .await
                .map(drop)
        })
    }

    fn requeue(&self, links: Vec<Link>) -> BoxFuture<'_, Result<Vec<bool>, FrontierError>> {
        Box::pin(async move {
            let out = self.shared.admit(None, links, true).await?;
            Ok(out.iter().map(|a| *a == Admission::Admitted).collect())
        })
    }

    fn hosts(&self, query: HostQuery) -> BoxFuture<'_, Result<HostPage, FrontierError>> {
        Box::pin(async move {
            let s = &self.shared;
            hosts::page(&mut s.conn.clone(), s.visited.prefix(), &s.cfg, &query).await
        })
    }

    fn set_host<'a>(
        &'a self,
        host: &'a str,
        controls: HostControls,
    ) -> BoxFuture<'a, Result<bool, FrontierError>> {
        Box::pin(async move {
            let s = &self.shared;
            let opt = |v: Option<u64>| v.map_or_else(String::new, |v| v.to_string());
            let args = [
                opt(controls.delay.map(ms)),
                opt(controls.max_in_flight.map(|n| u64::from(n.max(1)))),
                opt(controls.block_for.map(ms)),
                opt(controls.max_pages),
            ];
            s.host_script(&s.scripts.set_host, host, &args).await
        })
    }

    fn robots_shared<'a>(
        &'a self,
        origin: &'a str,
    ) -> BoxFuture<'a, Result<SharedRobots, FrontierError>> {
        Box::pin(async move {
            let s = &self.shared;
            let mut call = s.invoke(&s.scripts.robots_get);
            // A claim outlives a robots.txt fetch (its timeouts), not a dead process for long.
            call.arg(origin).arg(s.holder.as_str()).arg(60_000u64);
            let reply: Value = call
                .invoke_async(&mut s.conn.clone())
                .await
                .map_err(|e| s.failed(e))?;
            Ok(match reply {
                Value::BulkString(record) => SharedRobots::Record(record),
                Value::Int(1) => SharedRobots::Fetch,
                _ => SharedRobots::Wait,
            })
        })
    }

    fn share_robots<'a>(
        &'a self,
        origin: &'a str,
        record: Vec<u8>,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), FrontierError>> {
        Box::pin(async move {
            let s = &self.shared;
            let mut call = s.invoke(&s.scripts.robots_put);
            call.arg(origin).arg(record).arg(ms(ttl).max(1));
            let _: u8 = call
                .invoke_async(&mut s.conn.clone())
                .await
                .map_err(|e| s.failed(e))?;
            Ok(())
        })
    }

    fn close(&self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.wake.notify_waiters();
    }

    fn stats(&self) -> BoxFuture<'_, Result<Stats, FrontierError>> {
        Box::pin(self.shared.stats())
    }
}
