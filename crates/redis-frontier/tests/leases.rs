//! Leases under faults, on a private Redis: the fence (a lease that expired and went to
//! another process is no longer held), the crawl clock (an outage longer than a lease takes
//! no live holder's lease), and a full Redis (every change refused whole, nothing half-done).

mod common;

use std::time::Duration;

use frontier::{Frontier, FrontierConfig, FrontierError, Link, Next, Outcome};
use redis_frontier::{RedisConfig, RedisFrontier};
use url::Url;

use common::redis;

fn cfg() -> FrontierConfig {
    common::unpaced()
}

fn settings(
    server: &test_support::redis_server::RedisServer,
    id: &str,
    lease: Duration,
) -> RedisConfig {
    RedisConfig {
        url: server.url(),
        crawl_id: id.into(),
        lease,
        holder: None,
        partitions: 0,
    }
}

fn links(urls: &[&str]) -> Vec<Link> {
    urls.iter()
        .map(|u| Link::new(Url::parse(u).unwrap(), 1))
        .collect()
}

/// A process paused past its lease (here: its own runtime not driven, so its heartbeat
/// stands still) finds the lease gone to another process: `hold` says no, and its late
/// completion changes nothing.
#[test]
fn a_lease_that_went_to_another_process_is_not_held() {
    let Some(server) = redis(&[]) else { return };
    let lease = Duration::from_millis(300);
    let paused = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (a, mine) = paused.block_on(async {
        let a = RedisFrontier::connect(cfg(), settings(&server, "fence", lease), &[])
            .await
            .unwrap();
        a.offer(None, links(&["http://a.test/1"])).await.unwrap();
        let Next::Lease(l) = a.next().await.unwrap() else {
            panic!("no lease")
        };
        assert!(a.hold(&l).await.unwrap(), "just handed out: held");
        (a, l)
    });
    // `paused` is not driven now: A's heartbeat cannot renew.
    let others = tokio::runtime::Runtime::new().unwrap();
    let theirs = others.block_on(async {
        let b = RedisFrontier::connect(cfg(), settings(&server, "fence", lease), &[])
            .await
            .unwrap();
        tokio::time::sleep(lease * 3).await;
        let Next::Lease(l) = b.next().await.unwrap() else {
            panic!("the expired lease was not served again")
        };
        assert_eq!(l.entry().url, mine.entry().url);
        (b, l)
    });
    paused.block_on(async {
        assert!(
            !a.hold(&mine).await.unwrap(),
            "gone to another process: not held"
        );
        // The fence answered with the page's offer says the same (its links still count).
        let (admitted, held) = a
            .offer_and_hold(&mine, links(&["http://a.test/2"]))
            .await
            .unwrap();
        assert_eq!((admitted.len(), held), (1, Some(false)));
        a.complete(mine, Outcome::Done).await.unwrap();
    });
    others.block_on(async {
        let (b, l) = theirs;
        assert!(b.hold(&l).await.unwrap(), "the new holder holds it");
        let (_, held) = b
            .offer_and_hold(&l, links(&["http://a.test/2"]))
            .await
            .unwrap();
        assert_eq!(
            held,
            Some(true),
            "the holder's fence, answered with its offer"
        );
        b.complete(l, Outcome::Done).await.unwrap();
        let s = b.stats().await.unwrap();
        assert_eq!(s.pages, 1, "one completion counted, the late one not");
    });
}

/// Redis stopped for three leases: when it goes on, the leases live holders had are still
/// theirs (the crawl clock did not count the outage), and no other process is handed them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_longer_than_a_lease_takes_no_live_lease() {
    let Some(server) = redis(&[]) else { return };
    let lease = Duration::from_millis(600);
    let a = RedisFrontier::connect(cfg(), settings(&server, "outage", lease), &[])
        .await
        .unwrap();
    let b = RedisFrontier::connect(cfg(), settings(&server, "outage", lease), &[])
        .await
        .unwrap();
    a.offer(None, links(&["http://a.test/1", "http://b.test/1"]))
        .await
        .unwrap();
    let Next::Lease(first) = a.next().await.unwrap() else {
        panic!()
    };
    let Next::Lease(second) = a.next().await.unwrap() else {
        panic!()
    };
    server.pause().unwrap();
    tokio::time::sleep(lease * 3).await;
    server.resume().unwrap();
    assert_eq!(
        b.try_next().await.unwrap(),
        None,
        "a live holder's lease was handed out again after the outage"
    );
    assert!(a.hold(&first).await.unwrap());
    assert!(a.hold(&second).await.unwrap());
    a.complete(first, Outcome::Done).await.unwrap();
    a.complete(second, Outcome::Done).await.unwrap();
    let s = b.stats().await.unwrap();
    assert_eq!((s.pages, s.extra("leases_expired")), (2, 0));
    // The clock stands still only while no script runs: a lease nobody renews still expires
    // while the other processes go on (here B, waiting for a URL, polls).
    a.offer(None, links(&["http://c.test/1"])).await.unwrap();
    let Next::Lease(third) = a.next().await.unwrap() else {
        panic!()
    };
    drop(a); // its heartbeat ends with it
    let again = tokio::time::timeout(lease * 10, b.next())
        .await
        .expect("an abandoned lease is served again")
        .unwrap();
    let Next::Lease(again) = again else { panic!() };
    assert_eq!(again.entry().url, third.entry().url);
}

/// A full Redis refuses every change whole: no lease handed out (nothing popped), no
/// completion half-done, no renewal; with room again, the crawl is as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_redis_refuses_every_change_whole() {
    let Some(server) = redis(&["--maxmemory-policy", "noeviction"]) else {
        return;
    };
    let a = RedisFrontier::connect(
        cfg(),
        settings(&server, "full", Duration::from_secs(5)),
        &[],
    )
    .await
    .unwrap();
    a.offer(
        None,
        links(&["http://a.test/1", "http://b.test/1", "http://c.test/1"]),
    )
    .await
    .unwrap();
    let Next::Lease(held) = a.next().await.unwrap() else {
        panic!()
    };
    let before = a.stats().await.unwrap();
    assert_eq!(
        server
            .command(&["CONFIG", "SET", "maxmemory", "1"])
            .unwrap(),
        "+OK"
    );
    let full = |r: Result<(), FrontierError>| match r {
        Err(FrontierError::Full(why)) => assert!(why.contains("out of memory"), "{why}"),
        other => panic!("not refused as full: {other:?}"),
    };
    full(a.offer(None, links(&["http://d.test/1"])).await.map(drop));
    full(a.try_next().await.map(drop));
    full(a.hold(&held).await.map(drop));
    full(a.complete(held.clone(), Outcome::Done).await);
    // Reads still answer, and nothing moved.
    let during = a.stats().await.unwrap();
    assert_eq!(
        (
            during.queued,
            during.in_flight,
            during.pages,
            during.admitted
        ),
        (
            before.queued,
            before.in_flight,
            before.pages,
            before.admitted
        )
    );
    assert_eq!(
        server
            .command(&["CONFIG", "SET", "maxmemory", "0"])
            .unwrap(),
        "+OK"
    );
    assert!(
        a.hold(&held).await.unwrap(),
        "the lease outlived the full spell"
    );
    a.complete(held, Outcome::Done).await.unwrap();
    let after = a.stats().await.unwrap();
    assert_eq!((after.queued, after.pages), (before.queued, 1));
}

/// Under a recrawl schedule, a refetch whose holder dies comes back to another process once
/// its lease expires, still carrying the history of the fetches before (its validators, its
/// interval): the schedule outlives the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_holders_refetch_is_served_again_with_its_history() {
    let Some(server) = redis(&[]) else { return };
    let lease = Duration::from_millis(300);
    let cfg = test_support::contract::scheduled_config(1);
    let a = RedisFrontier::connect(cfg.clone(), settings(&server, "refetch", lease), &[])
        .await
        .unwrap();
    a.offer(None, links(&["http://a.test/1"])).await.unwrap();
    let Next::Lease(mut first) = a.next().await.unwrap() else {
        panic!("no lease")
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    first.set_visited(frontier::Visited {
        history: recrawl::History {
            status: 200,
            last_fetch: now as u32,
            body_bytes: 777,
            ..recrawl::History::default()
        },
        seen: recrawl::Observation::Changed,
    });
    a.complete(first, Outcome::Done).await.unwrap();
    // Due again a second later: A takes the refetch, then dies holding it.
    let Next::Lease(refetch) = a.next().await.unwrap() else {
        panic!("the URL did not come back")
    };
    assert_eq!(
        refetch.entry().visit.as_ref().unwrap().history.body_bytes,
        777
    );
    drop(refetch);
    drop(a);

    let b = RedisFrontier::connect(cfg, settings(&server, "refetch", lease), &[])
        .await
        .unwrap();
    let got = tokio::time::timeout(Duration::from_secs(30), b.next())
        .await
        .expect("the dead holder's lease was never served again")
        .unwrap();
    let Next::Lease(again) = got else {
        panic!("no lease: {got:?}")
    };
    assert_eq!(again.entry().url, "http://a.test/1");
    let visit = again.entry().visit.clone().expect("served with its visit");
    assert_eq!(
        (visit.history.body_bytes, visit.history.interval),
        (777, 1),
        "the history of the fetch before"
    );
}

/// Redis rolled back (it lost its last writes: a crash of its machine, a replica promoted
/// before it had them) while this process held a lease handed out in the lost stretch. A
/// lease id from that stretch is never handed out again, so the process' late completion of
/// its lost lease cannot end another URL's lease (ids once counted on from the rolled-back
/// counter: the second hand-out got the first one's id, and completing the first completed
/// the second's URL unfetched).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolled_back_redis_never_hands_a_lease_id_out_again() {
    let Some(mut server) = redis(&["--appendonly", "no"]) else {
        return;
    };
    let f = RedisFrontier::connect(
        cfg(),
        settings(&server, "rollback", Duration::from_secs(30)),
        &[],
    )
    .await
    .unwrap();
    f.offer(None, links(&["http://a.test/1", "http://b.test/1"]))
        .await
        .unwrap();
    // The state Redis will come back with: both URLs queued, none handed out.
    assert_eq!(server.command(&["SAVE"]).unwrap().trim(), "+OK");
    let Next::Lease(lost) = f.next().await.unwrap() else {
        panic!("two URLs are queued")
    };
    tokio::task::block_in_place(|| server.crash_and_restart(Duration::from_millis(200))).unwrap();
    // The other host's URL, from the rolled-back state, to the same process.
    let other = if lost.host() == "a.test" {
        "b.test"
    } else {
        "a.test"
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let again = loop {
        match f.try_next_from(other).await {
            Ok(Some(l)) => break l,
            Ok(None) | Err(_) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            r => panic!("no lease of {other} after the restart: {r:?}"),
        }
    };
    assert_ne!(again.token(), lost.token(), "a lease id handed out twice");
    // The late completion of the lost lease changes nothing; the new one is still held.
    f.complete(lost, Outcome::Done).await.unwrap();
    assert!(
        f.hold(&again).await.unwrap(),
        "the new lease was ended by the old one's completion"
    );
    assert_eq!(f.stats().await.unwrap().pages, 0);
}

/// With several partitions, a dead process' lease in a partition this process is not busy
/// with still expires and is served, while this process' workers always have URLs due in
/// another partition (a crawl that keeps finding links on one host): no partition is left
/// without calls, so none keeps a dead holder's URL for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_holders_lease_in_a_quiet_partition_is_served() {
    let Some(server) = redis(&[]) else { return };
    let lease = Duration::from_millis(400);
    let parted = || RedisConfig {
        partitions: 4,
        ..settings(&server, "quiet", lease)
    };
    // Two hosts in different partitions.
    let busy = "busy.test";
    let quiet = (0..64)
        .map(|i| format!("q{i}.test"))
        .find(|h| redis_frontier::partition_of(h, 4) != redis_frontier::partition_of(busy, 4))
        .unwrap();
    let dead = RedisFrontier::connect(cfg(), parted(), &[]).await.unwrap();
    let lost = format!("http://{quiet}/lost");
    dead.offer(None, links(&[&lost])).await.unwrap();
    let Next::Lease(l) = dead.next().await.unwrap() else {
        panic!("no lease")
    };
    assert_eq!(l.entry().url, lost);
    drop(l);
    drop(dead);

    let f = RedisFrontier::connect(cfg(), parted(), &[]).await.unwrap();
    f.offer(None, links(&[&format!("http://{busy}/0")]))
        .await
        .unwrap();
    // Due a lease (0.4 s) after the death and a tick (50 ms) later: 5 s is ten times that.
    // (Without the ticks, a partition asked only when no other has a URL due took 16 s.)
    let served = tokio::time::timeout(Duration::from_secs(5), async {
        let mut next = f.next().await.unwrap();
        for i in 1.. {
            let Next::Lease(l) = next else {
                panic!("the crawl ended: {next:?}")
            };
            if l.entry().url == lost {
                return i;
            }
            // Each busy page finds the next: that host always has a URL due.
            f.offer(None, links(&[&format!("http://{busy}/{i}")]))
                .await
                .unwrap();
            next = f.complete_and_next(l, Outcome::Done).await.unwrap();
        }
        unreachable!()
    })
    .await
    .expect("the dead process' URL was never served");
    println!("served after {served} pages of the busy host");
    let stats = f.stats().await.unwrap();
    assert_eq!(stats.extra["leases_expired"], 1);
}
