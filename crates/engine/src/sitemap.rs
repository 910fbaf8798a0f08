//! Sitemaps in a crawl. A host's sitemap files are found when its robots.txt is fetched (its
//! `Sitemap:` lines, and `/sitemap.xml`), and go through the frontier like any URL — so scope,
//! robots.txt, politeness, budgets and dedup apply to them and to what they list — marked as
//! sitemap files at a nesting level. A worker that leases one reads it here instead of
//! extracting links: an index offers its child files one level deeper (at most two levels of
//! nesting), a URL set offers its URLs with their `lastmod`. Each file gets a record (with
//! `"sitemap": true`) that says what was not followed and why; nothing in a sitemap stops the
//! crawl.

use frontier::{host_key, Lease, Link, Outcome, Via};
use url::Url;

use std::sync::Arc;

use crate::fetch::{Fetcher, Keep};
use crate::parse_pool::ParsePool;
use crate::sitemap_budget::{FileBudget, MAX_FILES_PER_HOST};
use crate::tail::{Response, Tail};

/// What reading sitemaps takes: the fetcher, the parsing pool, the fetch tail and the budget
/// of files per host.
#[derive(Debug)]
pub(crate) struct SitemapReader {
    pub(crate) tail: Tail,
    pub(crate) fetcher: Fetcher,
    pub(crate) parse: Arc<ParsePool>,
    /// Sitemap files offered per host (at most 1,000 each).
    pub(crate) files: FileBudget,
    pub(crate) max_body_bytes: u64,
}

/// The deepest level a sitemap file is read at: the top files are level 1, and indexes nest
/// at most two deep.
const MAX_LEVEL: u8 = 3;
use sitemaps::{Kind, Sitemap, MAX_ENTRIES};

/// Offers a host's sitemap files once its robots.txt was fetched: those it names (any host;
/// scope decides) and the host's own `/sitemap.xml`.
pub(crate) async fn discover(reader: &SitemapReader, page: &Url, listed: &[String]) {
    let Ok(robots) = page.join("/robots.txt") else {
        return;
    };
    let mut files: Vec<Url> = listed
        .iter()
        .filter_map(|l| robots.join(l).ok())
        .chain(robots.join("/sitemap.xml").ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .collect();
    files.dedup();
    let grant = reader.files.take(host_key(page), files.len());
    files.truncate(grant);
    if files.is_empty() {
        return;
    }
    let links: Vec<Link> = files
        .into_iter()
        .map(|u| Link {
            via: Via::Sitemap,
            sitemap: 1,
            ..Link::new(u, 0)
        })
        .collect();
    reader
        .tail
        .frontier()
        .with_frontier("offer", |f| f.offer(Some(robots.as_str()), links.clone()))
        .await;
}

/// Fetches and reads a leased sitemap file, offers what it lists and writes its record.
pub(crate) async fn read(reader: &SitemapReader, lease: &Lease, url: &Url) -> Outcome {
    let entry = lease.entry();
    let cap = reader.max_body_bytes;
    let mut fetched = reader
        .fetcher
        .fetch_with(url.as_str(), Keep::Always, cap, lease.last_of_host())
        .await;
    reader.tail.counters().latency.observe(fetched.elapsed);
    if let Some(retry) = reader
        .tail
        .retry(entry, fetched.is_transient(), fetched.retry_after)
    {
        return retry;
    }
    let mut notes: Vec<String> = fetched
        .error_text()
        .or_else(|| {
            reader
                .tail
                .wait_refused(fetched.is_transient(), fetched.retry_after)
        })
        .into_iter()
        .collect();
    let mut offers = Vec::new();
    let mut final_url = entry.url.clone();
    match fetched.status {
        // A redirected sitemap file stays a sitemap file at its level.
        Some(status @ 300..=399) => {
            match Link::redirect(entry, url, status, fetched.location.as_deref()) {
                Ok(mut link) => {
                    final_url = link.url.to_string();
                    link.sitemap = entry.sitemap;
                    offers.push(link);
                }
                Err(why) => notes.push(why),
            }
        }
        Some(200..=299) => {
            let body = std::mem::take(&mut fetched.body);
            match reader.parse.run(move || sitemaps::parse(&body)).await {
                Ok(Ok(sitemap)) => offers = listed(reader, entry, url, sitemap, &mut notes),
                Ok(Err(e)) => notes.push(e.to_string()),
                Err(e) => notes.push(format!("sitemap reading failed: {e}")),
            }
        }
        _ => {}
    }
    let error = (!notes.is_empty()).then(|| notes.join("; "));
    let found = offers.len();
    reader
        .tail
        .finish(
            lease,
            Response::of(&mut fetched, final_url, error),
            offers,
            found,
        )
        .await
}

/// The links a parsed sitemap file leads to, noting in `notes` what it held that is not
/// followed.
fn listed(
    reader: &SitemapReader,
    entry: &frontier::Entry,
    file: &Url,
    sitemap: Sitemap,
    notes: &mut Vec<String>,
) -> Vec<Link> {
    if let Some(why) = &sitemap.malformed {
        notes.push(format!(
            "sitemap: malformed XML at {why}; the {} entries before it are kept",
            sitemap.entries.len()
        ));
    } else if sitemap.truncated {
        notes.push(format!(
            "sitemap: more than {MAX_ENTRIES} entries; the rest are not read"
        ));
    }
    if sitemap.skipped > 0 {
        notes.push(format!(
            "sitemap: {} entries without a usable <loc> skipped",
            sitemap.skipped
        ));
    }
    // A sitemap lists URLs of its own host (sitemaps.org, "Sitemap file location").
    let mut elsewhere = 0u64;
    let mut urls = Vec::with_capacity(sitemap.entries.len());
    for e in sitemap.entries {
        match file.join(&e.loc) {
            Ok(u) if u.origin() == file.origin() => urls.push((u, e.lastmod)),
            _ => elsewhere += 1,
        }
    }
    if elsewhere > 0 {
        notes.push(format!(
            "sitemap: {elsewhere} entries not on this sitemap's host ignored"
        ));
    }
    match sitemap.kind {
        Kind::Index if entry.sitemap >= MAX_LEVEL => {
            notes.push(format!(
                "sitemap index nested more than 2 deep: its {} sitemaps are not read",
                urls.len()
            ));
            Vec::new()
        }
        Kind::Index => {
            let grant = reader.files.take(host_key(file), urls.len());
            if grant < urls.len() {
                notes.push(format!(
                    "{} sitemaps beyond {MAX_FILES_PER_HOST} per host are not read",
                    urls.len() - grant
                ));
                urls.truncate(grant);
            }
            urls.into_iter()
                .map(|(u, lastmod)| Link {
                    via: Via::Sitemap,
                    sitemap: entry.sitemap + 1,
                    lastmod,
                    ..Link::new(u, entry.depth)
                })
                .collect()
        }
        Kind::Urls => urls
            .into_iter()
            .map(|(u, lastmod)| Link {
                via: Via::Sitemap,
                lastmod,
                ..Link::new(u, entry.depth + 1)
            })
            .collect(),
    }
}
