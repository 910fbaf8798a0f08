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

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use frontier::{
    prepare_seeds, Admission, BoxFuture, Canonicalizer, Frontier, FrontierConfig, FrontierError,
    HostControls, HostPage, HostQuery, Lease, Link, Next, Outcome, Recrawled, Scope, Stats,
};
use tokio::sync::Notify;
use url::Url;

use crate::conn::Conn;
use crate::scripts::Scripts;

mod address_home;
mod admit;
mod budget;
mod completion;
mod durable;
mod heartbeat;
mod lease;
mod open;
mod parts;

pub(crate) use open::check_crawl_id;
mod robots;
mod stats;
mod urls;

use crate::{hosts, RedisFrontierError, Visited};
use admit::{near_cache, Near};
use heartbeat::{heartbeat, ticker};

/// The longest default delay an operator may set (as a host's own): a year.
const MAX_DEFAULT_DELAY: Duration = Duration::from_secs(365 * 24 * 3600);
/// The longest a waiting process goes without asking Redis again.
const POLL: Duration = Duration::from_millis(25);
/// The longest a worker that is not the poller waits for a local wake-up.
const IDLE: Duration = Duration::from_millis(500);

/// Where the shared frontier is and how this process takes part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis://[user:password@]host:port/db`, or `redis+cluster://host:port[,host:port…]`
    /// for a Redis Cluster (any node; the others are discovered).
    pub url: String,
    /// The crawl's name: every key starts with `crawl:{ID}:`, so several crawls share a Redis.
    pub crawl_id: String,
    /// How long a lease lasts without a heartbeat: a process that dies loses its URLs to the
    /// others after this.
    pub lease: Duration,
    /// This process' name in the leases (`None`: host name, pid and start time).
    pub holder: Option<String>,
    /// Partitions of the crawl's state (see [`crate::Visited`]); 0: the crawl's recorded
    /// number, 1 for a new crawl. Recorded by the crawl's first process; another number is
    /// refused.
    pub partitions: u32,
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
    /// With several partitions: ticks the ones this process has not called lately.
    ticker: Option<tokio::task::JoinHandle<()>>,
}

/// What the heartbeat task shares with the frontier.
#[derive(Debug)]
struct Shared {
    conn: Conn,
    scripts: Scripts,
    /// The crawl's partitions: each one's visited set and key prefix; the first is the
    /// crawl's home (seeds, rules, shape).
    parts: Vec<Visited>,
    /// Per partition, when a lease call there is worth making (see `parts.rs`).
    hints: Mutex<Vec<parts::Hint>>,
    /// Where the next choice of a partition starts.
    rotor: AtomicUsize,
    /// Per partition, whether its master has a replica to wait for (see `durable.rs`).
    replicas: Mutex<Vec<durable::ReplicaSeen>>,
    /// Admissions not waited for: their master had no replica.
    wait_skipped: AtomicU64,
    /// Admissions sent again: no replica acknowledged the last send in time.
    wait_retried: AtomicU64,
    /// The poller's last round, when it found every partition empty (see `parts.rs`).
    quiet: Mutex<Option<Vec<parts::Quiet>>>,
    /// Per partition, a tick in flight (see `heartbeat.rs`).
    ticking: Vec<AtomicBool>,
    /// When the poller's last round began (one per poll interval at most).
    round_at: Mutex<Option<std::time::Instant>>,
    /// Turns at address groups held by this process' leases, by lease id: the group's home
    /// partition and key (several partitions; `address_home.rs`).
    turns: Mutex<HashMap<u64, (usize, String)>>,
    /// Waits (ms) address groups asked of leases they refused, by lease id.
    deferred: Mutex<HashMap<u64, u64>>,
    /// Until when no share of the page budget is asked for (none was free; `budget.rs`).
    dry_until: Mutex<Option<std::time::Instant>>,
    /// Held while this process asks for a share, so that its workers starved together ask
    /// once; per partition, the shares this process got for it.
    share_lock: tokio::sync::Mutex<()>,
    shares_got: Vec<AtomicU64>,
    canon: Canonicalizer,
    scope: RwLock<Scope>,
    cfg: FrontierConfig,
    lease: Duration,
    holder: String,
    /// Lease ids this process holds (renewed by the heartbeat).
    held: Mutex<HashSet<u64>>,
    /// Buckets of the `dueat` index (a power of two, from the visited set's size: about 250
    /// URLs a bucket at the expected count, so each stays a compact hash).
    due_buckets: u64,
    /// The hosts' own recrawl intervals (`recrawl_secs`), by lease id, for leases of hosts
    /// that have one.
    host_recrawl: Mutex<HashMap<u64, u32>>,
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

impl RedisFrontier {
    /// Connects to the crawl `redis.crawl_id` (created by the first offer), with the rules of
    /// `cfg` and the operator's `seeds` (their hosts and domains, and the seeds stored by
    /// earlier processes, make the host scope). Fails when Redis cannot be reached.
    pub async fn connect(
        cfg: FrontierConfig,
        redis: RedisConfig,
        seeds: &[&str],
    ) -> Result<Self, RedisFrontierError> {
        let lease = redis.lease.max(Duration::from_millis(100));
        let (mut conn, parts) = open::open(&cfg, &redis, lease).await?;
        let visited = &parts[0];
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
        let due_buckets = (visited.bit_size() >> 12).max(1).next_power_of_two();
        let shared = Arc::new(Shared {
            conn,
            scripts: Scripts::new(visited.hashes()),
            hints: Mutex::new(vec![parts::Hint::NEW; parts.len()]),
            rotor: AtomicUsize::new(std::process::id() as usize),
            replicas: Mutex::new(vec![None; parts.len()]),
            wait_skipped: AtomicU64::new(0),
            wait_retried: AtomicU64::new(0),
            quiet: Mutex::default(),
            round_at: Mutex::default(),
            dry_until: Mutex::default(),
            turns: Mutex::default(),
            deferred: Mutex::default(),
            ticking: (0..parts.len()).map(|_| AtomicBool::new(false)).collect(),
            share_lock: tokio::sync::Mutex::new(()),
            shares_got: (0..parts.len()).map(|_| AtomicU64::new(0)).collect(),
            parts,
            canon,
            scope: RwLock::new(scope),
            lease,
            cfg,
            holder,
            held: Mutex::default(),
            host_recrawl: Mutex::default(),
            due_buckets,
            lost: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            near,
            near_dups: AtomicU64::new(0),
            wake: Notify::new(),
            poller: tokio::sync::Mutex::new(()),
        });
        let heartbeat = tokio::spawn(heartbeat(Arc::downgrade(&shared)));
        let ticker = (shared.parts() > 1).then(|| tokio::spawn(ticker(Arc::downgrade(&shared))));
        Ok(Self {
            shared,
            heartbeat,
            ticker,
        })
    }

    /// The visited set's shape and keys (of the crawl's first partition).
    pub fn visited(&self) -> &Visited {
        &self.shared.parts[0]
    }

    /// Partitions of the crawl's state.
    pub fn partitions(&self) -> u32 {
        self.shared.parts.len() as u32
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
        if let Some(t) = &self.ticker {
            t.abort();
        }
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

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Shared {
    /// Where the `dueat` index keeps the URL of fingerprint `fp`: its bucket (the low bits)
    /// and field (the high 8 bytes).
    fn due_index(&self, fp: u128) -> (u64, [u8; 8]) {
        let bucket = (fp as u64) & (self.due_buckets - 1);
        (bucket, ((fp >> 64) as u64).to_be_bytes())
    }

    async fn seed(&self, links: Vec<Link>) -> Result<Vec<Admission>, FrontierError> {
        let (canonical, seeds) = prepare_seeds(&self.canon, links);
        if !canonical.is_empty() {
            let mut cmd = redis::cmd("SADD");
            cmd.arg(format!("{}seeds", self.prefix(0)));
            for u in &canonical {
                cmd.arg(u.as_str());
            }
            let _: u64 = cmd
                .query_async(&mut self.conn.clone())
                .await
                .map_err(|e| self.failed(e))?;
            let mut scope = self.scope.write().unwrap_or_else(|e| e.into_inner());
            for u in &canonical {
                scope.add_seed(u);
            }
        }
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
        let mut call = self.invoke_on(self.part_of(host), script);
        call.arg(host);
        for a in args {
            call.arg(a.as_str());
        }
        let r: u8 = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(|e| self.failed(e))?;
        self.wake.notify_waiters();
        Ok(r == 1)
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

    fn try_next_from<'a>(
        &'a self,
        host: &'a str,
    ) -> BoxFuture<'a, Result<Option<Lease>, FrontierError>> {
        Box::pin(self.shared.try_next_from(Some(host)))
    }

    fn complete(&self, lease: Lease, outcome: Outcome) -> BoxFuture<'_, Result<(), FrontierError>> {
        Box::pin(self.shared.complete(lease, outcome))
    }

    fn complete_and_next(
        &self,
        lease: Lease,
        outcome: Outcome,
    ) -> BoxFuture<'_, Result<Next, FrontierError>> {
        Box::pin(self.shared.complete_and_next(lease, outcome))
    }

    fn hold<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<bool, FrontierError>> {
        Box::pin(self.shared.hold(lease))
    }

    fn offer_and_hold<'a>(
        &'a self,
        lease: &'a Lease,
        links: Vec<Link>,
    ) -> BoxFuture<'a, Result<frontier::Fenced, FrontierError>> {
        Box::pin(self.shared.admit_fenced(
            Some(&lease.entry().url),
            links,
            false,
            Some(lease.token()),
        ))
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

    fn place_host<'a>(
        &'a self,
        lease: &'a Lease,
        key: frontier::AddressKey,
    ) -> BoxFuture<'a, Result<bool, FrontierError>> {
        Box::pin(async move {
            let s = &self.shared;
            let p = &s.cfg.politeness;
            if p.ip_delay.is_zero() && p.max_per_ip == 0 {
                return Ok(true);
            }
            if s.parts() > 1 {
                return s.acquire_turn(lease, key).await;
            }
            let args = [
                key.to_string(),
                u8::from(lease.handed_in_group()).to_string(),
                ms(p.ip_delay).to_string(),
                p.max_per_ip.to_string(),
            ];
            s.host_script(&s.scripts.place, lease.host(), &args).await
        })
    }

    fn groups_by_address(&self) -> bool {
        let p = &self.shared.cfg.politeness;
        !p.ip_delay.is_zero() || p.max_per_ip > 0
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
            let prefixes: Vec<&str> = match &query.host {
                Some(h) => vec![s.prefix(s.part_of(h))],
                None => s.parts.iter().map(Visited::prefix).collect(),
            };
            hosts::page(&mut s.conn.clone(), &prefixes, &s.cfg, &query).await
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
                opt(controls.recrawl_secs.map(u64::from)),
                opt(controls.max_done),
            ];
            s.host_script(&s.scripts.set_host, host, &args).await
        })
    }

    fn set_default_delay(&self, delay: Duration) -> BoxFuture<'_, Result<(), FrontierError>> {
        Box::pin(async move {
            let s = &self.shared;
            // Every partition's hosts read it from their own partition.
            for p in 0..s.parts() {
                let mut call = s.invoke_on(p, &s.scripts.set_default_delay);
                // At most a year, as a host's own delay: the scripts add it to times in ms.
                call.arg(ms(delay.min(MAX_DEFAULT_DELAY)).to_string());
                let _: u8 = call
                    .invoke_async(&mut s.conn.clone())
                    .await
                    .map_err(|e| s.failed(e))?;
            }
            s.wake.notify_waiters();
            Ok(())
        })
    }

    fn delete_queue<'a>(
        &'a self,
        host: &'a str,
        days: u32,
    ) -> BoxFuture<'a, Result<u64, FrontierError>> {
        Box::pin(async move {
            let s = &self.shared;
            let cutoff = frontier::Entry::purge_cutoff(days);
            // The sleeping URLs first: one due meanwhile is promoted into the queue, which
            // the script then drops (the other order would leave it queued).
            let asleep = s.drop_asleep(host, cutoff).await?;
            let mut call = s.invoke_on(s.part_of(host), &s.scripts.delete_queue);
            call.arg(host).arg(cutoff.unwrap_or(0));
            let n: u64 = call
                .invoke_async(&mut s.conn.clone())
                .await
                .map_err(|e| s.failed(e))?;
            // The crawl may have nothing left: waiting workers look again.
            s.wake.notify_waiters();
            Ok(n + asleep)
        })
    }

    fn recrawl(
        &self,
        urls: Vec<Url>,
        at: Option<u64>,
    ) -> BoxFuture<'_, Result<Vec<Recrawled>, FrontierError>> {
        Box::pin(self.shared.recrawl(urls, at))
    }

    fn find_url<'a>(
        &'a self,
        url: &'a Url,
        key: &'a str,
    ) -> BoxFuture<'a, Result<frontier::Found, FrontierError>> {
        Box::pin(self.shared.find_url(url, key))
    }

    fn list_urls(
        &self,
        query: frontier::UrlQuery,
    ) -> BoxFuture<'_, Result<frontier::UrlPage, FrontierError>> {
        Box::pin(async move { self.shared.list_urls(&query).await })
    }

    fn close(&self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.wake.notify_waiters();
    }

    fn stats(&self) -> BoxFuture<'_, Result<Stats, FrontierError>> {
        Box::pin(self.shared.stats())
    }
}
