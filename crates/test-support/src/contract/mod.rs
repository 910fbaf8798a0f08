//! The frontier contract: one test suite that every [`Frontier`] implementation passes
//! unchanged — exactly-once admission under concurrent offers, per-host delay and in-flight
//! limit, lease completion and retry, the end of the crawl, budgets, restore, and recrawl
//! schedules.
//!
//! An implementation's tests give a [`Harness`] that opens frontiers from a
//! [`FrontierConfig`], and call [`run_all`] (or one check per test). The checks use real
//! time with small delays and assert only lower bounds on time (a gap is at least the delay)
//! and counts, so a slow machine cannot fail them; they are written against the trait alone,
//! so a remote implementation (Redis) runs them as they are.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use url::Url;

use frontier::Via;
use frontier::{Admission, End, Frontier, Lease, Link, Next, Outcome};
use frontier::{FrontierConfig, Politeness};
use frontier::{HostControls, HostPage, HostQuery, HostSort};
use frontier::{HostScope, OutOfScope, ScopeConfig};

mod address_turns;
mod backoff;
mod budget;
mod client;
mod groups;
mod hosts;
mod keyed;
mod pace;
mod recrawl;
mod restart;
mod seeds;
mod urls;
pub use backoff::{a_success_ends_the_back_off_at_once, failures_in_flight_together_back_off_once};
pub use client::{
    a_client_key_is_the_queue, an_update_replaces_the_client_fields,
    client_fields_come_back_with_the_lease,
};
pub use groups::{
    a_deleted_queue_passes_the_groups_turn_on, a_held_back_host_does_not_hold_its_group,
    a_waiting_host_asked_for_by_name_is_served_when_its_group_has_room, the_groups_are_counted,
};
pub use hosts::{
    a_default_delay_paces_hosts_without_their_own, a_deleted_queue_drops_its_urls,
    a_host_delay_counts_from_its_last_fetch, a_limit_of_finished_urls_stops_a_host,
    host_listing_and_controls,
};
pub use keyed::{a_lease_of_one_host, released_leases_and_leases_without_waiting};
pub use pace::{a_fetch_duration_paces_its_host, hosts_on_one_address_share_its_limits};
pub use recrawl::{
    a_dated_link_sleeps_until_its_date, a_fetched_url_is_due_again, an_operator_moves_a_schedule,
    scheduled_config, skipped_urls_back_off_and_one_shot_crawls_end,
};
pub use restart::{a_restart_serves_what_was_not_done, restore};
pub use seeds::{
    a_kept_open_frontier_waits_for_seeds, a_requeued_url_is_served_again, seeds_widen_the_scope,
};
pub use urls::urls_are_found_listed_and_counted;

/// How the suite gets frontiers of one implementation.
pub trait Harness: Send + Sync {
    /// A new, empty frontier (nothing of an earlier one) for a crawl seeded at `seeds`.
    fn open(&self, cfg: FrontierConfig, seeds: &[&str]) -> Arc<dyn Frontier>;

    /// The frontier last opened, restarted from its durable state (the previous object
    /// dropped, its leases never completed). `None`: this implementation has no durable
    /// state, and the restore check is skipped.
    fn reopen(&self, cfg: FrontierConfig, seeds: &[&str]) -> Option<Arc<dyn Frontier>>;

    /// Whether this implementation lacks `what` (a remote protocol that cannot say it): the
    /// assertions that need it are skipped, each check saying which. None by default.
    fn lacks(&self, what: Lacks) -> bool {
        let _ = what;
        false
    }
}

/// What a frontier behind a protocol that cannot say it lacks ([`Harness::lacks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lacks {
    /// A URL given back (released, or retried) goes back to the front of its queue.
    QueueFront,
    /// An operator's per-host in-flight limit and admission budget.
    HostOverrides,
    /// Recrawl schedules made from what a fetch observed.
    Schedules,
    /// A queue whose URLs all sleep until a date is listed and controlled.
    AsleepQueues,
    /// A fetch's duration paces its host (`politeness.delay_factor`).
    LatencyPace,
    /// Hosts placed on one address share its limits (`max_per_ip`, `ip_delay`).
    AddressGroups,
}

/// Longest any single wait of the suite may take before it counts as a hang.
const HANG: Duration = Duration::from_secs(60);

/// A configuration with any host in scope and no politeness delay.
pub fn base_config() -> FrontierConfig {
    FrontierConfig {
        scope: ScopeConfig {
            hosts: HostScope::Any,
            ..ScopeConfig::default()
        },
        expected_urls: 100_000,
        memory_capacity: 64,
        politeness: Politeness {
            delay: Duration::ZERO,
            max_per_host: 1000,
            backoff_base: Duration::from_millis(20),
            max_backoff: Duration::from_secs(2),
            ..Politeness::default()
        },
        ..FrontierConfig::default()
    }
}

fn link(url: &str, depth: u32) -> Link {
    Link::new(Url::parse(url).expect("test URL"), depth)
}

async fn offer(f: &dyn Frontier, parent: Option<&str>, urls: &[String]) -> Vec<Admission> {
    let links = urls.iter().map(|u| link(u, 1)).collect();
    f.offer(parent, links).await.expect("offer")
}

async fn next(f: &dyn Frontier) -> Next {
    tokio::time::timeout(HANG, f.next())
        .await
        .expect("next() hung")
        .expect("next")
}

/// The address the checks of address groups place their hosts at.
fn test_address() -> frontier::AddressKey {
    frontier::AddressKey::of("192.0.2.1".parse().expect("an address"))
}

/// Two URLs of each of `hosts` (`http://HOST/1` and `/2`) offered.
async fn two_urls_each(f: &dyn Frontier, hosts: [&str; 2]) {
    for host in hosts {
        offer(
            f,
            None,
            &[format!("http://{host}/1"), format!("http://{host}/2")],
        )
        .await;
    }
}

async fn lease(f: &dyn Frontier) -> Lease {
    match next(f).await {
        Next::Lease(l) => l,
        Next::End(e) => panic!("expected a lease, the frontier ended: {e:?}"),
    }
}

async fn complete(f: &dyn Frontier, lease: Lease, outcome: Outcome) {
    f.complete(lease, outcome).await.expect("complete");
}

/// Every check, in order.
pub async fn run_all(h: &dyn Harness) {
    exactly_once_under_concurrent_offers(h).await;
    politeness_delay_and_in_flight_limit(h).await;
    completion_retry_and_backoff(h).await;
    failures_in_flight_together_back_off_once(h).await;
    a_success_ends_the_back_off_at_once(h).await;
    end_of_crawl_and_close(h).await;
    budgets(h).await;
    budget::a_budget_spans_every_host(h).await;
    restore(h).await;
    seeds_widen_the_scope(h).await;
    released_leases_and_leases_without_waiting(h).await;
    a_lease_of_one_host(h).await;
    a_dated_link_sleeps_until_its_date(h).await;
    client_fields_come_back_with_the_lease(h).await;
    a_client_key_is_the_queue(h).await;
    an_update_replaces_the_client_fields(h).await;
    urls_are_found_listed_and_counted(h).await;
    host_listing_and_controls(h).await;
    a_limit_of_finished_urls_stops_a_host(h).await;
    a_deleted_queue_drops_its_urls(h).await;
    a_default_delay_paces_hosts_without_their_own(h).await;
    a_host_delay_counts_from_its_last_fetch(h).await;
    a_fetch_duration_paces_its_host(h).await;
    hosts_on_one_address_share_its_limits(h).await;
    a_deleted_queue_passes_the_groups_turn_on(h).await;
    a_held_back_host_does_not_hold_its_group(h).await;
    a_waiting_host_asked_for_by_name_is_served_when_its_group_has_room(h).await;
    the_groups_are_counted(h).await;
    address_turns::an_address_holds_its_fetches(h).await;
    a_kept_open_frontier_waits_for_seeds(h).await;
    a_requeued_url_is_served_again(h).await;
    entries_carry_how_they_were_found(h).await;
    completing_and_leasing_in_one_call(h).await;
    a_held_lease_is_held(h).await;
    a_fetched_url_is_due_again(h).await;
    skipped_urls_back_off_and_one_shot_crawls_end(h).await;
    an_operator_moves_a_schedule(h).await;
}

/// Every check a frontier split into partitions keeps (the Redis frontier's
/// `frontier.partitions` > 1), with politeness per address held at the fetch (a group's
/// hosts lie in different partitions, so the hand-outs are not held: the checks of groups'
/// lines do not apply), a budget spent over many hosts' partitions and a restart across
/// partitions.
pub async fn run_partitioned(h: &dyn Harness) {
    exactly_once_under_concurrent_offers(h).await;
    politeness_delay_and_in_flight_limit(h).await;
    completion_retry_and_backoff(h).await;
    failures_in_flight_together_back_off_once(h).await;
    a_success_ends_the_back_off_at_once(h).await;
    end_of_crawl_and_close(h).await;
    budgets(h).await;
    budget::a_budget_spans_every_host(h).await;
    restore(h).await;
    a_restart_serves_what_was_not_done(h).await;
    seeds_widen_the_scope(h).await;
    released_leases_and_leases_without_waiting(h).await;
    a_lease_of_one_host(h).await;
    a_dated_link_sleeps_until_its_date(h).await;
    client_fields_come_back_with_the_lease(h).await;
    a_client_key_is_the_queue(h).await;
    an_update_replaces_the_client_fields(h).await;
    urls_are_found_listed_and_counted(h).await;
    host_listing_and_controls(h).await;
    a_limit_of_finished_urls_stops_a_host(h).await;
    a_deleted_queue_drops_its_urls(h).await;
    a_default_delay_paces_hosts_without_their_own(h).await;
    a_host_delay_counts_from_its_last_fetch(h).await;
    a_fetch_duration_paces_its_host(h).await;
    address_turns::an_address_holds_its_fetches(h).await;
    a_kept_open_frontier_waits_for_seeds(h).await;
    a_requeued_url_is_served_again(h).await;
    entries_carry_how_they_were_found(h).await;
    completing_and_leasing_in_one_call(h).await;
    a_held_lease_is_held(h).await;
    a_fetched_url_is_due_again(h).await;
    skipped_urls_back_off_and_one_shot_crawls_end(h).await;
    an_operator_moves_a_schedule(h).await;
}

/// `complete_and_next` is `complete` then `next`: the outcome counts, a retried URL comes
/// back, and the crawl ends as it would.
pub async fn completing_and_leasing_in_one_call(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    offer(
        &*f,
        None,
        &["http://m.test/1".into(), "http://n.test/1".into()],
    )
    .await;
    let a = lease(&*f).await;
    let b = match f
        .complete_and_next(a, Outcome::Done)
        .await
        .expect("complete and next")
    {
        Next::Lease(l) => l,
        other => panic!("the second URL: {other:?}"),
    };
    let retried = b.entry().url.clone();
    let b = match f
        .complete_and_next(b, Outcome::Retry { after: None })
        .await
        .expect("complete and next")
    {
        Next::Lease(l) => l,
        other => panic!("the retried URL comes back: {other:?}"),
    };
    assert_eq!(b.entry().url, retried);
    assert_eq!(
        f.complete_and_next(b, Outcome::Done)
            .await
            .expect("complete and next"),
        Next::End(End::Finished)
    );
    let s = f.stats().await.expect("stats");
    assert_eq!((s.pages, s.queued, s.in_flight), (2, 0, 0));
}

/// A lease just handed out is held (`hold`, and the fence `offer_and_hold` answers, if it
/// does, says so); its links are offered all the same.
pub async fn a_held_lease_is_held(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    offer(&*f, None, &["http://k.test/1".into()]).await;
    let a = lease(&*f).await;
    assert!(f.hold(&a).await.expect("hold"));
    let (admitted, held) = f
        .offer_and_hold(&a, vec![link("http://k.test/2", 1)])
        .await
        .expect("offer and hold");
    assert_eq!(admitted, [Admission::Admitted]);
    assert_ne!(held, Some(false));
    complete(&*f, a, Outcome::Done).await;
}

/// A lease carries how its URL was found — seed, link, redirect (with its hops) or sitemap
/// (with the sitemap level and `lastmod`) — as it was offered.
pub async fn entries_carry_how_they_were_found(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    f.seed(vec![link("http://v.test/", 0)]).await.expect("seed");
    let redirect = Link {
        hops: 1,
        via: Via::Redirect,
        ..link("http://v.test/moved", 0)
    };
    let sitemap_file = Link {
        via: Via::Sitemap,
        sitemap: 2,
        ..link("http://v.test/s.xml", 0)
    };
    let listed = Link {
        via: Via::Sitemap,
        lastmod: Some("2026-11-01".into()),
        ..link("http://v.test/listed", 1)
    };
    let parent = Some("http://v.test/");
    let offered = f
        .offer(
            parent,
            vec![link("http://v.test/a", 1), redirect, sitemap_file, listed],
        )
        .await
        .expect("offer");
    assert!(
        offered.iter().all(|a| *a == Admission::Admitted),
        "{offered:?}"
    );
    let mut seen = HashMap::new();
    for _ in 0..5 {
        let l = lease(&*f).await;
        let e = l.entry().clone();
        complete(&*f, l, Outcome::Done).await;
        seen.insert(e.url.clone(), e);
    }
    let e = |u: &str| seen.get(u).unwrap_or_else(|| panic!("{u} not served"));
    assert_eq!(e("http://v.test/").via, Via::Seed);
    assert_eq!(e("http://v.test/a").via, Via::Link);
    assert_eq!(
        (e("http://v.test/moved").via, e("http://v.test/moved").hops),
        (Via::Redirect, 1)
    );
    let s = e("http://v.test/s.xml");
    assert_eq!((s.via, s.sitemap), (Via::Sitemap, 2));
    let p = e("http://v.test/listed");
    assert_eq!(
        (p.via, p.sitemap, p.lastmod.as_deref()),
        (Via::Sitemap, 0, Some("2026-11-01"))
    );
}

/// Eight consumers that are also producers crawl a synthetic web of 3,000 pages on 13
/// hosts (each page links to 5, so ~5× as many offers as pages, many concurrent offers of
/// one URL): every page is served exactly once, and the crawl ends finished with nothing
/// queued and nothing in flight.
pub async fn exactly_once_under_concurrent_offers(h: &dyn Harness) {
    const PAGES: u64 = 3000;
    let url = |i: u64| format!("http://h{}.test/p/{i}", i % 13);
    let f = h.open(base_config(), &[]);
    assert_eq!(
        offer(&*f, None, &[url(0)]).await,
        [Admission::Admitted],
        "a seed is admitted"
    );
    let served: Arc<Mutex<HashMap<u64, u32>>> = Arc::default();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (f, served) = (Arc::clone(&f), Arc::clone(&served));
        tasks.push(tokio::spawn(async move {
            loop {
                let lease = match next(&*f).await {
                    Next::Lease(l) => l,
                    Next::End(e) => return e,
                };
                let page = &lease.entry().url;
                let i: u64 = page.rsplit('/').next().unwrap().parse().unwrap();
                *served.lock().unwrap().entry(i).or_default() += 1;
                let links: Vec<String> = (0..5u64)
                    .map(|k| match k {
                        0 => url((i + 1) % PAGES),
                        _ => url(i.wrapping_mul(2_654_435_761).wrapping_add(k * 40_503) % PAGES),
                    })
                    .collect();
                offer(&*f, Some(page), &links).await;
                tokio::task::yield_now().await;
                complete(&*f, lease, Outcome::Done).await;
            }
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), End::Finished);
    }
    let served = std::mem::take(&mut *served.lock().unwrap());
    assert_eq!(served.len() as u64, PAGES, "every page served");
    assert!(served.values().all(|&n| n == 1), "no page served twice");
    let stats = f.stats().await.expect("stats");
    assert_eq!(stats.admitted, PAGES);
    assert_eq!(stats.duplicates + stats.admitted, stats.offered);
    assert_eq!((stats.queued, stats.in_flight), (0, 0));
    assert_eq!(stats.pages, PAGES);
}

/// One host, a 40 ms delay, at most 2 fetches in flight: consecutive leases of the host start
/// at least the delay apart, and a third lease waits for a completion. A robots.txt
/// `Crawl-delay` raises the delay, and a late start (`host_contacted`) pushes the next
/// fetch back.
pub async fn politeness_delay_and_in_flight_limit(h: &dyn Harness) {
    let delay = Duration::from_millis(40);
    let cfg = FrontierConfig {
        politeness: Politeness {
            delay,
            max_per_host: 2,
            ..base_config().politeness
        },
        ..base_config()
    };
    let f = h.open(cfg, &[]);
    let urls: Vec<String> = (0..8).map(|i| format!("http://a.test/{i}")).collect();
    offer(&*f, None, &urls).await;
    // Times are taken *before* the calls they bound, so these are true lower bounds.
    let t0 = Instant::now();
    let first = lease(&*f).await;
    let second = lease(&*f).await;
    assert!(
        t0.elapsed() >= delay,
        "second lease after {:?}",
        t0.elapsed()
    );
    // Two in flight: a third waits for a completion, even past the delay.
    let third = {
        let f = Arc::clone(&f);
        tokio::spawn(async move { lease(&*f).await })
    };
    tokio::time::sleep(delay * 3).await;
    assert!(!third.is_finished(), "a third lease while two are out");
    let before_third = Instant::now();
    complete(&*f, first, Outcome::Done).await;
    let third = tokio::time::timeout(HANG, third).await.unwrap().unwrap();
    assert_eq!(f.stats().await.unwrap().in_flight, 2);
    complete(&*f, second, Outcome::Done).await;

    // Crawl-delay applies from the last fetch's start.
    let crawl_delay = Duration::from_millis(150);
    f.set_crawl_delay("a.test", crawl_delay).await.unwrap();
    complete(&*f, third, Outcome::Done).await;
    let fourth = lease(&*f).await;
    assert!(before_third.elapsed() >= crawl_delay, "Crawl-delay ignored");
    // A late start of the fourth (its robots.txt first): the fifth waits from then.
    tokio::time::sleep(Duration::from_millis(30)).await;
    let before_contact = Instant::now();
    f.host_contacted("a.test").await.unwrap();
    complete(&*f, fourth, Outcome::Done).await;
    let fifth = lease(&*f).await;
    assert!(
        before_contact.elapsed() >= crawl_delay,
        "the next fetch waits from the late start"
    );
    complete(&*f, fifth, Outcome::Done).await;
    f.close();
}

/// `Retry` serves the URL again (attempt + 1) after at least the given wait; `HostError`
/// backs the host off; `Done` and `Skipped` finish a URL.
pub async fn completion_retry_and_backoff(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    offer(
        &*f,
        None,
        &["http://r.test/x".into(), "http://r.test/y".into()],
    )
    .await;
    let x = lease(&*f).await;
    assert_eq!(
        (x.entry().url.as_str(), x.entry().attempt),
        ("http://r.test/x", 0)
    );
    let wait = Duration::from_millis(120);
    let t = Instant::now();
    complete(&*f, x, Outcome::Retry { after: Some(wait) }).await;
    if h.lacks(Lacks::QueueFront) {
        // Retried behind y: served again, one attempt on, after the wait.
        let (a, b) = (lease(&*f).await, lease(&*f).await);
        let mut got = [a.entry(), b.entry()].map(|e| (e.url.clone(), e.attempt));
        got.sort();
        assert_eq!(
            got,
            [("http://r.test/x".into(), 1), ("http://r.test/y".into(), 0)]
        );
        assert!(t.elapsed() >= wait, "retried after {:?}", t.elapsed());
        complete(&*f, a, Outcome::Done).await;
        complete(&*f, b, Outcome::Done).await;
        assert_eq!(next(&*f).await, Next::End(End::Finished));
        return;
    }
    let again = lease(&*f).await;
    assert!(t.elapsed() >= wait, "retried after {:?}", t.elapsed());
    assert_eq!(
        (again.entry().url.as_str(), again.entry().attempt),
        ("http://r.test/x", 1),
        "a retry goes back to the front of its host's queue"
    );
    let t = Instant::now();
    complete(&*f, again, Outcome::HostError { retry_after: None }).await;
    let y = lease(&*f).await;
    assert!(
        t.elapsed() >= Duration::from_millis(20),
        "no back-off after a host error"
    );
    assert_eq!(y.entry().url, "http://r.test/y");
    complete(&*f, y, Outcome::Skipped).await;
    assert_eq!(next(&*f).await, Next::End(End::Finished));
    let stats = f.stats().await.unwrap();
    assert_eq!(
        stats.pages, 1,
        "the host error was recorded, the skip was not"
    );
}

/// A consumer waits while a lease is out and nothing is queued (the lease may bring links);
/// the crawl ends for it once that lease completes without any. `close` ends `next` at once.
pub async fn end_of_crawl_and_close(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    offer(&*f, None, &["http://e.test/".into()]).await;
    let only = lease(&*f).await;
    let waiter = {
        let f = Arc::clone(&f);
        tokio::spawn(async move { next(&*f).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiter.is_finished(), "ended while a lease was out");
    offer(&*f, Some("http://e.test/"), &["http://e.test/".into()]).await;
    complete(&*f, only, Outcome::Done).await;
    let end = tokio::time::timeout(HANG, waiter).await.unwrap().unwrap();
    assert_eq!(end, Next::End(End::Finished));
    let stats = f.stats().await.unwrap();
    assert_eq!((stats.queued, stats.in_flight, stats.duplicates), (0, 0, 1));

    let g = h.open(base_config(), &[]);
    offer(
        &*g,
        None,
        &["http://e.test/a".into(), "http://e.test/b".into()],
    )
    .await;
    g.close();
    assert_eq!(next(&*g).await, Next::End(End::Closed));
}

/// `max_pages`: leases out count against it, so no more records than the budget are ever
/// written; retries and skips give their share back; once spent, `next` ends with
/// `End::Budget`. `max_pages_per_host` refuses admissions past it.
pub async fn budgets(h: &dyn Harness) {
    let cfg = FrontierConfig {
        max_pages: Some(3),
        max_pages_per_host: Some(4),
        ..base_config()
    };
    let f = h.open(cfg, &[]);
    let urls: Vec<String> = (0..5).map(|i| format!("http://b.test/{i}")).collect();
    let got = offer(&*f, None, &urls).await;
    assert_eq!(got[..4], [Admission::Admitted; 4]);
    assert_eq!(got[4], Admission::OutOfScope(OutOfScope::HostBudget));
    let a = lease(&*f).await;
    let b = lease(&*f).await;
    let c = lease(&*f).await;
    let fourth = {
        let f = Arc::clone(&f);
        tokio::spawn(async move { next(&*f).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!fourth.is_finished(), "a fourth lease within a budget of 3");
    complete(&*f, a, Outcome::Skipped).await;
    let d = match tokio::time::timeout(HANG, fourth).await.unwrap().unwrap() {
        Next::Lease(l) => l,
        other => panic!("a skip gives its budget back: {other:?}"),
    };
    for l in [b, c, d] {
        complete(&*f, l, Outcome::Done).await;
    }
    assert_eq!(next(&*f).await, Next::End(End::Budget));
    let stats = f.stats().await.unwrap();
    assert_eq!((stats.pages, stats.queued), (3, 0));
}
