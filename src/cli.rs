//! The command line, declared with clap's derive API.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// A concurrent web crawler built around a lock-free, Guava-compatible Bloom filter.
#[derive(Debug, Parser)]
#[command(name = "crawler", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Crawl from seed URLs, writing pages.jsonl and stats.json.
    Crawl(CrawlArgs),
    /// Run the crawl as a service: the same crawl, plus an HTTP API, /metrics and a dashboard
    /// on service.listen; it waits for new seeds when the frontier runs dry.
    Serve(ServeArgs),
    /// Try it on this machine: start the bundled test site in-process, serve the dashboard,
    /// seed the site, and print the dashboard's URL (Ctrl-C stops).
    Demo(DemoArgs),
    /// Check a configuration file, or print the default one.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Build, query and inspect Bloom filter files in Guava's `BloomFilter.writeTo` format.
    #[command(subcommand)]
    Bloom(BloomCommand),
    /// Mark URLs of a stopped crawl to be fetched again when it resumes (they leave the
    /// visited set's "done" part and are queued).
    Forget(ForgetArgs),
    /// Exit 0 if a crawl's heartbeat (`status.json` in the output directory) is fresh or the
    /// crawl has ended, or (`--api URL`) a service answers its status; 1 otherwise: a
    /// container HEALTHCHECK.
    Health(HealthArgs),
}

#[derive(Debug, Args)]
pub struct HealthArgs {
    /// Configuration file, to find crawl.out_dir (default: $CRAWLER_CONFIG, else
    /// ./crawler.toml if present; CRAWLER_CRAWL_OUT_DIR applies too).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The crawl's output directory (overrides the configuration).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Oldest acceptable heartbeat of a running crawl, in seconds (default: three heartbeat
    /// intervals plus 10 s).
    #[arg(long, value_name = "SECS")]
    pub max_age_secs: Option<u64>,
    /// Ask a running `crawler serve` instead: GET <URL>/api/v1/status (plain http, the
    /// token from CRAWLER_SERVICE_API_TOKEN); healthy when it answers with a state.
    #[arg(long, value_name = "URL", conflicts_with_all = ["out", "max_age_secs"])]
    pub api: Option<String>,
}

#[derive(Debug, Subcommand)]
#[command(
    after_help = "Exit codes: 0 ok, 64 bad usage, 65 bad filter or key data, \
                        66 input file (or crawl) not found, 69 Redis cannot be reached, 74 \
                        output cannot be written."
)]
pub enum BloomCommand {
    /// Build a filter from keys (one UTF-8 key per line), hashed like Guava's
    /// `Funnels.stringFunnel(UTF_8)`, and write it in Guava's format.
    Build(BuildArgs),
    /// Print one line per key: `1` if the filter might contain it, `0` if it certainly does not.
    Query(QueryArgs),
    /// Print the filter's shape and fill: bit size, hash count, bit count, estimated
    /// element count and expected false-positive probability.
    Info(InfoArgs),
    /// Write the visited set of a crawl shared in Redis (frontier.backend = "redis") in
    /// Guava's format: the same bytes as a local filter of its shape given the same URLs.
    Export(ExportArgs),
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The crawl's Redis (frontier.redis_url), e.g. redis://127.0.0.1:6379/0.
    #[arg(long, value_name = "URL")]
    pub redis: String,
    /// The crawl's id (frontier.crawl_id).
    #[arg(long, value_name = "ID", default_value = "crawl")]
    pub crawl_id: String,
    /// Where to write the filter (replaced atomically).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// A crawl of several partitions: one file of every partition's bits OR-ed (a URL of any
    /// partition is found in it), refused when its fill gives a false positive rate above
    /// --max-fpp. Without it: one file per partition.
    #[arg(long)]
    pub merged: bool,
    /// The highest false positive rate a --merged file may have.
    #[arg(long, value_name = "P", default_value_t = 0.01, requires = "merged")]
    pub max_fpp: f64,
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// Number of keys the filter is sized for (Guava's `expectedInsertions`).
    #[arg(long, value_name = "N")]
    pub expected: u64,
    /// Target false-positive probability at `--expected` keys, in (0, 1).
    #[arg(long, value_name = "P")]
    pub fpp: f64,
    /// Where to write the filter (replaced atomically).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// File of keys, one per line; standard input when absent.
    #[arg(long, value_name = "KEYS")]
    pub input: Option<PathBuf>,
    /// One `put` per key instead of batches (the same filter; for measuring the batch path).
    #[arg(long)]
    pub per_key: bool,
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// A filter file in Guava's format (written by this tool or by Java's `writeTo`).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// File of keys, one per line; standard input when absent.
    #[arg(long, value_name = "KEYS")]
    pub input: Option<PathBuf>,
    /// One query per key instead of batches (the same answers; for measuring the batch path).
    #[arg(long)]
    pub per_key: bool,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// A filter file in Guava's format.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Settings not given as flags come from CRAWLER_<SECTION>_<KEY> \
                        variables, then the config file, then the defaults (`crawler config \
                        default`). Exit codes: 0 done, 64 bad usage or configuration (or \
                        settings that differ from a shared crawl's), 69 no seed could be \
                        fetched, or the shared frontier's Redis cannot be reached, has no room \
                        for the crawl or refused it, 74 output cannot be written."
)]
pub struct CrawlArgs {
    /// Configuration file (default: $CRAWLER_CONFIG, else ./crawler.toml if present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A seed URL (repeatable).
    #[arg(long = "seed", value_name = "URL")]
    pub seeds: Vec<String>,
    /// A file of seed URLs, one per line (# comments allowed).
    #[arg(long, value_name = "FILE")]
    pub seeds_file: Option<PathBuf>,
    /// Output directory (crawl.out_dir).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Stop after N fetched pages (crawl.max_pages; 0 = no limit).
    #[arg(long, value_name = "N")]
    pub max_pages: Option<u64>,
    /// Stop gracefully after SECS seconds: what is in flight is finished, recorded and
    /// checkpointed, and the exit status is 0 (crawl.max_duration_secs; 0 = no limit).
    #[arg(long, value_name = "SECS")]
    pub max_duration: Option<u64>,
    /// Deepest link depth (crawl.max_depth).
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u32>,
    /// Fetches in flight at once (crawl.concurrency).
    #[arg(long, value_name = "N")]
    pub concurrency: Option<u32>,
    /// Gap between fetches to one host, in milliseconds (politeness.delay_ms).
    #[arg(long, value_name = "N")]
    pub delay_ms: Option<u64>,
    /// User-Agent (crawl.user_agent).
    #[arg(long, value_name = "S")]
    pub user_agent: Option<String>,
    /// Log line format (crawl.log_format).
    #[arg(long, value_name = "FORMAT", value_parser = ["plain", "json"])]
    pub log_format: Option<String>,
    /// Ignore robots.txt (crawl.respect_robots = false).
    #[arg(long)]
    pub ignore_robots: bool,
    /// Resolve a host name (or *.suffix) to an IP address, like curl --resolve (repeatable).
    /// It only says where a name points: the SSRF guard allows what the seeds resolve to.
    #[arg(long, value_name = "NAME=IP")]
    pub resolve: Vec<String>,
    /// Hosts links may lead to (frontier.scope): same-host, same-domain (the seeds'
    /// registrable domains), domains (--domain) or any.
    #[arg(long, value_name = "SCOPE", value_parser = ["same-host", "same-domain", "domains", "any"])]
    pub scope: Option<String>,
    /// A domain in scope, with its subdomains (frontier.domains, repeatable; implies
    /// --scope domains).
    #[arg(long = "domain", value_name = "DOMAIN")]
    pub domains: Vec<String>,
    /// Where the crawl state lives (crawl.state_dir; default <out>/state).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Start over: delete the crawl state and empty pages.jsonl instead of resuming (not
    /// with a frontier shared in Redis: give a new frontier.crawl_id there).
    #[arg(long)]
    pub fresh: bool,
    /// Archive every fetch as WARC files in <out>/warc (output.warc = true).
    #[arg(long)]
    pub warc: bool,
    /// Share one frontier in this Redis with every process of the crawl
    /// (frontier.backend = "redis", frontier.redis_url = URL).
    #[arg(long, value_name = "URL")]
    pub frontier_redis: Option<String>,
}

#[derive(Debug, Args)]
#[command(
    after_help = "The API token comes from service.api_token or CRAWLER_SERVICE_API_TOKEN \
                  (never a flag: flags show in the process list). Exit codes: 0 stopped, 64 bad \
                  usage or configuration (a public address without a token), 69 the address \
                  cannot be bound, 74 output cannot be written."
)]
pub struct ServeArgs {
    /// Every `crawler crawl` flag.
    #[command(flatten)]
    pub crawl: CrawlArgs,
    /// Address and port to listen on (service.listen).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// Address and port of the url-frontier gRPC API (service.grpc_listen; off unless set).
    #[arg(long, value_name = "ADDR:PORT")]
    pub grpc_listen: Option<String>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where the dashboard and API listen (another free port when it is taken, with a
    /// warning). Off loopback the API needs a token: CRAWLER_SERVICE_API_TOKEN, or one is
    /// made and printed.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8700")]
    pub listen: String,
    /// Pages of the test site.
    #[arg(long, value_name = "N", default_value_t = 4000)]
    pub pages: u64,
    /// Hosts of the test site (h0.test …).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub hosts: u32,
    /// Output directory (pages.jsonl, stats.json, the state); emptied at the start.
    #[arg(long, value_name = "DIR", default_value = "crawl-demo")]
    pub out: PathBuf,
    /// Gap between fetches to one host, in milliseconds: the default paces the demo at
    /// about 50 pages/s, a crawl of a minute or two to watch (0: full speed).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub delay_ms: u64,
}

#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// Configuration file of the crawl (its canonicalisation rules and state directory).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The crawl's state directory (default: crawl.state_dir, else <out>/state).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// The crawl's output directory (to find <out>/state).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// URLs to fetch again on the next run.
    #[arg(value_name = "URL", required = true)]
    pub urls: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate FILE (with CRAWLER_* variables applied); report every problem; exit 64 if any.
    Check {
        /// The configuration file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Print the default configuration, every key commented.
    Default,
}
