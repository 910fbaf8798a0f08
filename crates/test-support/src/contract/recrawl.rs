//! The recrawl contract: under a schedule a fetched URL is not done but due again, never
//! before its due time, carrying the history its fetch left; the crawl waits for it instead
//! of ending; a host's own interval replaces the crawl's; an operator moves a URL's due time.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use frontier::{
    Admission, Frontier, FrontierConfig, HostControls, Next, Outcome, Recrawled, Visited,
};
use recrawl::{History, Observation, Policy, Schedule};

use super::{base_config, lease, next, offer, Harness, HANG};

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A fixed schedule of `secs`, without jitter.
pub fn scheduled_config(secs: u32) -> FrontierConfig {
    FrontierConfig {
        recrawl: Policy {
            schedule: Schedule::Fixed,
            interval_secs: secs,
            min_interval_secs: 1,
            max_interval_secs: 3_600,
            jitter: 0.0,
        },
        ..base_config()
    }
}

/// What a fetch of a page left: a 200 with a validator, now.
fn fetched(etag_len: u32) -> Visited {
    Visited {
        history: History {
            status: 200,
            last_fetch: u32::try_from(unix_now()).unwrap_or(u32::MAX),
            body_bytes: etag_len,
            fetches: 1,
            ..History::default()
        },
        seen: Observation::Changed,
    }
}

async fn scheduled_figures(f: &dyn Frontier) -> (u64, u64, u64) {
    let s = f.stats().await.expect("stats");
    (
        s.extra("scheduled"),
        s.extra("next_due"),
        s.extra("due_next_hour"),
    )
}

/// A URL fetched under a fixed two-second schedule comes back through `next` (which waits
/// rather than ending the crawl), not before its due time, with the history its fetch left;
/// the schedule shows in the figures; a host's `recrawl_secs` sets its URLs' next interval.
pub async fn a_fetched_url_is_due_again(h: &dyn Harness) {
    if h.lacks(super::Lacks::Schedules) {
        return;
    }
    let f = h.open(scheduled_config(2), &[]);
    offer(&*f, None, &["http://r.test/1".into()]).await;
    let mut l = lease(&*f).await;
    assert!(l.entry().visit.is_none(), "a first fetch has no history");
    l.set_visited(fetched(1234));
    let done_at = Instant::now();
    let before = unix_now();
    f.complete(l, Outcome::Done).await.expect("complete");

    let (scheduled, next_due, hour) = scheduled_figures(&*f).await;
    assert_eq!(scheduled, 1, "the fetched URL sleeps until due");
    assert!(
        next_due > before,
        "due after its fetch: {next_due} <= {before}"
    );
    assert_eq!(hour, 1, "due within the hour");
    assert_eq!(f.stats().await.expect("stats").pages, 1);
    assert!(
        f.try_next().await.expect("try_next").is_none(),
        "nothing is due yet"
    );

    // The host's own interval replaces the crawl's for its URLs leased from now on (the
    // shared frontier reads it with the lease).
    assert!(f
        .set_host(
            "r.test",
            HostControls {
                recrawl_secs: Some(600),
                ..HostControls::default()
            },
        )
        .await
        .expect("set_host"));

    // `next` waits for the due time instead of ending the crawl.
    let again = match tokio::time::timeout(HANG, f.next()).await {
        Ok(Ok(Next::Lease(l))) => l,
        other => panic!("expected the URL due again, got {other:?}"),
    };
    assert!(
        done_at.elapsed() >= Duration::from_secs(1),
        "fetched again {:?} after its completion under a 2 s schedule",
        done_at.elapsed()
    );
    assert_eq!(again.entry().url, "http://r.test/1");
    let visit = again
        .entry()
        .visit
        .clone()
        .expect("a refetch carries its visit");
    assert_eq!(visit.history.body_bytes, 1234, "the history its fetch left");
    assert_eq!(visit.history.interval, 2);
    assert_eq!(
        scheduled_figures(&*f).await.0,
        0,
        "none sleeps while it is out"
    );

    let mut again = again;
    again.set_visited(fetched(99));
    let before = unix_now();
    f.complete(again, Outcome::Done).await.expect("complete");
    let (scheduled, next_due, _) = scheduled_figures(&*f).await;
    assert_eq!(scheduled, 1);
    assert!(
        next_due >= before + 590,
        "the host's 600 s interval: due at {next_due}, completed at {before}"
    );
    // Still nothing due: a closed frontier ends the wait.
    f.close();
    assert!(matches!(next(&*f).await, Next::End(_)));
}

/// A URL that a fetch did not reach (robots.txt ruled it out) keeps its schedule;
/// a one-shot frontier (no schedule) ends when its only URL is done.
pub async fn skipped_urls_back_off_and_one_shot_crawls_end(h: &dyn Harness) {
    if h.lacks(super::Lacks::Schedules) {
        return;
    }
    let f = h.open(scheduled_config(100), &[]);
    offer(&*f, None, &["http://s.test/1".into()]).await;
    let l = lease(&*f).await;
    let before = unix_now();
    f.complete(l, Outcome::Skipped).await.expect("complete");
    let (scheduled, next_due, _) = scheduled_figures(&*f).await;
    assert_eq!(scheduled, 1, "a skipped URL keeps its schedule");
    assert!(
        next_due >= before + 99,
        "a skip is due again after the interval: due at {next_due}, skipped at {before}"
    );
    f.close();

    let f = h.open(base_config(), &[]);
    offer(&*f, None, &["http://o.test/1".into()]).await;
    let mut l = lease(&*f).await;
    l.set_visited(fetched(1));
    f.complete(l, Outcome::Done).await.expect("complete");
    assert!(
        matches!(next(&*f).await, Next::End(frontier::End::Finished)),
        "a one-shot crawl ends"
    );
    assert_eq!(scheduled_figures(&*f).await.0, 0);
}

/// An operator's recrawl: a sleeping URL is made due at the time asked (now when none, and
/// `try_next` serves it), a URL queued or in flight says so, one never admitted says that;
/// a completion that says when its URL is due again puts it to sleep until then.
pub async fn an_operator_moves_a_schedule(h: &dyn Harness) {
    if h.lacks(super::Lacks::Schedules) {
        return;
    }
    let f = h.open(scheduled_config(600), &[]);
    offer(
        &*f,
        None,
        &["http://x.test/1".into(), "http://x.test/2".into()],
    )
    .await;
    let mut first = lease(&*f).await;
    let second = lease(&*f).await;
    first.set_visited(fetched(1));
    let (first_url, second_url) = (first.entry().url.clone(), second.entry().url.clone());
    f.complete(first, Outcome::Done).await.expect("complete");
    let url = |u: &str| url::Url::parse(u).expect("URL");
    let asked = vec![
        url(&first_url),
        url(&second_url),
        url("http://x.test/never"),
    ];
    assert_eq!(
        f.recrawl(asked, None).await.expect("recrawl"),
        vec![
            Recrawled::Scheduled,
            Recrawled::Queued,
            Recrawled::NeverSeen
        ]
    );
    // Due now, not in 600 s, and served by `try_next` as by `next` (an external fetcher may
    // be the only taker).
    let asked_at = Instant::now();
    let again = loop {
        if let Some(l) = f.try_next().await.expect("try_next") {
            break l;
        }
        assert!(asked_at.elapsed() < HANG, "the URL made due is not served");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(again.entry().url, first_url);
    assert!(again.entry().visit.is_some());

    // Moved later: the second URL, fetched, is due in an hour rather than in 600 s.
    let mut second = second;
    second.set_visited(fetched(2));
    f.complete(second, Outcome::Done).await.expect("complete");
    let later = unix_now() + 3_600;
    assert_eq!(
        f.recrawl(vec![url(&second_url)], Some(later))
            .await
            .expect("recrawl"),
        vec![Recrawled::Scheduled]
    );
    let (scheduled, next_due, hour) = scheduled_figures(&*f).await;
    assert_eq!((scheduled, next_due), (1, later), "due when asked");
    assert_eq!(hour, 1, "within the hour, to the second or the minute");

    // A completion may carry the time it is due again (a url-frontier client's date), in
    // place of the schedule's 600 s.
    offer(&*f, None, &["http://x.test/3".into()]).await;
    let mut third = lease(&*f).await;
    let sooner = unix_now() + 1_800;
    third.set_due_at(sooner);
    f.complete(third, Outcome::Done).await.expect("complete");
    let (scheduled, next_due, _) = scheduled_figures(&*f).await;
    assert_eq!(scheduled, 2);
    // (A shared frontier adds the wait to its server's clock: up to a second later, never
    // earlier.)
    assert!(
        (sooner..=sooner + 1).contains(&next_due),
        "due at {next_due}, when the completion said {sooner}"
    );
    f.close();
}

/// A link with a client's date (`Link::due`) is admitted asleep until then, whatever the
/// crawl's schedule: those due already come out earliest date first, whatever the order of
/// the offer; one not due yet is not handed out, counts as scheduled, and is seen (offered
/// again, a duplicate).
pub async fn a_dated_link_sleeps_until_its_date(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    let now = unix_now();
    let dated = |url: &str, due: u64| frontier::Link {
        due: Some(due),
        ..super::link(url, 1)
    };
    let admitted = f
        .offer(
            None,
            vec![
                dated("http://d.test/later", now - 10),
                dated("http://d.test/sooner", now - 10_000),
                dated("http://d.test/tomorrow", now + 86_400),
            ],
        )
        .await
        .expect("offer");
    assert_eq!(admitted, [Admission::Admitted; 3]);
    let mut served = Vec::new();
    while let Some(l) = f.try_next_from("d.test").await.expect("try_next_from") {
        assert!(
            l.entry().visit.is_none(),
            "never fetched: its fetch is the first"
        );
        served.push(l.entry().url.clone());
        f.complete(l, Outcome::Done).await.expect("complete");
    }
    assert_eq!(
        served,
        ["http://d.test/sooner", "http://d.test/later"],
        "the earliest date first; tomorrow's sleeps"
    );
    assert_eq!(
        offer(&*f, None, &["http://d.test/tomorrow".into()]).await,
        [Admission::Duplicate]
    );
    let stats = f.stats().await.expect("stats");
    assert_eq!(
        (stats.pages, stats.queued, stats.extra("scheduled")),
        (2, 0, 1)
    );
    // A host whose only URL sleeps is a queue all the same: listed, and its controls take.
    let hosts = f
        .hosts(frontier::HostQuery {
            host: Some("d.test".into()),
            ..frontier::HostQuery::default()
        })
        .await
        .expect("hosts");
    assert_eq!(hosts.hosts.len(), 1);
    let asleep = dated("http://e.test/only", now + 86_400);
    assert_eq!(
        f.offer(None, vec![asleep]).await.unwrap(),
        [Admission::Admitted]
    );
    if !h.lacks(super::Lacks::AsleepQueues) {
        let only = frontier::HostQuery {
            host: Some("e.test".into()),
            ..frontier::HostQuery::default()
        };
        let e = f.hosts(only).await.expect("hosts");
        let listed: Vec<(&str, u64)> = e
            .hosts
            .iter()
            .map(|h| (h.host.as_str(), h.queued))
            .collect();
        assert_eq!(listed, [("e.test", 0)], "known, nothing queued");
        let block = HostControls {
            delay: Some(Duration::from_secs(7)),
            ..HostControls::default()
        };
        assert!(
            f.set_host("e.test", block).await.expect("set_host"),
            "known"
        );
    }

    // A lease finished with a client's date sleeps until then, with no schedule too, and an
    // operator's recrawl moves it; fetched again without a date, it is done.
    offer(&*f, None, &["http://d.test/again".into()]).await;
    let mut l = f
        .try_next_from("d.test")
        .await
        .unwrap()
        .expect("queued now");
    l.set_due_at(now + 86_400);
    f.complete(l, Outcome::Done).await.expect("complete");
    assert!(f.try_next_from("d.test").await.unwrap().is_none(), "asleep");
    assert_eq!(f.stats().await.unwrap().extra("scheduled"), 3);
    let again = url::Url::parse("http://d.test/again").unwrap();
    assert_eq!(
        f.recrawl(vec![again], Some(now - 1))
            .await
            .expect("recrawl"),
        [Recrawled::Scheduled]
    );
    let l = f.try_next_from("d.test").await.unwrap().expect("due now");
    assert_eq!(l.entry().url, "http://d.test/again");
    if !h.lacks(super::Lacks::Schedules) {
        assert!(l.entry().visit.is_some(), "fetched before: a refetch");
    }
    f.complete(l, Outcome::Done).await.expect("complete");
    let stats = f.stats().await.expect("stats");
    assert_eq!(
        (stats.pages, stats.in_flight, stats.extra("scheduled")),
        (4, 0, 2)
    );
    // One more, due already but not handed out before the restart.
    let past = dated("http://d.test/past", now - 5);
    assert_eq!(
        f.offer(None, vec![past]).await.unwrap(),
        [Admission::Admitted]
    );
    drop(f);

    // Restarted from its durable state: the one due wakes as a first fetch, the other
    // sleeps until its date still.
    let Some(g) = h.reopen(base_config(), &[]) else {
        return;
    };
    let l = g.try_next_from("d.test").await.unwrap().expect("due");
    assert_eq!(l.entry().url, "http://d.test/past");
    assert!(
        l.entry().visit.is_none(),
        "never fetched: its fetch is the first"
    );
    g.complete(l, Outcome::Done).await.expect("complete");
    assert_eq!(
        g.stats().await.unwrap().extra("scheduled"),
        2,
        "restored asleep"
    );
    if !h.lacks(super::Lacks::AsleepQueues) {
        let e = g
            .hosts(frontier::HostQuery {
                host: Some("e.test".into()),
                ..frontier::HostQuery::default()
            })
            .await
            .expect("hosts");
        assert_eq!(e.hosts.len(), 1, "a host of sleeping URLs only, restored");
    }
    assert!(g.try_next_from("d.test").await.unwrap().is_none());
    assert_eq!(
        offer(&*g, None, &["http://d.test/tomorrow".into()]).await,
        [Admission::Duplicate]
    );
    g.close();
}
