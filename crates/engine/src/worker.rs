//! One fetch worker's loop: take a lease, check robots.txt, fetch, offer what the page
//! leads to (one frontier call per page), write its record, complete the lease with the
//! outcome. The frontier decides what the outcome means (done, retried, budget); a frontier
//! call that fails is retried with back-off until it succeeds or the crawl stops.
//!
//! The robots.txt gate ([`gate`]) and the fetch tail ([`crate::tail`]: the retry decision and
//! `finish` — offer, record, outcome) are shared with external fetchers' leases (`leases.rs`)
//! and the sitemap reader, so a URL fetched by another program is treated exactly as one
//! fetched here.
//!
//! Each worker holds a [`Worker`]: the [`Fetching`] it shares with the external leases and
//! the run, checkpoint and slot handles its loop needs — nothing of the crawl beyond that.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use frontier::{End, Lease, Link, Next, Outcome};
use url::Url;

use crate::counters::MAX_LISTED;
use crate::fetch::{Fetcher, Keep};
use crate::frontier_call::{FrontierClient, Retained};
use crate::parse_pool::{ExtractPieces, ParsePool};
use crate::pause::Pause;
use crate::robots::RobotsCache;
use crate::run::Run;
use crate::sitemap::SitemapReader;
use crate::stop::StopReason;
use crate::sync::lock;
use crate::tail::{Response, Tail};
use crate::CrawlConfig;

/// The settings fetching a URL applies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FetchRules {
    pub(crate) max_body_bytes: u64,
    pub(crate) respect_nofollow: bool,
    pub(crate) respect_robots: bool,
    pub(crate) sitemaps: bool,
    /// `[recrawl]` keeps a schedule: fetches are measured, refetches conditional.
    pub(crate) recrawl: bool,
}

impl FetchRules {
    pub(crate) fn of(cfg: &CrawlConfig) -> Self {
        Self {
            max_body_bytes: cfg.fetch.max_body_bytes,
            respect_nofollow: cfg.crawl.respect_nofollow,
            respect_robots: cfg.crawl.respect_robots,
            sitemaps: cfg.crawl.sitemaps,
            recrawl: cfg.recrawl.policy != config::RecrawlPolicy::None,
        }
    }
}

/// What fetching a leased URL takes, whoever asked (a worker, an external lease's gate, the
/// sitemap reader): the fetcher, robots.txt, the parsing pool and the fetch tail.
#[derive(Debug)]
pub(crate) struct Fetching {
    pub(crate) tail: Tail,
    pub(crate) fetcher: Fetcher,
    pub(crate) robots: Arc<RobotsCache>,
    pub(crate) parse: Arc<ParsePool>,
    pub(crate) sitemaps: SitemapReader,
    pub(crate) rules: FetchRules,
    /// Hosts placed in address groups (politeness per address).
    pub(crate) placements: crate::placements::Placements,
}

/// What a worker's loop holds.
#[derive(Debug, Clone)]
pub(crate) struct Worker {
    pub(crate) fetching: Arc<Fetching>,
    /// The crawl state and the pause its checkpoints ask for (`crawl.persist`).
    pub(crate) checkpoints: Option<(Arc<store::Store>, Arc<Pause>)>,
    /// Fetches in flight, built-in and leased together: `crawl.concurrency` permits. A
    /// worker takes one for each fetch; an external lease holds one while it is out.
    pub(crate) fetch_slots: Arc<tokio::sync::Semaphore>,
    /// The memory governor's gate (`crawl.max_memory_mb`): a worker holds a turn from before
    /// it takes a URL until the fetch is done, and gives it up when the gate is crowded.
    pub(crate) memory_gate: Option<Arc<crate::governor::Gate>>,
    /// Run as a service (`crawler serve`): a budget ends the workers, not the crawl.
    pub(crate) serving: bool,
}

pub(crate) async fn worker(w: Worker) {
    // A frontier across a network completes a lease and hands out the next in one call.
    let merge = w.fetching.frontier().calls_can_fail();
    let mut pending: Option<(Lease, Outcome)> = None;
    let mut turn = None;
    loop {
        if turn.is_some() && w.memory_gate.as_ref().is_some_and(|g| g.crowded()) {
            // The governor lowered the limit: this worker waits for room before its next URL.
            turn = None;
        }
        let next = match pending.take() {
            // The last lease's completion; with it, where the frontier can and the crawl goes
            // on (and this worker may go on fetching), the next lease.
            Some((lease, outcome)) => {
                let id = lease.entry().id;
                let merged = merge
                    && !w.fetching.run().held()
                    && !w.fetching.run().stopped()
                    && (turn.is_some() || w.memory_gate.is_none());
                let mut handed = Retained::new((lease, outcome), merge);
                let answer = w
                    .fetching
                    .frontier()
                    .with_frontier("complete", |f| {
                        let (lease, outcome) = handed.take();
                        if merged {
                            Box::pin(
                                async move { f.complete_and_next(lease, outcome).await.map(Some) },
                            )
                        } else {
                            Box::pin(async move { f.complete(lease, outcome).await.map(|()| None) })
                        }
                    })
                    .await;
                let Some(answer) = answer else { break };
                // Its line (if any) is now covered by the next checkpoint.
                w.fetching.output().completed(id);
                match answer {
                    Some(next) => Some(next),
                    None => continue,
                }
            }
            None => {
                if let Some((store, pause)) = &w.checkpoints {
                    pause
                        .wait(store, crate::pause::BACKLOG_LIMIT, || {
                            w.fetching.run().stopped()
                        })
                        .await;
                }
                w.fetching.run().wait_while_held().await;
                if let (Some(gate), None) = (&w.memory_gate, &turn) {
                    turn = Some(gate.enter().await);
                }
                w.fetching
                    .frontier()
                    .with_frontier("next", |f| f.next())
                    .await
            }
        };
        let Some(next) = next else {
            break;
        };
        let mut lease = match next {
            Next::Lease(lease) => lease,
            Next::End(End::Budget) => {
                if !w.serving {
                    w.fetching.run().stop(StopReason::MaxPages);
                }
                break;
            }
            Next::End(End::Finished | End::Closed) => break,
        };
        // Paused while this worker waited for a URL, or the memory governor lowered the
        // fetches that may start meanwhile: give it back untouched (and wait for room).
        let crowded = w.memory_gate.as_ref().is_some_and(|g| g.crowded());
        if crowded {
            turn = None;
        }
        let outcome = if w.fetching.run().held() || crowded {
            Outcome::Released
        } else {
            // A fetch slot first: `crawl.concurrency` bounds the fetches in flight, this
            // process' workers' and external fetchers' leases together.
            let _slot = w.fetch_slots.acquire().await;
            w.fetching.process(&mut lease).await
        };
        pending = Some((lease, outcome));
    }
}

impl Fetching {
    /// The frontier (the recorder's).
    pub(crate) fn frontier(&self) -> &FrontierClient {
        self.tail.frontier()
    }

    /// The crawl's run: held, stopped, why.
    pub(crate) fn run(&self) -> &Run {
        &self.tail.recorder.run
    }

    /// The output, told when a lease's completion covers its line.
    pub(crate) fn output(&self) -> &crate::output::Output {
        &self.tail.recorder.output
    }

    /// Fetches one leased URL, offers what it leads to and writes its record; returns the
    /// outcome for the frontier, and under a recrawl schedule tells the lease what the fetch
    /// observed.
    pub(crate) async fn process(&self, lease: &mut Lease) -> Outcome {
        let entry = lease.entry();
        let Ok(url) = Url::parse(&entry.url) else {
            // The frontier only queues canonical URLs, so this cannot happen; if it does, the URL
            // must not come back on every resume.
            return Outcome::Skipped;
        };
        if let Some(outcome) = self.gate(lease, &url).await {
            return outcome;
        }
        if entry.sitemap > 0 {
            return crate::sitemap::read(&self.sitemaps, lease, &url).await;
        }
        let cap = self.rules.max_body_bytes;
        let respect = self.rules.respect_nofollow;
        let mut pieces = ExtractPieces {
            pool: &self.parse,
            respect,
            extractor: None,
            failed: None,
        };
        let revisit = self.rules.recrawl.then(|| crate::revisit::request(entry));
        let mut fetched = self
            .fetcher
            .fetch_pieces(
                &url,
                Keep::Html,
                cap,
                lease.last_of_host(),
                Some(&mut pieces),
                revisit.as_ref(),
            )
            .await;
        self.tail.counters().latency.observe(fetched.elapsed);
        // A fetch that reached the host paces it by its duration (`politeness.delay_factor`).
        let took = fetched.status.map(|_| fetched.elapsed);
        if let Some(retry) = self
            .tail
            .retry(entry, fetched.is_transient(), fetched.retry_after)
        {
            tracing::debug!(url = %frontier::credentials::mask(url.as_str()), status = fetched.status, error = fetched.error_text(), "retrying later");
            return retry;
        }
        let mut error = fetched.error_text().or_else(|| {
            self.tail
                .wait_refused(fetched.is_transient(), fetched.retry_after)
        });
        let at = std::time::SystemTime::now();
        let observed = revisit
            .as_ref()
            .map(|sent| crate::revisit::observe(entry, sent, &mut fetched, at));
        let known = observed
            .as_ref()
            .is_some_and(|o| o.not_modified || o.unchanged());
        let mut offers = Vec::new();
        let mut found = 0;
        let mut final_url = entry.url.clone();
        match fetched.status {
            // Not modified, or the same payload: its links are known (no body is parsed).
            Some(200 | 304) if known => {}
            Some(status @ 300..=399) => {
                match Link::redirect(entry, &url, status, fetched.location.as_deref()) {
                    Ok(link) => {
                        final_url = link.url.to_string();
                        offers.push(link);
                        found = 1;
                    }
                    Err(why) => error = Some(why),
                }
            }
            Some(200) if pieces.failed.is_some() => {
                error = pieces
                    .failed
                    .map(|e| format!("link extraction failed: {e}"));
            }
            Some(200) if !fetched.body.is_empty() || pieces.extractor.is_some() => {
                // The body's last piece (or all of it), moved, not copied.
                let body = std::mem::take(&mut fetched.body);
                let ct = fetched.content_type.clone();
                let page = url.clone();
                let extractor = pieces.extractor.take();
                let size = body.len();
                let job = move || {
                    let mut extractor = ExtractPieces::resume(extractor, ct.as_deref(), respect);
                    extractor.feed(&body);
                    extractor.finish(&page)
                };
                match self.parse.run_sized(size, job).await {
                    Ok(e) => {
                        let depth = entry.depth.saturating_add(1);
                        offers = e.links.into_iter().map(|u| Link::new(u, depth)).collect();
                        found = e.found;
                    }
                    Err(e) => error = Some(format!("link extraction failed: {e}")),
                }
            }
            _ => {}
        }
        let mut response = Response::of(&mut fetched, final_url, error);
        response.at = Some(at);
        if let Some(o) = &observed {
            response.digest = o.digest.clone();
            response.changed = o.changed;
        }
        let outcome = self.tail.finish(lease, response, offers, found).await;
        if let Some(o) = observed {
            if outcome.is_recorded() {
                self.tail.counters().count_refetch(&o);
            }
            lease.set_visited(o.visited);
        }
        if let Some(took) = took {
            lease.set_elapsed(took);
        }
        outcome
    }

    /// What stands before a leased URL's fetch: the SSRF guard (an IP literal it refuses gets a
    /// record saying so; names are checked when they resolve), then robots.txt. `None` when it
    /// may be fetched; otherwise the outcome (a disallowed URL is skipped; one whose robots.txt
    /// cannot be had gets a record saying why).
    pub(crate) async fn gate(&self, lease: &Lease, url: &Url) -> Option<Outcome> {
        if let Err(why) = self.fetcher.guard().check_url(url) {
            return Some(self.tail.recorder.unfetched(lease, why).await);
        }
        let placements = &self.placements;
        if !placements
            .place(&self.fetcher, self.tail.frontier(), lease, url)
            .await
        {
            // Its address group is full or its gap has not passed: the host's turn comes
            // again when the group has room.
            return Some(Outcome::Released);
        }
        if !self.rules.respect_robots {
            return None;
        }
        let verdict = self.robots.check(&self.fetcher, url).await;
        let host = lease.host();
        // A `Crawl-delay` longer than the crawl waits for a host is not shortened (the host
        // would be fetched faster than it asked): the host is not crawled (below).
        let max_wait = Duration::from_secs(self.tail.rules.max_backoff_secs);
        let too_slow = verdict.crawl_delay.filter(|d| *d > max_wait);
        if let Some(delay) = verdict.crawl_delay.filter(|_| too_slow.is_none()) {
            self.tail
                .frontier()
                .with_frontier("set_crawl_delay", |f| f.set_crawl_delay(host, delay))
                .await;
        }
        if verdict.fetched {
            // The robots.txt request took this lease's turn: the host's next fetch waits its
            // delay from the page request that follows now, not from when the lease began.
            self.tail
                .frontier()
                .with_frontier("host_contacted", |f| f.host_contacted(host))
                .await;
            // A host whose robots.txt could not be had is not crawled for now: its sitemaps
            // would only add records saying so.
            if self.rules.sitemaps && verdict.unreachable.is_none() && too_slow.is_none() {
                crate::sitemap::discover(&self.sitemaps, url, &verdict.sitemaps).await;
            }
        }
        if let Some(why) = verdict.unreachable {
            // Not the rules' verdict but a failure: the URL gets a record saying so.
            if verdict.fetched {
                *lock(&self.tail.counters().robots_failures)
                    .entry(host.to_owned())
                    .or_default() += 1;
            }
            {
                let origin = url.origin().ascii_serialization();
                let mut hosts = lock(&self.tail.counters().robots_unreachable);
                if hosts.len() < MAX_LISTED || hosts.contains_key(&origin) {
                    hosts.insert(origin, why.to_string());
                }
            }
            return Some(self.tail.recorder.unfetched(lease, why.to_string()).await);
        }
        if !verdict.allowed {
            self.tail
                .counters()
                .robots_disallowed
                .fetch_add(1, Ordering::Relaxed);
            tracing::debug!(url = %frontier::credentials::mask(url.as_str()), "disallowed by robots.txt");
            return Some(Outcome::Skipped);
        }
        if let Some(delay) = too_slow {
            let secs = delay.as_secs_f64();
            {
                let origin = url.origin().ascii_serialization();
                let mut hosts = lock(&self.tail.counters().crawl_delay_skipped);
                if hosts.len() < MAX_LISTED || hosts.contains_key(&origin) {
                    hosts.insert(origin, secs);
                }
            }
            let why = format!(
                "robots.txt Crawl-delay {secs} s is above politeness.max_backoff_secs ({} s): \
                 the host is not crawled",
                max_wait.as_secs()
            );
            return Some(self.tail.recorder.unfetched(lease, why).await);
        }
        if verdict.fetched && placements.on() {
            // The robots.txt request was this lease's turn at the address: the page waits
            // for the next one.
            return Some(Outcome::Released);
        }
        None
    }
}
