//! GetURLStatus, ListURLs, CountURLs and PurgeURLs: what one crawl says of its URLs one by
//! one ([`engine::UrlPlace`], [`frontier::UrlPage`]).
//!
//! Design choices:
//! - **No second store of URLs**: the answers are read where the URLs are — held by a
//!   fetcher, queued (memory, spill, Redis), asleep until a date — so puts and GetURLs pay
//!   nothing for them, and a listing costs a pass over what it lists (an operator's call).
//! - **Dates**: a URL held or queued is due now (`refetchable_from_date` = the time of the
//!   answer), an asleep one at its date, a finished one 0 — what a known URL with that date
//!   would mean if put. A finished URL is known only to the visited set: GetURLStatus
//!   answers it (with the URL as asked, no metadata), ListURLs and CountURLs do not list it.
//!   `creation_date` is when the frontier admitted the URL ([`Entry::created`]; 0 for a
//!   finished URL, or one admitted by a version that kept no time).
//! - **One read at a time, off the runtime's threads** ([`read`]): a listing with a filter
//!   reads every URL (spilled ones from disk), so reads take turns on a blocking thread;
//!   past `service.request_timeout_secs` the caller gets `UNAVAILABLE` and the read
//!   finishes alone, holding the turn.
//! - **PurgeURLs** drops the URLs queued or asleep in the queue (every queue, without a
//!   key) created more than `days` days ago — every one with `days` = 0 — as DeleteQueue
//!   does (`Frontier::delete_queue`): done unfetched, still in the visited set.

use engine::{Control, UrlPlace};
use frontier::{Entry, Found, UrlQuery};
use tonic::Status;
use urlfrontier_proto::v2::url_item::Item;
use urlfrontier_proto::v2::{KnownUrlItem, UrlInfo, UrlItem};

use crate::urls::{bounded, unix_now, url_info, Limits};

/// The turn of the per-URL reads: one at a time in this process.
static READS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// Runs the read `call` in its turn on a blocking thread; `UNAVAILABLE` when it does not
/// answer (or the frontier cannot) within `service.request_timeout_secs`.
async fn read<T: Send + 'static>(
    limits: Limits,
    call: impl std::future::Future<Output = Option<T>> + Send + 'static,
) -> Result<T, Status> {
    let work = async move {
        let _turn = READS.acquire().await.ok()?;
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || runtime.block_on(call))
            .await
            .ok()
            .flatten()
    };
    bounded(limits, work).await.flatten().ok_or_else(|| {
        Status::unavailable(
            "the frontier did not answer within service.request_timeout_secs (a listing of \
             every URL, or another one before it); try again",
        )
    })
}

/// A known item of `info`, refetchable from `date`, created at `created`.
fn known(info: UrlInfo, date: u64, created: u32) -> UrlItem {
    UrlItem {
        item: Some(Item::Known(KnownUrlItem {
            info: Some(info),
            refetchable_from_date: date,
        })),
        id: String::new(),
        creation_date: u64::from(created),
    }
}

/// The item of a URL in a queue: due now, or asleep until its date.
fn item_of(key: String, entry: Entry, asleep: bool, crawl_id: &str) -> UrlItem {
    let date = match (asleep, &entry.visit) {
        (true, Some(v)) => v.due,
        _ => unix_now(),
    };
    let created = entry.created;
    known(
        url_info(key, entry.url, entry.client, crawl_id),
        date,
        created,
    )
}

/// The listing `query` of the crawl, bounded in time as every call on the frontier is.
async fn page(
    control: &Control,
    query: UrlQuery,
    limits: Limits,
) -> Result<frontier::UrlPage, Status> {
    let control = control.clone();
    read(limits, async move { control.list_urls(query).await }).await
}

/// GetURLStatus of `raw` in the queue `key` (the URL's host when empty).
pub(crate) async fn status(
    control: &Control,
    crawl_id: &str,
    raw: &str,
    key: &str,
    limits: Limits,
) -> Result<UrlItem, Status> {
    let url = control
        .canonical(raw)
        .map_err(|why| Status::invalid_argument(format!("{raw}: {why}")))?;
    let key = match key {
        "" => frontier::host_key(&url).to_owned(),
        k => k.to_owned(),
    };
    let (asked, control) = (url.clone(), control.clone());
    let in_queue = key.clone();
    let place = read(
        limits,
        async move { control.find_url(&asked, &in_queue).await },
    )
    .await?;
    Ok(match place {
        UrlPlace::Held { key, entry } => item_of(key, entry, false, crawl_id),
        UrlPlace::Frontier(Found::Queued(entry)) => item_of(key, entry, false, crawl_id),
        UrlPlace::Frontier(Found::Asleep(entry)) => {
            let key = match entry.queue_key() {
                Some(k) => k.to_owned(),
                None => frontier::host_key(&url).to_owned(),
            };
            item_of(key, entry, true, crawl_id)
        }
        UrlPlace::Frontier(Found::Seen) => {
            let info = UrlInfo {
                url: raw.to_owned(),
                key,
                crawl_id: crawl_id.to_owned(),
                ..UrlInfo::default()
            };
            known(info, 0, 0)
        }
        UrlPlace::Frontier(Found::Unseen) => {
            return Err(Status::not_found(format!(
                "{raw} is not known to this crawl"
            )))
        }
    })
}

/// ListURLs: a page of `size` (100 by default, `service.max_urls_per_call` at most) from
/// `start`, of the queue `key` (every queue when empty), filtered.
pub(crate) async fn list(
    control: &Control,
    crawl_id: &str,
    query: UrlQuery,
    limits: Limits,
) -> Result<Vec<UrlItem>, Status> {
    let page = page(control, query, limits).await?;
    Ok(page
        .urls
        .into_iter()
        .map(|u| item_of(u.key, u.entry, u.asleep, crawl_id))
        .collect())
}

/// CountURLs: how many URLs ListURLs would list, over every page.
pub(crate) async fn count(
    control: &Control,
    query: UrlQuery,
    limits: Limits,
) -> Result<u64, Status> {
    let query = UrlQuery { limit: 0, ..query };
    Ok(page(control, query, limits).await?.matched)
}

/// The query of a ListURLs or CountURLs request.
pub(crate) fn query(
    key: String,
    filter: Option<String>,
    ignore_case: Option<bool>,
    start: u32,
    size: u32,
    limits: Limits,
) -> UrlQuery {
    UrlQuery {
        key: (!key.is_empty()).then_some(key),
        filter: filter.filter(|f| !f.is_empty()),
        ignore_case: ignore_case.unwrap_or(false),
        skip: u64::from(start),
        limit: match size {
            0 => 100,
            n => n as usize,
        }
        .min(limits.max_urls.max(1)),
    }
}
