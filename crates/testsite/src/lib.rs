//! A real local web to crawl: deterministic, multi-host, hostile on demand, with ground truth.
//!
//! No test of the crawler may touch the internet, and a crawler is only as trustworthy as the
//! web it was tested on. This crate generates a whole web from a [`SiteConfig`] and a seed —
//! the same config gives byte-for-byte the same site — and serves it over HTTP (hyper on
//! tokio) from `127.0.0.1`, either as a library ([`TestSite`]: start on port 0, read the
//! address, stop) or as the `testsite` binary.
//!
//! Design decisions:
//! - **Nothing is stored.** A page's links are a pure function of `(seed, page id)`
//!   ([`Site::page_links`]), so 10^8 pages cost no memory; the server renders on request.
//! - **Model first, bytes second.** [`Site::resolve`] says *what* a URL serves in canonical
//!   terms; `render` decides *how* it is written (ten equivalent link forms, charsets,
//!   compression). The ground truth ([`Site::ground_truth`]) walks the model, never HTTP, and
//!   a test checks it against an independent HTTP walk of the served bytes.
//! - **Everything a crawler meets**: robots.txt rules with longest match, `*` and `$`,
//!   Crawl-delay, a 404, a 500 and a garbage robots.txt; 301/302/307/308 redirects, chains,
//!   a loop, cross-host and to a disallowed path; 404, 410; 500, 503 and 429 (with
//!   `Retry-After`) that succeed on retry; images, PDFs and JSON; `Content-Type` lies; gzip
//!   and brotli; Latin-1, Shift_JIS and broken UTF-8; `rel=nofollow` and meta robots; deep
//!   chains; orphans that must never be found; and, on demand, [`Hostile`] behaviours.
//! - **Observability for politeness tests**: the [`Observer`] records, per host, the most
//!   requests in flight at once and the shortest gap between arrivals, and (optionally) every
//!   request with its time, host, path and concurrency.
//! - **Time, when asked** ([`Changing`]): pages get new versions at their own rates, with
//!   validators and 304s, and [`Site::freshness`] says exactly how fresh a crawl kept them.

#![forbid(unsafe_code)]

mod config;
mod freshness;
mod model;
mod observer;
mod render;
mod server;
mod truth;

pub use config::{
    Addressing, Changing, ConfigError, Hostile, SiteConfig, DEFAULT_DEPTH, DEFAULT_EXTRA_LINKS,
    DEFAULT_FANOUT, DEFAULT_HOSTS, DEFAULT_ORPHANS, DEFAULT_PAGES, MAX_PAGES,
};
pub use freshness::Freshness;
pub use model::{
    mix, Charset, Encoding, Expected, HostId, HostileKind, Html, Link, Resource, RobotsKind, Site,
    Target, Validators, FROM_SITEMAP, HOSTILE_SITEMAPS, MANY_HOSTS,
};
pub use observer::{HostStats, Observer, RequestRecord};
pub use render::relative;
pub use server::{bind, canonical_path, serve, TestSite};
pub use truth::{Crawler, GroundTruth, Recorded};
