//! Crawl IDs: the protocol names a crawl in most requests and items. Each ID is a crawl of
//! the service's [`engine::crawls::Crawls`] (`DEFAULT` the one it was started with; an empty
//! ID means it too, as upstream), with its own table of URLs handed out ([`Urls`]).
//!
//! Design choices:
//! - **Puts make a crawl, reads do not**: a put naming a new ID makes the crawl (or takes it
//!   up from what an earlier run stored); a read of a crawl nobody made answers as for an
//!   empty one (GetStats echoes the ID with zeros, ListQueues lists none), as upstream.
//! - **One stream, several crawls**: a PutURLs stream or a PutDiscovered batch may name a
//!   crawl per item; each item goes to its crawl and the acks keep the items' order. A
//!   GetURLs naming no crawl serves from every crawl, starting from a different one at each
//!   call so that no crawl starves the others.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use engine::crawls::{crawl_id, Crawl, Crawls, CrawlsError};
use tonic::codegen::BoxStream;
use tonic::{Status, Streaming};
use urlfrontier_proto::v2::ack_message::Status as Ack;
use urlfrontier_proto::v2::get_params::Item as CrawlFilter;
use urlfrontier_proto::v2::url_item::Item;
use urlfrontier_proto::v2::{AckMessage, BatchAck, DiscoveredBatch, GetParams, UrlInfo, UrlItem};

use crate::urls::{ack_stream, discovered_info, Limits, Urls, ACKS_AHEAD};

/// The service's crawls, each with its URL table.
#[derive(Debug)]
pub(crate) struct CrawlUrls {
    crawls: Arc<Crawls>,
    limits: Limits,
    tables: Mutex<HashMap<Arc<str>, Arc<Urls>>>,
    /// Where the next GetURLs of every crawl starts.
    turn: AtomicUsize,
}

/// A crawl's refusal as a gRPC status.
pub(crate) fn status(e: CrawlsError) -> Status {
    let text = e.to_string();
    match e {
        CrawlsError::BadId(_) => Status::invalid_argument(text),
        CrawlsError::Full(_) => Status::resource_exhausted(text),
        CrawlsError::Fixed => Status::failed_precondition(text),
        CrawlsError::Stopping | CrawlsError::Start { .. } => Status::unavailable(text),
        _ => Status::internal(text),
    }
}

/// The crawl ID an item names, checked (`DEFAULT` for an empty one).
fn item_crawl(id: &str) -> Result<String, Status> {
    crawl_id(id).map(str::to_owned).map_err(status)
}

impl CrawlUrls {
    pub(crate) fn new(crawls: Arc<Crawls>, limits: Limits) -> Self {
        Self {
            crawls,
            limits,
            tables: Mutex::default(),
            turn: AtomicUsize::new(0),
        }
    }

    pub(crate) fn crawls(&self) -> &Crawls {
        &self.crawls
    }

    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    fn tables(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Arc<Urls>>> {
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The generation of the crawl listed as `id` now.
    fn listed(&self, id: &str) -> Option<u64> {
        self.crawls.get(id).ok().flatten().map(|c| c.generation)
    }

    /// The URL table of `crawl` (a new one for a crawl made again under an old name). A table
    /// is kept only for the crawl listed under its ID now: a request that found a crawl
    /// since deleted gets one of its own, which displaces nothing and dies with the request.
    fn table(&self, crawl: Crawl) -> Arc<Urls> {
        let mut tables = self.tables();
        if let Some(t) = tables.get(&crawl.id) {
            if t.generation() == crawl.generation {
                return t.clone();
            }
        }
        let t = Arc::new(Urls::new(crawl.clone(), self.limits));
        if self.listed(&crawl.id) == Some(crawl.generation) {
            // Tables of crawls deleted since (they hold their frontier) go on the way.
            tables.retain(|id, kept| self.listed(id) == Some(kept.generation()));
            tables.insert(crawl.id, t.clone());
        }
        t
    }

    /// The crawl `id` names, `None` when nobody made it.
    pub(crate) fn read(&self, id: &str) -> Result<Option<Arc<Urls>>, Status> {
        Ok(self.crawls.get(id).map_err(status)?.map(|c| self.table(c)))
    }

    /// The crawl `id` names, made when there is none.
    pub(crate) async fn write(&self, id: &str) -> Result<Arc<Urls>, Status> {
        let crawl = self.crawls.get_or_create(id).await.map_err(status)?;
        Ok(self.table(crawl))
    }

    /// Every crawl.
    pub(crate) fn all(&self) -> Vec<Arc<Urls>> {
        self.crawls
            .all()
            .into_iter()
            .map(|c| self.table(c))
            .collect()
    }

    /// Deletes the named crawl `id`: how many URLs it held (0 when there is none).
    pub(crate) async fn delete(&self, id: &str) -> Result<u64, Status> {
        let id = crawl_id(id).map_err(status)?;
        let held = self.crawls.delete(id).await.map_err(status)?;
        // Its table goes once it is unlisted (a crawl made again since keeps its own).
        let listed = self.listed(id);
        let mut tables = self.tables();
        if tables
            .get(id)
            .is_some_and(|t| Some(t.generation()) != listed)
        {
            tables.remove(id);
        }
        Ok(held.unwrap_or(0))
    }

    /// PutDiscovered: each batch's URLs offered to their crawls and acked in one
    /// `BatchAck`, in order. An empty batch is acked (clients probe with one).
    pub(crate) fn put_discovered(
        self: &Arc<Self>,
        batches: Streaming<DiscoveredBatch>,
    ) -> BoxStream<BatchAck> {
        let this = Arc::clone(self);
        ack_stream(batches, ACKS_AHEAD, move |batch: DiscoveredBatch| {
            let this = Arc::clone(&this);
            async move {
                let statuses = this.discovered(&batch).await?;
                Ok(BatchAck {
                    id: batch.id,
                    statuses: statuses.into_iter().map(|s| s as i32).collect(),
                })
            }
        })
    }

    /// One batch: checked whole first (its size, every crawl ID, every crawl had or made),
    /// then offered crawl by crawl — a batch refused is refused before any of it is offered.
    async fn discovered(&self, batch: &DiscoveredBatch) -> Result<Vec<Ack>, Status> {
        let items = &batch.items;
        if items.len() > self.limits.max_urls {
            return Err(Status::invalid_argument(format!(
                "batch `{}` holds {} URLs; at most {} (service.max_urls_per_call)",
                batch.id,
                items.len(),
                self.limits.max_urls
            )));
        }
        // Every item's string and metadata, checked before anything is offered.
        let mut fields = items
            .iter()
            .map(discovered_info)
            .collect::<Result<Vec<_>, Status>>()?;
        // Items by crawl, in order of first appearance (a batch names one crawl or a few).
        let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let id = item_crawl(&item.crawl_id)?;
            match groups.iter_mut().find(|(g, _)| *g == id) {
                Some((_, members)) => members.push(i),
                None => groups.push((id, vec![i])),
            }
        }
        let mut tables = Vec::with_capacity(groups.len());
        for (id, members) in groups {
            tables.push((self.write(&id).await?, members));
        }
        let mut statuses = vec![Ack::Fail; items.len()];
        for (table, members) in tables {
            let urls: Vec<String> = members.iter().map(|&i| items[i].url.clone()).collect();
            let infos = members.iter().map(|&i| fields[i].take()).collect();
            for (&i, ack) in members.iter().zip(table.offer(urls, infos).await) {
                statuses[i] = ack;
            }
        }
        Ok(statuses)
    }

    /// PutURLs: each item acked in order, by its ID (its URL when the ID is empty).
    pub(crate) fn put_urls(self: &Arc<Self>, items: Streaming<UrlItem>) -> BoxStream<AckMessage> {
        let this = Arc::clone(self);
        ack_stream(items, ACKS_AHEAD * 64, move |item: UrlItem| {
            let this = Arc::clone(&this);
            async move {
                let info = match &item.item {
                    Some(Item::Discovered(d)) => d.info.as_ref(),
                    Some(Item::Known(k)) => k.info.as_ref(),
                    None => None,
                };
                let (url, crawl) = info.map_or((String::new(), String::new()), |i| {
                    (i.url.clone(), i.crawl_id.clone())
                });
                let table = this.write(&item_crawl(&crawl)?).await?;
                let status = table.put(item.item).await?;
                let id = if item.id.is_empty() { url } else { item.id };
                Ok(AckMessage {
                    id,
                    status: status as i32,
                })
            }
        })
    }

    /// GetURLs: due URLs of the crawl named (none from a crawl nobody made), or of every
    /// crawl, each held for `delay_requestable` seconds; of the queue `key` alone when given.
    pub(crate) async fn get_urls(&self, params: GetParams) -> Result<BoxStream<UrlInfo>, Status> {
        let tables = match &params.item {
            Some(CrawlFilter::CrawlId(id)) => self.read(id)?.into_iter().collect(),
            Some(CrawlFilter::AnyCrawlId(_)) | None => {
                let mut all = self.all();
                let n = all.len();
                all.rotate_left(self.turn.fetch_add(1, Ordering::Relaxed) % n.max(1));
                all
            }
        };
        let per_queue = match params.max_urls_per_queue {
            0 => usize::MAX,
            n => n as usize,
        };
        let queues = match params.max_queues {
            _ if !params.key.is_empty() => 1,
            0 => usize::MAX,
            n => n as usize,
        };
        let key = (!params.key.is_empty()).then_some(params.key);
        let mut left = per_queue.saturating_mul(queues).min(self.limits.max_urls);
        let mut infos = Vec::new();
        for table in tables {
            if left == 0 {
                break;
            }
            match table
                .lease(left, params.delay_requestable, key.clone())
                .await
            {
                Ok(got) => {
                    left -= got.len().min(left);
                    infos.extend(got);
                }
                // What other crawls handed out is held already: it goes to the client.
                Err(_) if !infos.is_empty() => break,
                Err(e) => return Err(e),
            }
        }
        let stream = tonic::codegen::tokio_stream::iter(infos.into_iter().map(Ok));
        Ok(Box::pin(stream))
    }
}
