//! The end of every fetch, whoever fetched (the workers, an external fetcher's completion,
//! the sitemap reader): the retry decision, a `Retry-After` too long to wait, and [`finish`]
//! — offer what the page leads to, write its record, give the outcome. [`Tail`] is a
//! cheap-clone handle holding what that takes: the frontier, the recorder and the rules.

use std::sync::atomic::Ordering;
use std::time::Duration;

use frontier::{Admission, Lease, Link, OutOfScope, Outcome};

use crate::counters::Counters;
use crate::fetch::Fetched;
use crate::frontier_call::{FrontierClient, Retained};
use crate::output::PageRecord;
use crate::record::{Recorder, Written};
use crate::CrawlConfig;

/// The settings the end of a fetch applies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TailRules {
    pub(crate) max_retries: u8,
    pub(crate) retry_base_ms: u64,
    pub(crate) max_backoff_secs: u64,
    pub(crate) max_redirects: u8,
}

impl TailRules {
    pub(crate) fn of(cfg: &CrawlConfig) -> Self {
        Self {
            max_retries: cfg.fetch.max_retries,
            retry_base_ms: cfg.fetch.retry_base_ms,
            max_backoff_secs: cfg.politeness.max_backoff_secs,
            max_redirects: cfg.fetch.max_redirects,
        }
    }
}

/// The end of every fetch (see the module header).
#[derive(Debug, Clone)]
pub(crate) struct Tail {
    pub(crate) recorder: Recorder,
    pub(crate) rules: TailRules,
}

impl Tail {
    /// The frontier the records' links go to (the recorder's).
    pub(crate) fn frontier(&self) -> &FrontierClient {
        &self.recorder.frontier
    }

    /// The crawl's counters (the recorder's).
    pub(crate) fn counters(&self) -> &Counters {
        &self.recorder.counters
    }

    /// A transient failure with retries left: fetch the URL again later (after the per-URL
    /// delay, or the server's `Retry-After` when longer). A `Retry-After` beyond the longest
    /// back-off is not waited for ([`wait_refused`] says so in the record).
    pub(crate) fn retry(
        &self,
        entry: &frontier::Entry,
        transient: bool,
        retry_after: Option<Duration>,
    ) -> Option<Outcome> {
        if !transient
            || entry.attempt >= self.rules.max_retries
            || self.wait_refused(transient, retry_after).is_some()
        {
            return None;
        }
        self.counters().retries.fetch_add(1, Ordering::Relaxed);
        let backoff = retry_delay(self.rules.retry_base_ms, entry.attempt, &entry.url);
        let after = retry_after.map_or(backoff, |r| r.max(backoff));
        Some(Outcome::Retry { after: Some(after) })
    }

    /// Why a transient failure is not retried although retries are left: its `Retry-After`
    /// (a year, say) is longer than `politeness.max_backoff_secs`, the longest the crawl waits.
    pub(crate) fn wait_refused(
        &self,
        transient: bool,
        retry_after: Option<Duration>,
    ) -> Option<String> {
        let max = self.rules.max_backoff_secs;
        match retry_after {
            Some(wait) if transient && wait > Duration::from_secs(max) => Some(format!(
                "Retry-After of {} s is beyond politeness.max_backoff_secs ({max} s): not retried",
                wait.as_secs()
            )),
            _ => None,
        }
    }
}

/// How a fetch ended, whoever fetched.
#[derive(Debug, Default)]
pub(crate) struct Response {
    pub(crate) status: Option<u16>,
    pub(crate) final_url: String,
    pub(crate) content_type: Option<String>,
    pub(crate) bytes: u64,
    pub(crate) fetch_ms: u64,
    pub(crate) truncated: bool,
    pub(crate) error: Option<String>,
    /// The host is struggling (5xx, 429, no response): it backs off.
    pub(crate) transient: bool,
    pub(crate) retry_after: Option<Duration>,
    /// The fetch as sent and received, to archive (`output.warc`).
    pub(crate) capture: Option<Box<crate::fetch::Capture>>,
    /// When the fetch ended (the record's `fetched_at`; now when not given).
    pub(crate) at: Option<std::time::SystemTime>,
    /// `[recrawl]`: the payload's digest, whether the page changed (on a refetch).
    pub(crate) digest: Option<String>,
    pub(crate) changed: Option<bool>,
}

impl Response {
    /// How a built-in fetch ended, with the URL it ended at and the record's error; its
    /// capture moves to the response.
    pub(crate) fn of(fetched: &mut Fetched, final_url: String, error: Option<String>) -> Self {
        Self {
            status: fetched.status,
            final_url,
            content_type: fetched.content_type.clone(),
            bytes: fetched.bytes,
            fetch_ms: fetched.elapsed.as_millis() as u64,
            truncated: fetched.truncated,
            error,
            transient: fetched.is_transient(),
            retry_after: fetched.retry_after,
            capture: fetched.capture.take(),
            ..Self::default()
        }
    }
}

/// Offers what a fetched page leads to (one frontier call), writes its record and returns
/// the outcome: the end of every fetch, built-in or external. A page whose links could not
/// be offered (the crawl stopped while the frontier failed) gets no record and is given
/// back: it is fetched again, never done without its links.
impl Tail {
    pub(crate) async fn finish(
        &self,
        lease: &Lease,
        r: Response,
        offers: Vec<Link>,
        links_found: usize,
    ) -> Outcome {
        let entry = lease.entry();
        let links_found = links_found as u64;
        let mut links_new = 0;
        let mut r = r;
        // The fence of the record (see `record.rs`), answered with the offer where the frontier
        // can: one call for both.
        let mut held = None;
        if !offers.is_empty() {
            let mut offers = Retained::new(offers, self.frontier().calls_can_fail());
            let Some((admissions, fenced)) = self
                .frontier()
                .with_frontier("offer", |f| f.offer_and_hold(lease, offers.take()))
                .await
            else {
                return Outcome::Released;
            };
            held = fenced;
            links_new = admissions
                .iter()
                .filter(|a| **a == Admission::Admitted)
                .count() as u64;
            // A redirect whose target the frontier refused: the record says why the chain ends.
            if let (Some(300..=399), [Admission::OutOfScope(reason)], None) =
                (r.status, admissions.as_slice(), &r.error)
            {
                r.error = Some(match reason {
                    OutOfScope::Redirects => format!(
                        "redirect not followed: more than {} redirects (fetch.max_redirects)",
                        self.rules.max_redirects
                    ),
                    other => format!(
                        "redirect not followed: target out of scope ({})",
                        other.name()
                    ),
                });
            }
        }
        self.counters().bytes.fetch_add(r.bytes, Ordering::Relaxed);
        tracing::debug!(url = %frontier::credentials::mask(&entry.url), status = r.status, bytes = r.bytes, links_found, links_new, "fetched");
        let record = PageRecord {
            url: entry.url.clone(),
            final_url: r.final_url,
            status: r.status,
            depth: entry.depth,
            parent: entry.parent.clone(),
            via: entry.via.as_str(),
            sitemap: entry.sitemap > 0,
            lastmod: entry.lastmod.clone(),
            content_type: r.content_type,
            bytes: r.bytes,
            links_found,
            links_new,
            fetch_ms: r.fetch_ms,
            fetched_at: r
                .at
                .map_or_else(crate::clock::now_rfc3339, |at| warc::Utc::of(at).rfc3339()),
            attempts: u32::from(entry.attempt) + 1,
            truncated: r.truncated,
            error: r.error,
            digest: r.digest,
            refetch: entry.visit.is_some(),
            changed: r.changed,
            warc_file: None,
            warc_offset: None,
        };
        match self.recorder.write(lease, held, record, r.capture).await {
            Written::Yes => {}
            Written::OutputFailed => return Outcome::Retry { after: None },
            Written::NotHeld => return Outcome::Released,
        }
        if r.transient {
            Outcome::HostError {
                retry_after: r.retry_after,
            }
        } else {
            Outcome::Done
        }
    }
}

/// `base · 2^attempt`, with ±50% jitter derived from the URL and attempt (no RNG needed, and
/// different URLs of one host spread out).
fn retry_delay(base_ms: u64, attempt: u8, url: &str) -> Duration {
    let exp = base_ms.saturating_mul(1u64 << attempt.min(16));
    let h = url
        .bytes()
        .fold(u64::from(attempt) ^ 0x9E37_79B9_7F4A_7C15, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
    let jitter = (h % 1000) as f64 / 1000.0 + 0.5; // 0.5 ..= 1.5
    Duration::from_millis((exp as f64 * jitter) as u64)
}
