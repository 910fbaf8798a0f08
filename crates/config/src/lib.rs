//! `crawler.toml`: every setting of a crawl, its default, and loading with precedence
//! defaults < file < `CRAWLER_*` environment < command-line flags.
//!
//! This file holds the typed settings (one struct per section, an enum per choice); the
//! shipped `crawler.toml` defines every setting — its comment, its type and range (a `#:`
//! line, which `schema.rs` reads) and its default —, and `loader.rs` merges the layers and
//! checks them: loading never stops at the first
//! problem, and every unknown key, wrong type and impossible value is reported together, each
//! naming the key and where it came from (`crawler.toml:12`, `CRAWLER_FETCH_MAX_BODY_BYTES`,
//! `--concurrency`), as vector does for its configuration. A test keeps the three in step.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

mod loader;
mod problem;
mod rules;
mod schema;
mod suggest;

pub mod redact;

pub use loader::Loader;
pub use problem::{ConfigError, Origin, Problem};

/// A setting with a fixed set of values: an enum whose names are the schema's choices, so
/// the file, the validation and the code cannot disagree on them.
macro_rules! choice {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value's name, as written in `crawler.toml`.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// The name as written in `crawler.toml`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

choice!(
    /// `crawl.log_format`.
    LogFormat {
        /// Human-readable lines.
        Plain = "plain",
        /// One JSON object per line.
        Json = "json",
    }
);

choice!(
    /// `recrawl.policy`: whether and how a fetched URL is scheduled again.
    RecrawlPolicy {
        /// Once fetched, a URL is done.
        None = "none",
        /// Every URL again after `interval_secs`.
        Fixed = "fixed",
        /// Each URL's interval moves with what its fetches observe.
        Adaptive = "adaptive",
    }
);

choice!(
    /// `frontier.order`: serving order within a host.
    QueueOrder {
        /// Oldest first.
        BreadthFirst = "breadth-first",
        /// Newest first.
        DepthFirst = "depth-first",
    }
);

choice!(
    /// `frontier.scope`: which hosts links may lead to.
    ScopeKind {
        /// The seeds' hosts.
        SameHost = "same-host",
        /// The seeds' registrable domains.
        SameDomain = "same-domain",
        /// `frontier.domains`.
        Domains = "domains",
        /// Any host.
        Any = "any",
    }
);

choice!(
    /// `frontier.backend`: where the frontier lives.
    FrontierBackend {
        /// In this process (memory, spill files, the crawl state).
        Local = "local",
        /// In Redis, shared by every process of the crawl.
        Redis = "redis",
        /// In a url-frontier v2 service, reached over gRPC (`frontier.urlfrontier_url`).
        UrlFrontier = "urlfrontier",
    }
);

choice!(
    /// `frontier.dedup`: how the visited set decides a URL was seen.
    DedupMode {
        /// The Bloom filter alone.
        Bloom = "bloom",
        /// A "maybe seen" is confirmed in the crawl state's exact set.
        Exact = "exact",
    }
);

/// The whole configuration (one struct per `[section]`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CrawlConfig {
    /// `[crawl]`
    pub crawl: CrawlSection,
    /// `[fetch]`
    pub fetch: FetchSection,
    /// `[politeness]`
    pub politeness: PolitenessSection,
    /// `[frontier]`
    pub frontier: FrontierSection,
    /// `[service]`
    pub service: ServiceSection,
    /// `[output]`
    pub output: OutputSection,
    /// `[recrawl]`
    pub recrawl: RecrawlSection,
    /// The `section.key` settings given a value (by the file, the environment or a flag)
    /// rather than left at their defaults: a shared crawl refuses a process whose given value
    /// differs from the crawl's, and adopts the crawl's for the others.
    #[serde(skip)]
    pub given: std::collections::BTreeSet<String>,
}

/// `[crawl]`: what to crawl, how much, and where the output goes.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CrawlSection {
    /// Seed URLs.
    pub seeds: Vec<String>,
    /// Output directory (`pages.jsonl`, `stats.json`).
    pub out_dir: PathBuf,
    /// Stop after this many fetched pages (0 = no limit).
    pub max_pages: u64,
    /// Deepest link depth followed (seeds are 0).
    pub max_depth: u32,
    /// Stop after this many seconds (0 = no limit).
    pub max_duration_secs: u64,
    /// Fetches in flight at once.
    pub concurrency: u32,
    /// Resident memory, in MiB, the process keeps under by slowing fetches and spilling
    /// queues sooner as it nears it (0: no budget; the memory governor is off).
    pub max_memory_mb: u64,
    /// Built-in fetch workers: as many as `concurrency`, or a number (0 under `crawler serve`:
    /// only external fetchers crawl, through the lease API).
    pub workers: Workers,
    /// `User-Agent` header, also matched against robots.txt groups.
    pub user_agent: String,
    /// Obey robots.txt.
    pub respect_robots: bool,
    /// Skip `rel=nofollow` links and pages with `<meta name=robots content=nofollow>`.
    pub respect_nofollow: bool,
    /// Read each host's sitemaps (`Sitemap:` lines of robots.txt and `/sitemap.xml`).
    pub sitemaps: bool,
    /// Seconds to let in-flight fetches finish after SIGINT/SIGTERM.
    pub drain_secs: u64,
    /// Seconds between progress reports on a non-terminal.
    pub progress_secs: u64,
    /// Seconds between rewrites of `status.json` in the output directory (the heartbeat
    /// `crawler health` reads).
    pub status_secs: u64,
    /// Keep the crawl's state on disk so that it can resume after a crash or a stop.
    pub persist: bool,
    /// Where the state lives (empty: `<out_dir>/state`).
    pub state_dir: String,
    /// Milliseconds between checkpoints of the state.
    pub checkpoint_ms: u64,
    /// `plain` or `json` log lines.
    pub log_format: LogFormat,
}

/// `[fetch]`: HTTP behaviour and limits.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FetchSection {
    /// TCP (and TLS) connect timeout.
    pub connect_timeout_ms: u64,
    /// Longest wait for response headers.
    pub first_byte_timeout_ms: u64,
    /// Longest time for a whole fetch, body included.
    pub total_timeout_ms: u64,
    /// Largest body read (after decompression); longer bodies are cut and recorded as such.
    pub max_body_bytes: u64,
    /// Redirect hops followed from one URL (each hop goes back through the frontier).
    pub max_redirects: u8,
    /// Retries of connection errors, 5xx and 429 (with exponential back-off and jitter).
    pub max_retries: u8,
    /// First delay before a URL is fetched again after a transient failure; doubles each
    /// time (per URL; the host's back-off is `politeness.backoff_base_ms`).
    pub retry_base_ms: u64,
    /// Content types parsed for links.
    pub html_types: Vec<String>,
    /// Host name overrides, like curl's `--resolve`: `"h0.test" = "127.0.0.1"`, or a suffix
    /// pattern `"*.test" = "127.0.0.1"` (the port still comes from the URL).
    pub resolve: BTreeMap<String, String>,
    /// Fetch loopback, private, link-local and other non-public addresses found in links and
    /// redirects (the SSRF guard off). The socket addresses the seeds resolve to are allowed
    /// either way; `resolve` grants nothing by itself.
    pub allow_private: bool,
}

/// `[politeness]`: per-host pacing.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PolitenessSection {
    /// Minimum gap between fetch starts on one host (robots `Crawl-delay` wins when longer).
    pub delay_ms: u64,
    /// Fetches in flight per host.
    pub max_per_host: u32,
    /// First back-off of a host after an error; doubles with each further error of a fetch
    /// started since (fetches failing together count once). A backing-off host gets one fetch
    /// per back-off; the first that succeeds ends it, and the host is back to its pace at once.
    pub backoff_base_ms: u64,
    /// Longest back-off after errors, and longest `Retry-After` honoured; a robots.txt
    /// `Crawl-delay` above it skips the host (each URL gets a record saying so).
    pub max_backoff_secs: u64,
    /// Latency-adaptive pace: a host's next fetch starts at least this many times its last
    /// fetch's duration after the last one started (0 = off).
    pub delay_factor: f64,
    /// The latency term's bound (`Crawl-delay` is not bounded by it).
    pub max_delay_ms: u64,
    /// Gap between any two fetch starts to one address (0 = none).
    pub ip_delay_ms: u64,
    /// Most fetches in flight to one address (0 = no limit).
    pub max_per_ip: u32,
}

/// `[frontier]`: the visited set, the queue and the scope.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FrontierSection {
    /// `local`, `redis` or `urlfrontier`.
    pub backend: FrontierBackend,
    /// `backend = "redis"`: `redis://[user:password@]host:port/db`, or
    /// `redis+cluster://host:port[,host:port…]` for a Redis Cluster.
    pub redis_url: String,
    /// `backend = "urlfrontier"`: the service's gRPC address, `http://host:port`.
    pub urlfrontier_url: String,
    /// `backend = "urlfrontier"`: the bearer token the service asks for (empty: none).
    pub urlfrontier_token: String,
    /// `backend = "redis"`: the crawl's key prefix in Redis.
    pub crawl_id: String,
    /// `backend = "redis"`: seconds a lease lasts without a heartbeat.
    pub lease_secs: u64,
    /// `backend = "redis"`: partitions of the crawl's state (0: the crawl's own, 1 for a
    /// new crawl).
    pub partitions: u32,
    /// URLs the Bloom filter is sized for (it grows beyond, keeping its FPP).
    pub expected_urls: u64,
    /// Target false-positive probability of the visited set.
    pub fpp: f64,
    /// Queued URLs kept in memory; the rest spill to disk.
    pub memory_capacity: u64,
    /// Spill directory (empty: a temporary directory).
    pub spill_dir: String,
    /// `breadth-first` or `depth-first`.
    pub order: QueueOrder,
    /// `same-host`, `same-domain`, `domains` or `any`.
    pub scope: ScopeKind,
    /// Domains for `scope = "domains"`.
    pub domains: Vec<String>,
    /// Regexes a URL must match (any), if given.
    pub include: Vec<String>,
    /// Regexes that exclude a URL.
    pub exclude: Vec<String>,
    /// Pages per host (0 = no limit).
    pub max_pages_per_host: u64,
    /// Sort query parameters.
    pub sort_query: bool,
    /// Query parameters to drop (`utm_*` prefixes allowed).
    pub drop_params: Vec<String>,
    /// Treat `www.example.com` as `example.com`.
    pub strip_www: bool,
    /// Longest URL admitted.
    pub max_url_len: u64,
    /// Trap guard: most path segments.
    pub max_path_segments: u64,
    /// Trap guard: most repetitions of one path segment.
    pub max_repeated_segments: u64,
    /// Trap guard: most query parameters.
    pub max_query_params: u64,
    /// `bloom` (the filter alone) or `exact` (a "maybe seen" is confirmed in the state).
    pub dedup: DedupMode,
    /// Exact mode: MiB of memory for the exact set's index (0: every lookup reads the state).
    pub exact_index_mb: u64,
}

/// `[service]`: `crawler serve`'s HTTP API.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceSection {
    /// Address and port to listen on (a non-loopback address needs `api_token`).
    pub listen: String,
    /// Address and port of the url-frontier v2 gRPC API ("" = off); under the same token,
    /// exposure and connection rules as `listen`.
    pub grpc_listen: String,
    /// Most crawls the url-frontier API's clients may make besides the started one.
    pub max_crawls: u64,
    /// Bearer token every `/api` call must present ("" = none; allowed on loopback only).
    pub api_token: String,
    /// `/metrics` needs the token too (when one is set).
    pub protect_metrics: bool,
    /// Largest request body accepted.
    pub max_body_bytes: u64,
    /// Most URLs (seeds, forgets, leases, completions) in one call.
    pub max_urls_per_call: u64,
    /// Lease time of an external fetcher's URLs when its call names none.
    pub lease_secs: u64,
    /// Seeds added over the API may be private addresses, as the operator's own seeds are
    /// (otherwise the SSRF guard applies to them like to links).
    pub allow_private_seeds: bool,
    /// Host names (or `host:port`) the service answers to besides IP addresses and
    /// `localhost`; any other `Host` header is refused (DNS rebinding).
    pub allowed_hosts: Vec<String>,
    /// Most API connections open at once; more are answered 503 and closed.
    pub max_connections: u64,
    /// Most event streams (`GET /api/v1/events`) open at once.
    pub max_event_streams: u64,
    /// Seconds a client may take to send a request head (and keep a connection idle).
    pub header_timeout_secs: u64,
    /// Seconds one request may take, body included (an event stream once open is not
    /// bounded by it).
    pub request_timeout_secs: u64,
    /// Seconds a response write may make no progress before the client is dropped (an
    /// event stream nobody reads).
    pub write_timeout_secs: u64,
}

/// `[output]`: what is written besides `pages.jsonl`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSection {
    /// Archive every fetch as WARC files in `<out_dir>/warc`.
    pub warc: bool,
    /// Size in MiB at which a WARC file is closed and the next one begun.
    pub warc_max_mb: u64,
    /// gzip level of each WARC record (1 fastest … 9 smallest).
    pub warc_gzip_level: u32,
}

/// `[recrawl]`: whether and when a fetched URL is fetched again.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RecrawlSection {
    /// `none` (one-shot), `fixed` or `adaptive`.
    pub policy: RecrawlPolicy,
    /// Seconds after a fetch before the URL is due again.
    pub interval_secs: u32,
    /// Shortest interval, seconds.
    pub min_interval_secs: u32,
    /// Longest interval, seconds.
    pub max_interval_secs: u32,
    /// Share of the interval a due time moves either way.
    pub jitter: f64,
}

/// `crawl.workers`: how many built-in fetch workers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "WorkersRepr")]
pub enum Workers {
    /// As many as `crawl.concurrency` (the default).
    Concurrency,
    /// This many (0: none).
    Count(u32),
}

impl Workers {
    /// The number of workers for a crawl of `concurrency`.
    pub fn count(self, concurrency: u32) -> u32 {
        match self {
            Workers::Concurrency => concurrency,
            Workers::Count(n) => n,
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum WorkersRepr {
    Count(u32),
    Word(String),
}

impl Serialize for Workers {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Workers::Concurrency => s.serialize_str("concurrency"),
            Workers::Count(n) => s.serialize_u32(*n),
        }
    }
}

impl TryFrom<WorkersRepr> for Workers {
    type Error = String;

    fn try_from(r: WorkersRepr) -> Result<Self, String> {
        match r {
            WorkersRepr::Count(n) => Ok(Workers::Count(n)),
            WorkersRepr::Word(w) if w == "concurrency" => Ok(Workers::Concurrency),
            WorkersRepr::Word(w) => Err(format!("`{w}`: expected a number or \"concurrency\"")),
        }
    }
}

/// The default configuration file, every key commented with its default. Parsed as the
/// defaults, printed by `crawler config default`, and the repository's `crawler.toml`.
pub const DEFAULT_TOML: &str = include_str!("../../../crawler.toml");

impl Default for CrawlConfig {
    fn default() -> Self {
        toml::from_str(DEFAULT_TOML).expect("the built-in default configuration is valid")
    }
}
