//! A page's record, from the fetch to `pages.jsonl`: fenced (written only while this process
//! still holds the URL's lease, so a fetcher paused past it writes nothing for a URL another
//! now holds), credentials masked (no output shows a password), counted (by status, seeds'
//! responses and errors, the recent errors kept for the dashboard) and written; then the
//! event stream gets it. [`Recorder`] is a cheap-clone handle on all of that.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use frontier::{Lease, Outcome};
use tokio::sync::broadcast;

use crate::counters::{Counters, MAX_LISTED};
use crate::frontier_call::FrontierClient;
use crate::output::{Output, PageRecord};
use crate::run::Run;
use crate::sync::lock;
use crate::StopReason;

/// Where records go (see the module header).
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    pub(crate) frontier: FrontierClient,
    pub(crate) output: Output,
    /// Every record written, for `GET /api/v1/events` (serialized by the stream that sends
    /// it, and only if it does: a dashboard that wants errors alone costs the crawl nothing
    /// more than this clone).
    pub(crate) events: broadcast::Sender<Arc<PageRecord>>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) run: Run,
}

/// What became of a record.
pub(crate) enum Written {
    /// Written and counted.
    Yes,
    /// The output failed: the crawl stops and the URL is not done (a resume fetches it
    /// again).
    OutputFailed,
    /// This process no longer holds the lease (it expired while the process was paused, and
    /// another fetcher has the URL), or cannot tell while stopping: nothing written.
    NotHeld,
}

/// Writes `record` and counts it (by status; a seed's response or its error), once the
/// frontier confirms this process still holds `lease` (the fence: a record is written only
/// by the lease's holder).
impl Recorder {
    pub(crate) async fn write(
        &self,
        lease: &Lease,
        held: Option<bool>,
        mut record: PageRecord,
        capture: Option<Box<crate::fetch::Capture>>,
    ) -> Written {
        let entry = lease.entry();
        // `held`: the frontier answered the fence with the page's offer. A frontier whose
        // leases cannot expire (this process') always says yes: not asked.
        let held = match held {
            Some(h) => h,
            None if !self.frontier.calls_can_fail() => true,
            None => self.frontier.with_frontier("hold", |f| f.hold(lease)).await == Some(true),
        };
        if !held {
            return Written::NotHeld;
        }
        // Credentials in URLs are never written out (the fetch sent them): every output takes
        // the record from here.
        mask_credentials(&mut record);
        let status_key = record
            .status
            .map_or_else(|| "error".to_owned(), |s| s.to_string());
        *lock(&self.counters.by_status)
            .entry(status_key)
            .or_default() += 1;
        if entry.depth == 0 && entry.parent.is_none() {
            match (&record.status, &record.error) {
                (Some(_), _) => {
                    self.counters.seeds_fetched.fetch_add(1, Ordering::Relaxed);
                }
                (None, error) => {
                    let mut errors = lock(&self.counters.seed_errors);
                    if errors.len() < MAX_LISTED {
                        let why = error.as_deref().unwrap_or("no response");
                        errors.push(format!("{}: {why}", record.url));
                    }
                }
            }
        }
        let url = record.url.clone();
        let is_error = crate::recent::RecentErrors::is_error(&record);
        let shared =
            (is_error || self.events.receiver_count() > 0).then(|| Arc::new(record.clone()));
        if !self.output.record(record, capture, entry.id).await {
            tracing::error!(%url, "the output (pages.jsonl or a WARC file) cannot be written; stopping");
            self.run.stop(StopReason::OutputError);
            return Written::OutputFailed;
        }
        self.counters.pages.fetch_add(1, Ordering::Relaxed);
        if let Some(record) = shared {
            if is_error {
                self.counters.recent_errors.push(Arc::clone(&record));
            }
            if self.events.receiver_count() > 0 {
                let _ = self.events.send(record);
            }
        }
        Written::Yes
    }
}

/// Masks the credentials of every URL the record shows (see [`frontier::credentials`]).
pub(crate) fn mask_credentials(record: &mut PageRecord) {
    use frontier::credentials::mask;
    use std::borrow::Cow;
    fn masked(s: &mut String) {
        if let Cow::Owned(m) = mask(s) {
            *s = m;
        }
    }
    masked(&mut record.url);
    masked(&mut record.final_url);
    if let Some(p) = record.parent.as_mut() {
        masked(p);
    }
    if let Some(e) = record.error.as_mut() {
        masked(e);
    }
}

/// The record of a URL not fetched, and why; the URL is done once it is written.
impl Recorder {
    pub(crate) async fn unfetched(&self, lease: &Lease, why: String) -> Outcome {
        let entry = lease.entry();
        let record = PageRecord {
            url: entry.url.clone(),
            final_url: entry.url.clone(),
            status: None,
            depth: entry.depth,
            parent: entry.parent.clone(),
            via: entry.via.as_str(),
            sitemap: entry.sitemap > 0,
            lastmod: entry.lastmod.clone(),
            content_type: None,
            bytes: 0,
            links_found: 0,
            links_new: 0,
            fetch_ms: 0,
            fetched_at: crate::clock::now_rfc3339(),
            attempts: 0,
            truncated: false,
            error: Some(why),
            refetch: entry.visit.is_some(),
            ..PageRecord::default()
        };
        match self.write(lease, None, record, None).await {
            Written::Yes => Outcome::Done,
            Written::OutputFailed => Outcome::Retry { after: None },
            Written::NotHeld => Outcome::Released,
        }
    }
}
