//! One crawl's URLs as the RPCs that move them see it: PutDiscovered and PutURLs take them,
//! GetURLs hands them out ([`crate::crawls`] sends each item to its crawl's table).
//!
//! Design choices:
//! - **A hand-out is an external lease** ([`engine::Control::lease_unchecked`]): the URL is
//!   held for `delay_requestable` seconds and, if no update comes back by then, served again
//!   — a client killed mid-lease loses nothing. The client decides scope, robots.txt and what
//!   addresses it fetches, as url-frontier's clients do, so no check of ours stands between
//!   the queue and the client; politeness per host and `crawl.concurrency` (leases out and
//!   the built-in workers' fetches together) still hold.
//! - **Handed out as put, found by the canonical form** ([`Held`]): a URL comes back as the
//!   string the client put, with its metadata ([`frontier::ClientInfo`], kept with the queued
//!   URL); its lease is held under the crawl's canonical URL, and an update by any spelling
//!   of it matches. A known URL's update with a date replaces the string and metadata it
//!   was put with (a held one's: an asleep one keeps those it has).
//! - **A queue is the URL's `key`** — the client's, or the host (with its port when it is
//!   not the scheme's; upstream drops it) when none is given: the frontier's politeness key,
//!   so the key's queue has one delay, one concurrency cap, one budget and the host controls
//!   (SetDelay, BlockQueueUntil, SetCrawlLimit, DeleteQueue) whatever hosts it holds. A URL
//!   stays in the queue it was admitted to.
//! - **A known URL with `refetchable_from_date` = 0 is done**: held here, its lease is
//!   finished as fetched by the client (a page for the budgets; the client keeps the record).
//!   Not held (its lease expired, or never handed out), it is offered so that the visited
//!   set knows it and remembered as finished ([`Held::finished`]): should it come up again it
//!   is finished there and then, not handed out.
//! - **A known URL with a later date sleeps until then**, with a `[recrawl]` schedule or
//!   without (the schedule decides only what follows a fetch that gives no date): held, its
//!   lease is finished as above, due at the date, in one completion; asleep already, it is
//!   moved to the date ([`Control::move_due`], as `POST /api/v1/recrawl` moves one); never
//!   seen, it is admitted asleep until the date ([`frontier::Link::due`]), so that URLs due
//!   come out earliest date first (upstream's RightOrder). One queued in its queue or held
//!   here cannot be moved: it is fetched in its turn (the log says so once); one seen but
//!   neither queued there nor asleep — finished (a known URL with date 0, or fetched by the
//!   built-in workers without a schedule), or out with another fetcher at that moment — is
//!   queued again asleep until the date ([`Control::requeue_dated`]).
//! - **Acks keep the order of the items**; a client that stops reading them stops the intake
//!   after a few batches ([`ACKS_AHEAD`]) or a few hundred items.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::crawls::Crawl;
use engine::{Control, RecrawlResult, SeedResult, UrlPlace};
use frontier::{ClientInfo, Found};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tonic::codegen::tokio_stream::wrappers::ReceiverStream;
use tonic::codegen::BoxStream;
use tonic::{Status, Streaming};
use urlfrontier_proto::v2::ack_message::Status as Ack;
use urlfrontier_proto::v2::url_item::Item;
use urlfrontier_proto::v2::{StringList, UrlInfo};

/// Acks not yet read by the client before the intake waits (backpressure).
pub(crate) const ACKS_AHEAD: usize = 4;

/// GetURLs' hold when the request names none (the protocol's default).
const DEFAULT_HOLD_SECS: u64 = 30;

/// The longest hold (as an external fetcher's lease): a day.
const MAX_HOLD_SECS: u64 = 86_400;

/// Most URLs remembered as done while not held (each is forgotten when it comes up); past
/// it, such a URL may be handed out again.
const MAX_FINISHED: usize = 1_000_000;

/// The latest date taken (2100-01-01, Unix seconds): a later `refetchable_from_date` means
/// never, and the URL is done.
pub(crate) const LATEST_DATE: u64 = 4_102_444_800;

/// Now, Unix seconds.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// What bounds the work of one call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Most URLs in one batch or one GetURLs (`service.max_urls_per_call`).
    pub(crate) max_urls: usize,
    /// Longest wait for the frontier on one batch (`service.request_timeout_secs`): past it
    /// the batch is acked `FAIL` (resend).
    pub(crate) frontier_wait: Duration,
}

/// The URLs handed out and not yet updated, by canonical URL: their lease and its end.
#[derive(Debug, Default)]
struct Held {
    leases: HashMap<String, (u64, Instant)>,
    /// Known as done while not held, by canonical URL: finished when next handed out.
    finished: HashSet<String>,
}

/// One crawl's URL RPCs: its state and handles.
#[derive(Debug)]
pub(crate) struct Urls {
    /// The crawl's ID (in each URL handed out).
    crawl_id: Arc<str>,
    /// Which crawl of that name ([`Crawl::generation`]).
    generation: u64,
    control: Control,
    limits: Limits,
    held: Mutex<Held>,
    /// Whether the log has said that a date for a URL queued, out or done is not kept.
    said_date_not_kept: AtomicBool,
}

/// Runs `call` on its own task and waits for it at most `limits.frontier_wait`: `None`
/// past that. The call itself is never cut off midway (a frontier call dropped between its
/// steps could leave a lease renewed for good); it finishes on its own, and what it did shows
/// on a resend (`SKIPPED`) or when its hold passes.
pub(crate) async fn bounded<T: Send + 'static>(
    limits: Limits,
    call: impl std::future::Future<Output = T> + Send + 'static,
) -> Option<T> {
    let task = tokio::spawn(call);
    tokio::time::timeout(limits.frontier_wait, task)
        .await
        .ok()
        .and_then(Result::ok)
}

/// Reads `input` on its own task and answers each message with what `handle` makes of it,
/// in order, at most `ahead` answers unread by the client (then the intake waits: the
/// backpressure of a put stream). An error of the stream or of `handle` is the last answer.
pub(crate) fn ack_stream<In, Out, F, Fut>(
    mut input: Streaming<In>,
    ahead: usize,
    mut handle: F,
) -> BoxStream<Out>
where
    In: Send + 'static,
    Out: Send + 'static,
    F: FnMut(In) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<Out, Status>> + Send,
{
    let (tx, rx) = mpsc::channel(ahead);
    tokio::spawn(async move {
        loop {
            let answer = match input.message().await {
                Ok(Some(message)) => handle(message).await,
                Ok(None) => return,
                Err(e) => Err(e),
            };
            let last = answer.is_err();
            if tx.send(answer).await.is_err() || last {
                return; // The client is gone, or the stream ends here.
            }
        }
    });
    Box::pin(ReceiverStream::new(rx))
}

/// The statuses of one batch of discovered URLs, in its order, offered with each URL's
/// client fields (`infos`: one per URL, or none) and, when given, asleep until `due` (Unix
/// seconds): `OK` for a URL queued, `SKIPPED` for one the crawl has seen (a repeat within the
/// batch too) or cannot crawl, `FAIL` for every URL when the frontier took none of them in
/// time, or the crawl is stopping (resend).
async fn offer_due(
    control: &Control,
    urls: Vec<String>,
    infos: Vec<Option<Box<ClientInfo>>>,
    due: Option<u64>,
    limits: Limits,
) -> Vec<Ack> {
    let (control, n) = (control.clone(), urls.len());
    let offered = bounded(limits, async move {
        control.offer_from_client(&urls, infos, due).await
    })
    .await;
    match offered {
        Some(Some(results)) => results
            .iter()
            .map(|r| match r {
                SeedResult::Admitted => Ack::Ok,
                SeedResult::Duplicate | SeedResult::OutOfScope(_) | SeedResult::Invalid(_) => {
                    Ack::Skipped
                }
            })
            .collect(),
        Some(None) | None => vec![Ack::Fail; n],
    }
}

/// A discovered URL's fields, as [`client_info`], but none for a URL put with neither
/// metadata nor key: the engine keeps its string where canonicalisation changes it
/// ([`Control::offer_from_client`]), so most URLs cost no fields at all.
pub(crate) fn discovered_info(info: &UrlInfo) -> Result<Option<Box<ClientInfo>>, Status> {
    if info.metadata.is_empty() && info.key.is_empty() {
        return Ok(None);
    }
    client_info(info)
}

/// What a client put with a URL (its string, its metadata) as the frontier keeps it, or
/// `INVALID_ARGUMENT` past [`frontier::MAX_CLIENT_BYTES`].
pub(crate) fn client_info(info: &UrlInfo) -> Result<Option<Box<ClientInfo>>, Status> {
    let metadata = info
        .metadata
        .iter()
        .map(|(k, v)| (k.clone(), v.values.clone()));
    ClientInfo::keyed(&info.url, &info.key, metadata)
        .map(Some)
        .map_err(|why| Status::invalid_argument(format!("{}: {why}", info.url)))
}

/// A URL as a client gets it back: the string it put (`canonical` when it put that), its
/// queue `key` and its metadata.
pub(crate) fn url_info(
    key: String,
    canonical: String,
    client: Option<Box<ClientInfo>>,
    crawl_id: &str,
) -> UrlInfo {
    let (url, metadata) = match client {
        Some(c) => {
            let (original, metadata) = c.into_parts();
            let metadata = metadata
                .into_iter()
                .map(|(k, values)| (k, StringList { values }))
                .collect();
            (original.unwrap_or(canonical), metadata)
        }
        None => (canonical, HashMap::new()),
    };
    UrlInfo {
        key,
        url,
        metadata,
        crawl_id: crawl_id.to_owned(),
    }
}

impl Urls {
    pub(crate) fn new(crawl: Crawl, limits: Limits) -> Self {
        Self {
            crawl_id: crawl.id,
            generation: crawl.generation,
            control: crawl.control,
            limits,
            held: Mutex::default(),
            said_date_not_kept: AtomicBool::new(false),
        }
    }

    /// Which crawl of its name this is.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The crawl's handle.
    pub(crate) fn control(&self) -> &Control {
        &self.control
    }

    /// Offers `urls` as discovered, with their client fields (see [`offer_due`]).
    pub(crate) async fn offer(
        &self,
        urls: Vec<String>,
        infos: Vec<Option<Box<ClientInfo>>>,
    ) -> Vec<Ack> {
        offer_due(&self.control, urls, infos, None, self.limits).await
    }

    /// Drops every URL queued for `key` (DeleteQueue) — with `days` > 0 those created more
    /// than `days` days ago (PurgeURLs): how many; `UNAVAILABLE` when the frontier does not
    /// answer within `service.request_timeout_secs` (the delete may still happen: a resend
    /// answers 0).
    pub(crate) async fn delete_queue(&self, key: String, days: u32) -> Result<u64, Status> {
        let control = self.control.clone();
        bounded(self.limits, async move {
            control.delete_queue(&key, days).await
        })
        .await
        .flatten()
        .ok_or_else(|| {
            Status::unavailable(
                "the frontier did not answer within service.request_timeout_secs; \
                     the queue may be deleted all the same",
            )
        })
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One PutURLs item (its crawl is this one).
    pub(crate) async fn put(&self, item: Option<Item>) -> Result<Ack, Status> {
        let (info, date) = match item {
            Some(Item::Discovered(d)) => (d.info.unwrap_or_default(), None),
            Some(Item::Known(k)) => (k.info.unwrap_or_default(), Some(k.refetchable_from_date)),
            None => {
                return Err(Status::invalid_argument(
                    "an item that is neither discovered nor known",
                ))
            }
        };
        Ok(match date {
            None => {
                let fields = vec![discovered_info(&info)?];
                offer_due(&self.control, vec![info.url], fields, None, self.limits).await[0]
            }
            Some(0) => self.done(&info).await?,
            Some(d) if d > LATEST_DATE => self.done(&info).await?,
            Some(d) => self.refetch_from(&info, d).await?,
        })
    }

    /// Finishes the lease `id` of a URL a client fetched, due again at `due_at` with the
    /// update's `fields` when given; `None` when the frontier did not answer in time,
    /// `Some(false)` when the lease had ended.
    async fn finish(
        &self,
        id: u64,
        due_at: Option<u64>,
        fields: Option<Box<ClientInfo>>,
    ) -> Option<bool> {
        let control = self.control.clone();
        bounded(self.limits, async move {
            control.finish_by_client(id, due_at, fields).await
        })
        .await
    }

    /// A known URL to fetch again from `date` (Unix seconds): see the module's header.
    async fn refetch_from(&self, info: &UrlInfo, date: u64) -> Result<Ack, Status> {
        let fields = client_info(info)?;
        Ok(self.refetch(&info.url, fields, date).await)
    }

    async fn refetch(&self, raw: &str, fields: Option<Box<ClientInfo>>, date: u64) -> Ack {
        let Ok(canonical) = self.control.canonical(raw) else {
            return Ack::Skipped;
        };
        let url = canonical.to_string();
        let lease = self.held().leases.remove(&url).map(|(id, _)| id);
        if let Some(id) = lease {
            // Finished, it sleeps until the date, in one completion, with the update's
            // fields. (Past the wait it finishes anyway: a resend finds it asleep and moves
            // it.)
            match self.finish(id, Some(date), fields.clone()).await {
                Some(true) => return Ack::Ok,
                Some(false) => {} // its hold had passed: as if not held
                None => return Ack::Fail,
            }
        }
        let (control, owned) = (self.control.clone(), vec![url.clone()]);
        let moved = bounded(self.limits, async move {
            control.move_due(&owned, Some(date)).await
        })
        .await;
        match moved
            .and_then(Result::ok)
            .and_then(|r| r.into_iter().next())
        {
            None => Ack::Fail,
            Some(RecrawlResult::Scheduled) => Ack::Ok,
            Some(RecrawlResult::Queued) => self.refetch_seen(canonical, fields, date).await,
            Some(RecrawlResult::Invalid(_)) => Ack::Skipped,
            Some(RecrawlResult::NeverSeen) => {
                offer_due(
                    &self.control,
                    vec![url],
                    vec![fields],
                    Some(date),
                    self.limits,
                )
                .await[0]
            }
        }
    }

    /// A date for a URL the crawl has seen and that sleeps nowhere: one queued in its queue
    /// or held keeps its turn; one neither (finished, or out with another fetcher) is
    /// queued again, asleep until the date.
    async fn refetch_seen(
        &self,
        canonical: url::Url,
        fields: Option<Box<ClientInfo>>,
        date: u64,
    ) -> Ack {
        let key = match fields.as_deref().and_then(ClientInfo::key) {
            Some(k) => k.to_owned(),
            None => frontier::host_key(&canonical).to_owned(),
        };
        let (control, asked) = (self.control.clone(), canonical.clone());
        let place = bounded(
            self.limits,
            async move { control.find_url(&asked, &key).await },
        )
        .await
        .flatten();
        match place {
            None => Ack::Fail,
            Some(UrlPlace::Frontier(Found::Seen)) => {
                let control = self.control.clone();
                let requeued = bounded(self.limits, async move {
                    control.requeue_dated(canonical, fields, date).await
                })
                .await
                .flatten();
                match requeued {
                    Some(true) => Ack::Ok,
                    Some(false) => Ack::Skipped,
                    None => Ack::Fail,
                }
            }
            Some(_) => {
                if !self.said_date_not_kept.swap(true, Ordering::Relaxed) {
                    tracing::info!(
                        "a gRPC client gave a date to a URL this crawl has queued or out: it \
                         keeps its turn; said once"
                    );
                }
                Ack::Ok
            }
        }
    }

    /// A known URL, not to be fetched again (one not held is offered under its key).
    async fn done(&self, info: &UrlInfo) -> Result<Ack, Status> {
        let Ok(url) = self.control.canonical(&info.url) else {
            return Ok(Ack::Skipped);
        };
        let url = url.to_string();
        let lease = self.held().leases.remove(&url).map(|(id, _)| id);
        if let Some(id) = lease {
            match self.finish(id, None, None).await {
                Some(true) => return Ok(Ack::Ok),
                Some(false) => {} // its hold had passed: as if not held
                None => return Ok(Ack::Fail),
            }
        }
        // Not held: the visited set learns it, and it is finished should it come up (in its
        // key's queue, where the client looks for it). It is remembered first, so that a
        // GetURLs meanwhile does not hand it out; forgotten again if the frontier does not
        // take it.
        let fields = discovered_info(info)?;
        let remembered = {
            let mut held = self.held();
            held.finished.len() < MAX_FINISHED && held.finished.insert(url.clone())
        };
        let offered = offer_due(
            &self.control,
            vec![url.clone()],
            vec![fields],
            None,
            self.limits,
        );
        Ok(match offered.await[0] {
            Ack::Fail => {
                if remembered {
                    self.held().finished.remove(&url);
                }
                Ack::Fail
            }
            _ => Ack::Ok,
        })
    }

    /// GetURLs of this crawl: at most `max` due URLs (of the queue `key` alone when given),
    /// each held for `delay_requestable` seconds (0: the protocol's default). Nothing while
    /// the crawl is paused; `UNAVAILABLE` when the frontier does not answer within
    /// `service.request_timeout_secs`.
    pub(crate) async fn lease(
        &self,
        max: usize,
        delay_requestable: u32,
        key: Option<String>,
    ) -> Result<Vec<UrlInfo>, Status> {
        let hold = match delay_requestable {
            0 => DEFAULT_HOLD_SECS,
            s => u64::from(s).min(MAX_HOLD_SECS),
        };
        // Bounded as an HTTP call is: a frontier that does not answer (Redis stalled)
        // leaves the client free to try again, and what was leased meanwhile expires.
        let control = self.control.clone();
        let leased = bounded(self.limits, async move {
            control.lease_unchecked(max, hold, key.as_deref()).await
        })
        .await
        .ok_or_else(|| {
            Status::unavailable(
                "the frontier did not answer within service.request_timeout_secs; \
                 try again",
            )
        })?;
        let until = Instant::now() + Duration::from_secs(hold);
        let mut infos = Vec::with_capacity(leased.len());
        let mut finished = Vec::new();
        {
            let mut held = self.held();
            if held.leases.len() > 2 * self.limits.max_urls.max(1024) {
                let now = Instant::now();
                held.leases.retain(|_, (_, end)| *end > now);
            }
            for l in leased {
                if held.finished.remove(&l.url) {
                    finished.push(l.id);
                    continue;
                }
                held.leases.insert(l.url.clone(), (l.id, until));
                // Handed out as it was put, with its metadata; updates match the canonical
                // form, whichever spelling they use.
                infos.push(url_info(l.key, l.url, l.client, &self.crawl_id));
            }
        }
        if !finished.is_empty() {
            let control = self.control.clone();
            tokio::spawn(async move {
                for id in finished {
                    control.finish_by_client(id, None, None).await;
                }
            });
        }
        Ok(infos)
    }
}
