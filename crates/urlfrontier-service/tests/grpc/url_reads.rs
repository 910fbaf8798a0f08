//! GetURLStatus, ListURLs, CountURLs and PurgeURLs: a URL held, queued, asleep, finished or
//! unknown answers as such; listings page, filter and count what is held, queued and asleep;
//! a purge empties a queue or the crawl.

use super::keys::keyed;
use super::urls::{get_infos, put_urls, unpaced};
use super::*;
use urlfrontier_proto::v2::{ListUrlParams, PurgeUrlParams, UrlStatusRequest};

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The URL, key and date of a known item.
fn known(item: &UrlItem) -> (String, String, u64) {
    match &item.item {
        Some(Item::Known(k)) => {
            let info = k.info.as_ref().expect("info");
            (info.url.clone(), info.key.clone(), k.refetchable_from_date)
        }
        other => panic!("not a known item: {other:?}"),
    }
}

async fn status(
    c: &mut UrlFrontierClient<Channel>,
    url: &str,
    key: &str,
) -> Result<UrlItem, tonic::Status> {
    let request = UrlStatusRequest {
        url: url.into(),
        key: key.into(),
        ..UrlStatusRequest::default()
    };
    c.get_url_status(request).await.map(|r| r.into_inner())
}

async fn list(
    c: &mut UrlFrontierClient<Channel>,
    params: ListUrlParams,
) -> Vec<(String, String, u64)> {
    let mut items = c.list_ur_ls(params).await.unwrap().into_inner();
    let mut out = Vec::new();
    while let Some(item) = items.message().await.unwrap() {
        out.push(known(&item));
    }
    out
}

async fn count(c: &mut UrlFrontierClient<Channel>, filter: Option<&str>) -> u64 {
    let params = CountUrlParams {
        filter: filter.map(str::to_owned),
        ignore_case: Some(true),
        ..CountUrlParams::default()
    };
    c.count_ur_ls(params).await.unwrap().into_inner().value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urls_are_answered_held_queued_asleep_finished_or_unknown_listed_and_purged() {
    let crawl = Crawl::start_with(unpaced).await;
    let (addr, server) = crawl.serve(settings("", 16, Duration::from_secs(10))).await;
    let mut c = UrlFrontierClient::new(channel(addr).await);
    let later = now() + 3600;
    let put_at = now();
    let acks = put_urls(
        &mut c,
        vec![
            keyed("http://a.test/1", "", None, &["m"]),
            keyed("http://a.test/2", "", None, &[]),
            keyed("http://b.test/X", "k", None, &[]),
            keyed("http://c.test/later", "", Some(later), &[]),
        ],
    )
    .await
    .unwrap();
    assert!(acks.iter().all(|(_, s)| *s == Ack::Ok as i32), "{acks:?}");
    let one = GetParams {
        key: "a.test".into(),
        max_urls_per_queue: 1,
        delay_requestable: 60,
        ..GetParams::default()
    };
    let got = get_infos(&mut c, one).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].url, "http://a.test/1");

    // Held, queued (in its key's queue), asleep, unknown, not a URL.
    let t0 = now();
    let held = status(&mut c, "http://a.test/1", "").await.unwrap();
    let (url, key, date) = known(&held);
    assert_eq!((url.as_str(), key.as_str()), ("http://a.test/1", "a.test"));
    assert!(date >= t0, "due now: {date}");
    match &held.item {
        Some(Item::Known(k)) => assert_eq!(k.info.as_ref().unwrap().metadata["v"].values, ["m"]),
        other => panic!("{other:?}"),
    }
    let queued = status(&mut c, "http://b.test/X", "k").await.unwrap();
    let (_, key, date) = known(&queued);
    assert_eq!(key, "k");
    assert!(date >= t0);
    // Created when the frontier took them: held, queued and asleep alike.
    for item in [&held, &queued] {
        assert!((put_at..=now()).contains(&item.creation_date), "{item:?}");
    }
    let asleep = status(&mut c, "http://c.test/later", "").await.unwrap();
    assert!(
        (put_at..=now()).contains(&asleep.creation_date),
        "{asleep:?}"
    );
    let (_, _, date) = known(&status(&mut c, "http://c.test/later", "").await.unwrap());
    assert_eq!(date, later, "asleep until its date");
    let e = status(&mut c, "http://z.test/", "").await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e}");
    let e = status(&mut c, "not a url", "").await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");

    // Listed: held first, then the queues by key, then the asleep; paged, by key, filtered.
    let all = list(&mut c, ListUrlParams::default()).await;
    let urls: Vec<&str> = all.iter().map(|(u, _, _)| u.as_str()).collect();
    assert_eq!(
        urls,
        [
            "http://a.test/1",
            "http://a.test/2",
            "http://b.test/X",
            "http://c.test/later"
        ]
    );
    assert_eq!(all[3].2, later);
    let page = ListUrlParams {
        start: 1,
        size: 2,
        ..ListUrlParams::default()
    };
    let urls: Vec<String> = list(&mut c, page).await.into_iter().map(|u| u.0).collect();
    assert_eq!(urls, ["http://a.test/2", "http://b.test/X"]);
    let of_k = ListUrlParams {
        key: "k".into(),
        ..ListUrlParams::default()
    };
    assert_eq!(list(&mut c, of_k).await.len(), 1);
    let filtered = ListUrlParams {
        filter: Some("/x".into()),
        ignore_case: Some(true),
        ..ListUrlParams::default()
    };
    let urls: Vec<String> = list(&mut c, filtered)
        .await
        .into_iter()
        .map(|u| u.0)
        .collect();
    assert_eq!(urls, ["http://b.test/X"]);
    assert_eq!(
        (
            count(&mut c, None).await,
            count(&mut c, Some("A.TEST")).await
        ),
        (4, 2)
    );

    // Finished: known to the visited set alone, with date 0, and no longer listed.
    let acks = put_urls(&mut c, vec![keyed("http://a.test/1", "", Some(0), &[])])
        .await
        .unwrap();
    assert_eq!(acks, [("http://a.test/1".to_owned(), Ack::Ok as i32)]);
    let (_, _, date) = known(&status(&mut c, "http://a.test/1", "").await.unwrap());
    assert_eq!(date, 0, "done");
    assert_eq!(count(&mut c, None).await, 3);

    // Purged: by age nothing (every URL is younger than a day), then one queue, then every
    // queue (what sleeps too).
    let purge = |key: &str, days| PurgeUrlParams {
        key: key.into(),
        days,
        ..PurgeUrlParams::default()
    };
    assert_eq!(
        c.purge_ur_ls(purge("", 1))
            .await
            .unwrap()
            .into_inner()
            .value,
        0
    );
    assert_eq!(count(&mut c, None).await, 3);
    assert_eq!(
        c.purge_ur_ls(purge("k", 0))
            .await
            .unwrap()
            .into_inner()
            .value,
        1
    );
    assert_eq!(count(&mut c, None).await, 2);
    assert_eq!(
        c.purge_ur_ls(purge("", 0))
            .await
            .unwrap()
            .into_inner()
            .value,
        2
    );
    assert_eq!(count(&mut c, None).await, 0);
    assert_eq!(get_infos(&mut c, GetParams::default()).await, vec![]);

    crawl.stop().await;
    server.await.unwrap().unwrap();
}
