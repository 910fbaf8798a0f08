//! Admission: canonicalise and scope-check a page's links here, answer the duplicates the
//! near cache knows, and admit the rest in one script call per partition their hosts are in.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use frontier::{Admission, Entry, FrontierConfig, FrontierError, Link, Order, OutOfScope};

use super::Shared;
use crate::conn::Conn;
use crate::errors::frontier_error;

pub(super) type Near = bloom::ScalableBloomFilter<str, bloom::StringFunnel>;

/// An empty near cache (none with exact deduplication).
pub(super) fn near_cache(cfg: &FrontierConfig) -> Option<Arc<Near>> {
    if cfg.dedup == frontier::Dedup::Exact {
        return None;
    }
    Near::new(bloom::StringFunnel, cfg.expected_urls, cfg.fpp / 10.0)
        .ok()
        .map(Arc::new)
}

/// One URL of an admission call, as the script takes it.
struct Admitting {
    /// Its place among the links offered.
    index: usize,
    url: String,
    host: String,
    /// Its host's partition.
    part: usize,
    /// The encoded entry.
    entry: Vec<u8>,
    /// A client's date (see [`frontier::Link::due`]).
    due: Option<u64>,
}

/// One admission call into partition `p`: `batch` (that partition's URLs, grouped by host),
/// counting `near_dups` and `counted` (the client's counts, sent with one call only), with
/// the fence of lease `fence` (an id of this partition).
#[derive(Clone, Copy)]
struct AdmitCall<'a> {
    p: usize,
    batch: &'a [Admitting],
    near_dups: u64,
    counted: &'a [(OutOfScope, u64)],
    requeue: bool,
    fence: Option<u64>,
}

impl Shared {
    /// Canonicalises and scope-checks `links`, then admits the rest in one script.
    /// `requeue`: queue them even though seen (no scope, no budget).
    pub(super) async fn admit(
        &self,
        parent: Option<&str>,
        links: Vec<Link>,
        requeue: bool,
    ) -> Result<Vec<Admission>, FrontierError> {
        Ok(self.admit_fenced(parent, links, requeue, None).await?.0)
    }

    /// As [`admit`](Self::admit), and with `fence` (a lease id of this process) the same
    /// script answers whether the lease is still held, pinning it as [`Shared::hold`] does:
    /// one call for a page's links and its record's fence. The script runs even when the
    /// near cache answered every link, so the fence is always answered.
    pub(super) async fn admit_fenced(
        &self,
        parent: Option<&str>,
        links: Vec<Link>,
        requeue: bool,
        fence: Option<u64>,
    ) -> Result<frontier::Fenced, FrontierError> {
        let near = match (&self.near, requeue) {
            (Some(n), false) => Some(Arc::clone(&n.read().unwrap_or_else(|e| e.into_inner()))),
            _ => None,
        };
        let mut near_dups = 0u64;
        let mut out: Vec<Option<Admission>> = vec![None; links.len()];
        let mut refused = [0u64; OutOfScope::ALL.len()];
        let mut batch: Vec<Admitting> = Vec::new();
        let created = Entry::now_secs();
        {
            let scope = self.scope.read().unwrap_or_else(|e| e.into_inner());
            for (i, l) in links.into_iter().enumerate() {
                let mut refuse = |reason: OutOfScope| {
                    refused[reason.index()] += 1;
                    out[i] = Some(Admission::OutOfScope(reason));
                };
                let Ok(canonical) = self.canon.canonicalize_url(l.url) else {
                    refuse(OutOfScope::Invalid);
                    continue;
                };
                if !requeue {
                    if l.hops > self.cfg.max_redirects {
                        refuse(OutOfScope::Redirects);
                        continue;
                    }
                    if let Err(reason) = scope.check(&canonical, l.depth) {
                        refuse(reason);
                        continue;
                    }
                }
                if near.as_ref().is_some_and(|n| {
                    n.might_contain(&frontier::credentials::mask(canonical.as_str()))
                }) {
                    near_dups += 1;
                    out[i] = Some(Admission::Duplicate);
                    continue;
                }
                let host = frontier::queue_key(l.client.as_deref(), &canonical).to_owned();
                let client = l
                    .client
                    .and_then(|c| c.settle(canonical.as_str(), frontier::host_key(&canonical)));
                let url = String::from(canonical);
                let due = l.due;
                let mut entry = if requeue {
                    Entry::new(url.clone(), l.depth, None)
                } else {
                    let mut e = Entry::new(url.clone(), l.depth, parent.map(str::to_owned));
                    e.hops = l.hops;
                    e.via = l.via;
                    e.sitemap = l.sitemap;
                    e.lastmod = l.lastmod;
                    e
                };
                entry.id = 0;
                entry.client = client;
                entry.created = created;
                if let Some(due) = due {
                    // Asleep from the start, as a fetched URL waits for its next visit.
                    entry.visit = Some(Box::new(frontier::Visit {
                        due,
                        history: recrawl::History::default(),
                    }));
                }
                let mut bytes = Vec::with_capacity(url.len() + 32);
                entry.encode(&mut bytes);
                batch.push(Admitting {
                    index: i,
                    url,
                    part: self.part_of(&host),
                    host,
                    entry: bytes,
                    due,
                });
            }
        }
        let counted: Vec<(OutOfScope, u64)> = OutOfScope::ALL
            .iter()
            .zip(refused)
            .filter(|(_, n)| *n > 0)
            .map(|(r, n)| (*r, n))
            .collect();
        if !requeue {
            near_dups += self.near_dups.swap(0, Ordering::Relaxed);
        }
        let mut held = None;
        if fence.is_none() && batch.is_empty() && near_dups > 0 && counted.is_empty() {
            // Nothing for Redis: count the answers with the next call.
            self.near_dups.fetch_add(near_dups, Ordering::Relaxed);
        } else if fence.is_some() || !batch.is_empty() || (!requeue && !counted.is_empty()) {
            // Grouped by partition, then host (stable: a host's URLs keep their order), as
            // the scripts take them: one call per partition, sent together; the counts ride
            // with the first, the fence with its lease's partition.
            batch.sort_by(|a, b| (a.part, &a.host).cmp(&(b.part, &b.host)));
            let fence = fence.map(|token| (token, self.untoken(token)));
            let mut calls: Vec<(usize, &[Admitting])> = batch
                .chunk_by(|a, b| a.part == b.part)
                .map(|g| (g[0].part, g))
                .collect();
            if let Some((_, (fp, _))) = fence {
                if !calls.iter().any(|(p, _)| *p == fp) {
                    calls.push((fp, &[]));
                }
            }
            if calls.is_empty() {
                calls.push((0, &[]));
            }
            let replies = super::parts::join_all(
                calls
                    .iter()
                    .enumerate()
                    .map(|(i, (p, group))| {
                        let first = i == 0;
                        let call = AdmitCall {
                            p: *p,
                            batch: group,
                            near_dups: if first { near_dups } else { 0 },
                            counted: if first { &counted[..] } else { &[] },
                            requeue,
                            fence: fence.and_then(|(_, (fp, id))| (fp == *p).then_some(id)),
                        };
                        async move { self.admit_call(&call).await }
                    })
                    .collect(),
            )
            .await;
            let mut codes: Vec<u8> = Vec::with_capacity(batch.len());
            let mut failed = None;
            for (i, ((p, _), reply)) in calls.iter().zip(replies).enumerate() {
                match reply {
                    Ok(mut c) => {
                        if let Some((token, _)) = fence.filter(|(_, (fp, _))| fp == p) {
                            let answer = c.pop() == Some(1);
                            if !answer {
                                self.lost_lease(token);
                            }
                            held = Some(answer);
                        }
                        if c.contains(&1) {
                            self.admitted_into(*p);
                        }
                        codes.extend(c);
                    }
                    Err(e) => {
                        if i == 0 {
                            self.near_dups.fetch_add(near_dups, Ordering::Relaxed);
                        }
                        failed.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = failed {
                return Err(self.failed(e));
            }
            if let Some(n) = &near {
                // Not one refused for its host's budget: Redis left it unseen.
                for (Admitting { url, .. }, code) in batch.iter().zip(&codes) {
                    if *code != 2 {
                        n.put(&frontier::credentials::mask(url.as_str()));
                    }
                }
            }
            for (Admitting { index: i, .. }, code) in batch.iter().zip(codes) {
                out[*i] = Some(match code {
                    1 => Admission::Admitted,
                    2 => Admission::OutOfScope(OutOfScope::HostBudget),
                    _ => Admission::Duplicate,
                });
            }
            if out.contains(&Some(Admission::Admitted)) {
                self.wake.notify_one();
            }
        }
        let out = out
            .into_iter()
            .map(|a| a.unwrap_or(Admission::Duplicate))
            .collect();
        Ok((out, held))
    }

    /// One admission call (see [`AdmitCall`]).
    async fn admit_call(&self, a: &AdmitCall<'_>) -> Result<Vec<u8>, redis::RedisError> {
        let (p, batch, fence) = (a.p, a.batch, a.fence);
        // On a cluster, links are waited for on a replica in the same pipeline (see
        // `durable.rs`); not a call that carries only counts or a fence.
        let wait = !batch.is_empty() && self.conn.is_cluster() && {
            let has = self.has_replica(p).await;
            if !has {
                self.wait_skipped.fetch_add(1, Ordering::Relaxed);
            }
            has
        };
        let call = self.admit_cmd(a);
        if !wait {
            return self.send_admission(&call).await;
        }
        // A replica slower than a `WAIT`: the same admission again (idempotent; the client's
        // counts not again, its URLs counted as duplicates of themselves) and `WAIT` again.
        // A URL the first send admitted answers "seen" the next time: the answers are merged.
        // The resend (without the counts) is built only once a `WAIT` went unanswered.
        let mut call = call;
        let mut first: Option<Vec<u8>> = None;
        let mut tries = 0;
        loop {
            if tries == 1 {
                call = self.admit_cmd(&AdmitCall {
                    near_dups: 0,
                    counted: &[],
                    ..*a
                });
            }
            let mut pipe = redis::pipe();
            pipe.add_command(call.clone())
                .cmd("WAIT")
                .arg(1)
                .arg(super::durable::WAIT_MS);
            tries += 1;
            let (codes, acked) = self.send_admission::<_, (Vec<u8>, u64)>(&pipe).await?;
            let codes = merge_answers(first.take(), codes, fence.is_some());
            if acked > 0 {
                return Ok(codes);
            }
            if tries >= super::durable::WAIT_TRIES {
                return self.unacked(p).await.map(|()| codes);
            }
            self.wait_retried.fetch_add(1, Ordering::Relaxed);
            first = Some(codes);
        }
    }

    /// The admission script's call (see [`admit_call`](Self::admit_call)).
    fn admit_cmd(&self, a: &AdmitCall<'_>) -> redis::Cmd {
        let AdmitCall {
            p,
            batch,
            near_dups,
            counted,
            requeue,
            fence,
        } = *a;
        let hosts = 1 + batch.windows(2).filter(|w| w[0].host != w[1].host).count();
        let hosts = if batch.is_empty() { 0 } else { hosts };
        let exact = self.cfg.dedup == frontier::Dedup::Exact;
        let dated = batch.iter().any(|b| b.due.is_some());
        let visited = &self.parts[p];
        let k = visited.hashes();
        let mut call = self.script_cmd(p, &self.scripts.admit);
        let budget = self.cfg.max_pages_per_host.unwrap_or(0);
        let order = match self.cfg.order {
            Order::BreadthFirst => "b",
            Order::DepthFirst => "d",
        };
        call.arg(k)
            .arg(batch.len())
            .arg(hosts)
            .arg(u8::from(exact))
            .arg(budget)
            .arg(order)
            .arg(u8::from(requeue))
            .arg(near_dups)
            .arg(u8::from(dated))
            .arg(if requeue { 0 } else { counted.len() });
        if !requeue {
            for (reason, n) in counted {
                call.arg(reason.name()).arg(*n);
            }
        }
        for Admitting { url, .. } in batch {
            for bit in visited.indices(url) {
                call.arg(bit);
            }
        }
        for group in batch.chunk_by(|a, b| a.host == b.host) {
            call.arg(group[0].host.as_str()).arg(group.len());
            for Admitting {
                url, entry, due, ..
            } in group
            {
                // Hashed only when the script needs it: most admissions need neither.
                let fp = (exact || dated).then(|| frontier::fingerprint(url));
                if let (true, Some(fp)) = (exact, fp) {
                    call.arg(&fp.to_le_bytes()[..]);
                }
                call.arg(entry.as_slice());
                if let (true, Some(fp)) = (dated, fp) {
                    // A date of 0 would mean "now": the earliest date is 1.
                    let (bucket, field) = self.due_index(fp);
                    call.arg(due.map_or(0, |d| d.max(1)))
                        .arg(bucket)
                        .arg(&field[..]);
                }
            }
        }
        if let Some(id) = fence {
            call.arg(self.holder.as_str())
                .arg(super::ms(self.lease))
                .arg(id);
        }
        call
    }

    /// Sends an admission (`call`: its script alone, or with a `WAIT` after it), loading the
    /// script on every node once when a node lacks it (restarted, or a replica promoted).
    async fn send_admission<C, T>(&self, call: &C) -> redis::RedisResult<T>
    where
        C: Sendable,
        T: redis::FromRedisValue,
    {
        let mut conn = self.conn.clone();
        let mut loaded = false;
        loop {
            match call.send(&mut conn).await {
                Err(e)
                    if !loaded
                        && e.kind()
                            == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
                {
                    self.scripts
                        .admit
                        .prepare_invoke()
                        .load_async(&mut conn)
                        .await?;
                    loaded = true;
                }
                other => return other,
            }
        }
    }

    /// A failed call: the near cache is dropped (Redis may have restarted without its last
    /// writes), and the error is the engine's.
    pub(super) fn failed(&self, e: redis::RedisError) -> FrontierError {
        // A failed call may be a failover: which masters have replicas is read again.
        self.replicas
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter_mut()
            .for_each(|r| *r = None);
        if let Some(near) = &self.near {
            if let Some(fresh) = near_cache(&self.cfg) {
                *near.write().unwrap_or_else(|e| e.into_inner()) = fresh;
            }
        }
        frontier_error(e)
    }
}

/// The answers of an admission sent again after an unacknowledged `WAIT`: a URL admitted by
/// either send is admitted (the second finds it seen); the fence's answer (last, when
/// `fenced`) is the latest.
fn merge_answers(first: Option<Vec<u8>>, mut latest: Vec<u8>, fenced: bool) -> Vec<u8> {
    let Some(first) = first else { return latest };
    let urls = latest.len() - usize::from(fenced && !latest.is_empty());
    for (new, old) in latest[..urls].iter_mut().zip(&first) {
        if *old == 1 {
            *new = 1;
        }
    }
    latest
}

/// An admission as sent: the script alone, or in a pipeline with its `WAIT`.
pub(super) trait Sendable {
    /// Sends it on `conn`, reading the reply as `T`.
    async fn send<T: redis::FromRedisValue>(&self, conn: &mut Conn) -> redis::RedisResult<T>;
}

impl Sendable for redis::Cmd {
    async fn send<T: redis::FromRedisValue>(&self, conn: &mut Conn) -> redis::RedisResult<T> {
        self.query_async(conn).await
    }
}

impl Sendable for redis::Pipeline {
    async fn send<T: redis::FromRedisValue>(&self, conn: &mut Conn) -> redis::RedisResult<T> {
        self.query_async(conn).await
    }
}

#[cfg(test)]
mod tests {
    use super::merge_answers;

    #[test]
    fn a_url_admitted_by_the_first_send_stays_admitted() {
        // The first send admitted URL 0 and was refused URL 2 for its budget; the second
        // finds URL 0 seen and the fence now lost.
        assert_eq!(
            merge_answers(Some(vec![1, 0, 2, 1]), vec![0, 0, 2, 0], true),
            [1, 0, 2, 0]
        );
        assert_eq!(merge_answers(Some(vec![1, 0]), vec![0, 1], false), [1, 1]);
        assert_eq!(merge_answers(None, vec![0, 1], false), [0, 1]);
    }
}
