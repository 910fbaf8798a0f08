//! Refetching a known URL under a recrawl schedule (`[recrawl]`): the validators its last
//! full response left become a conditional request, and the answer becomes what the record,
//! the archive and the frontier's schedule say of it.
//!
//! Design choice: the engine observes and the frontier schedules. This file turns a fetch
//! into a [`Visited`] — the history as the fetch leaves it, and whether the page changed —
//! with no clock but the record's own time; the frontier's policy turns that into a due time.
//! "Changed" is decided by the server's 304 first, then by the payload's SHA-1 (of the bytes
//! as received, the `WARC-Payload-Digest`), so a server without validators still gets
//! change detection, and a lying ETag is caught by the digest of the next full response.

use std::time::{SystemTime, UNIX_EPOCH};

use config::{CrawlConfig, RecrawlPolicy};
use fetch::{Fetched, Revisit, RevisitRecord};
use frontier::{Entry, Visited};
use recrawl::{Etag, History, Observation, Policy, Schedule};
use warc::revisit::Profile;

/// The schedule `cfg` asks for.
pub fn policy(cfg: &CrawlConfig) -> Policy {
    let r = &cfg.recrawl;
    Policy {
        schedule: match r.policy {
            RecrawlPolicy::None => Schedule::None,
            RecrawlPolicy::Fixed => Schedule::Fixed,
            RecrawlPolicy::Adaptive => Schedule::Adaptive,
        },
        interval_secs: r.interval_secs,
        min_interval_secs: r.min_interval_secs,
        max_interval_secs: r.max_interval_secs,
        jitter: r.jitter,
    }
}

/// What a fetch under a schedule asks: validators from the entry's last full response
/// (none on a first fetch, which is still measured: its digest and validators are kept).
pub(crate) fn request(entry: &Entry) -> Revisit {
    let Some(v) = &entry.visit else {
        return Revisit::default();
    };
    Revisit {
        etag: v.history.etag.as_ref().map(Etag::to_header),
        last_modified: v.history.last_modified,
    }
}

/// What a fetch of `entry` observed, and what its record and archive say of it.
#[derive(Debug)]
pub(crate) struct Observed {
    /// For the frontier's schedule.
    pub(crate) visited: Visited,
    /// The record's `changed` (on a refetch that got a 304 or a 200).
    pub(crate) changed: Option<bool>,
    /// The record's `digest` (a 200).
    pub(crate) digest: Option<String>,
    /// A 304 to a conditional request: the page was not sent again.
    pub(crate) not_modified: bool,
    /// Body bytes the 304 saved (the last full response's).
    pub(crate) bytes_saved: u64,
}

impl Observed {
    /// Whether the page is as its last full fetch found it: its links are known, so it is
    /// not parsed again.
    pub(crate) fn unchanged(&self) -> bool {
        self.changed == Some(false)
    }
}

/// Unix seconds and milliseconds of `at`.
fn unix(at: SystemTime) -> (u32, u16) {
    let d = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    (
        u32::try_from(d.as_secs()).unwrap_or(u32::MAX),
        d.subsec_millis() as u16,
    )
}

/// The `WARC-Date` of a capture made at `(secs, millis)`.
fn warc_date((secs, millis): (u32, u16)) -> String {
    let at = UNIX_EPOCH
        + std::time::Duration::from_secs(u64::from(secs))
        + std::time::Duration::from_millis(u64::from(millis));
    warc::Utc::of(at).rfc3339()
}

/// Observes `fetched`, a fetch of `entry` whose request was `sent` and whose record is
/// written at `at`; a capture it carries learns whether it is a revisit.
pub(crate) fn observe(
    entry: &Entry,
    sent: &Revisit,
    fetched: &mut Fetched,
    at: SystemTime,
) -> Observed {
    let before = entry.visit.as_ref().map(|v| &v.history);
    let mut h = before.cloned().unwrap_or_default();
    h.last_fetch = unix(at).0;
    h.status = fetched.status.unwrap_or(0);
    let mut changed = None;
    let mut digest = None;
    let mut not_modified = false;
    let mut bytes_saved = 0;
    let mut revisit = None;
    let seen = match fetched.status {
        Some(304) if sent.has_validators() => {
            // Validators, digest and capture stay those of the last full response.
            not_modified = true;
            bytes_saved = before.map_or(0, |b| u64::from(b.body_bytes));
            changed = Some(false);
            h.count(false);
            h.gone_streak = 0;
            revisit = Some(Profile::ServerNotModified);
            Observation::Unchanged
        }
        Some(200) => {
            let sha = fetched.digest;
            digest = sha.as_ref().map(warc::sha1_label);
            let same = match (before, &sha) {
                (Some(b), Some(sha)) => Some(b.same_payload(sha)),
                _ => None,
            };
            changed = same.map(|s| !s);
            if same.is_some() {
                h.count(!same.unwrap_or(false));
            }
            h.gone_streak = 0;
            h.etag = fetched.etag.as_deref().and_then(Etag::from_header);
            h.last_modified = fetched.last_modified;
            if same == Some(true) && !fetched.truncated {
                // The earlier capture stands for this one (its date stays the one referred to).
                revisit = Some(Profile::IdenticalPayloadDigest {
                    payload_digest: digest.clone().unwrap_or_default(),
                });
            } else {
                if let Some(sha) = &sha {
                    h.digest = History::digest_of(sha);
                }
                h.body_bytes = u32::try_from(fetched.bytes).unwrap_or(u32::MAX);
                h.truncated = fetched.truncated;
                h.captured_at = fetched.capture.as_ref().map_or(unix(at), |c| unix(c.at));
            }
            if same == Some(true) {
                Observation::Unchanged
            } else {
                Observation::Changed
            }
        }
        Some(404 | 410) => {
            h.gone_streak = h
                .gone_streak
                .saturating_add(1)
                .min(recrawl::history::MAX_GONE_STREAK);
            Observation::Gone
        }
        Some(300..=399) => Observation::Unchanged,
        Some(s) if (400..500).contains(&s) && s != 429 => Observation::Gone,
        _ => Observation::Failed,
    };
    if let (Some(profile), Some(b), Some(capture)) = (revisit, before, fetched.capture.as_mut()) {
        capture.revisit = Some(RevisitRecord {
            profile,
            refers_to_date: warc_date(b.captured_at),
        });
    }
    Observed {
        visited: Visited { history: h, seen },
        changed,
        digest,
        not_modified,
        bytes_saved,
    }
}
