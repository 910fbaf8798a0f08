//! A frontier answers about single URLs: where one is ([`Frontier::find_url`]) and pages of
//! those queued or asleep ([`Frontier::list_urls`]), as url-frontier's GetURLStatus,
//! ListURLs and CountURLs ask.

use frontier::{Admission, ClientInfo, Found, Frontier, Link, Outcome, UrlPage, UrlQuery};
use url::Url;

use super::{base_config, link, offer, Harness};

fn url(u: &str) -> Url {
    Url::parse(u).expect("test URL")
}

async fn list(f: &dyn Frontier, query: UrlQuery) -> UrlPage {
    f.list_urls(query).await.expect("list_urls")
}

/// The URLs of a page, with `~` after an asleep one.
fn urls(page: &UrlPage) -> Vec<String> {
    page.urls
        .iter()
        .map(|u| format!("{}{}", u.entry.url, if u.asleep { "~" } else { "" }))
        .collect()
}

/// Queued URLs are found in their queue, asleep ones anywhere, finished ones in the visited
/// set only; a listing gives the queued URLs by key then the asleep ones, paged, filtered
/// (by the string as put) and counted, spilled URLs read in place.
pub async fn urls_are_found_listed_and_counted(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let keyed = Link {
        client: Some(ClientInfo::keyed("http://c.test/X", "k", Vec::new()).expect("small")),
        ..link("http://c.test/X", 1)
    };
    let later = Link {
        due: Some(now + 86_400),
        ..link("http://d.test/later", 1)
    };
    let mut links: Vec<Link> = ["http://a.test/1", "http://a.test/2", "http://b.test/1"]
        .iter()
        .map(|u| link(u, 1))
        .collect();
    links.extend([keyed, later]);
    let admitted = f.offer(None, links).await.expect("offer");
    assert_eq!(admitted, [Admission::Admitted; 5]);

    let find = |u: &'static str, key: &'static str| {
        let f = &f;
        async move { f.find_url(&url(u), key).await.expect("find_url") }
    };
    assert!(matches!(find("http://a.test/1", "a.test").await,
        Found::Queued(e) if e.url == "http://a.test/1"));
    assert!(matches!(find("http://c.test/X", "k").await,
        Found::Queued(e) if e.queue_key() == Some("k")));
    assert!(matches!(find("http://d.test/later", "any").await,
        Found::Asleep(e) if e.visit.as_ref().is_some_and(|v| v.due == now + 86_400)));
    assert_eq!(
        find("http://b.test/1", "a.test").await,
        Found::Seen,
        "another queue"
    );
    assert_eq!(find("http://z.test/", "z.test").await, Found::Unseen);
    let l = f.try_next_from("a.test").await.unwrap().expect("queued");
    assert_eq!(l.entry().url, "http://a.test/1");
    f.complete(l, Outcome::Done).await.expect("complete");
    assert_eq!(
        find("http://a.test/1", "a.test").await,
        Found::Seen,
        "finished"
    );

    let all = list(
        &*f,
        UrlQuery {
            limit: 100,
            ..UrlQuery::default()
        },
    )
    .await;
    assert_eq!(
        urls(&all),
        [
            "http://a.test/2",
            "http://b.test/1",
            "http://c.test/X",
            "http://d.test/later~"
        ]
    );
    assert_eq!(all.matched, 4);
    let keys: Vec<&str> = all.urls.iter().map(|u| u.key.as_str()).collect();
    assert_eq!(keys, ["a.test", "b.test", "k", "d.test"]);
    let page = list(
        &*f,
        UrlQuery {
            skip: 1,
            limit: 2,
            ..UrlQuery::default()
        },
    )
    .await;
    assert_eq!(
        (urls(&page), page.matched),
        (vec!["http://b.test/1".into(), "http://c.test/X".into()], 4)
    );
    let counted = list(&*f, UrlQuery::default()).await;
    assert_eq!(
        (counted.urls.len(), counted.matched),
        (0, 4),
        "a count alone"
    );
    let of_k = list(
        &*f,
        UrlQuery {
            key: Some("k".into()),
            limit: 10,
            ..UrlQuery::default()
        },
    )
    .await;
    assert_eq!(
        (urls(&of_k), of_k.matched),
        (vec!["http://c.test/X".into()], 1)
    );
    let of_d = list(
        &*f,
        UrlQuery {
            key: Some("d.test".into()),
            limit: 10,
            ..UrlQuery::default()
        },
    )
    .await;
    assert_eq!(
        urls(&of_d),
        ["http://d.test/later~"],
        "asleep, of its queue"
    );
    let filtered = |filter: &str, ignore_case| UrlQuery {
        filter: Some(filter.into()),
        ignore_case,
        limit: 10,
        ..UrlQuery::default()
    };
    let x = list(&*f, filtered("/x", true)).await;
    assert_eq!((urls(&x), x.matched), (vec!["http://c.test/X".into()], 1));
    assert_eq!(
        list(&*f, filtered("/x", false)).await.matched,
        0,
        "case counts"
    );
    assert_eq!(list(&*f, filtered("test/", false)).await.matched, 4);

    // A long queue, past the memory capacity (spilled by the local frontier): read in
    // place, in order, and left queued.
    let many: Vec<String> = (0..200).map(|i| format!("http://s.test/{i:03}")).collect();
    assert!(offer(&*f, None, &many)
        .await
        .iter()
        .all(|a| *a == Admission::Admitted));
    let s = |skip, limit| UrlQuery {
        key: Some("s.test".into()),
        skip,
        limit,
        ..UrlQuery::default()
    };
    let mid = list(&*f, s(150, 3)).await;
    assert_eq!(
        (urls(&mid), mid.matched),
        (
            vec![
                "http://s.test/150".into(),
                "http://s.test/151".into(),
                "http://s.test/152".into()
            ],
            200
        )
    );
    assert!(matches!(
        find("http://s.test/120", "s.test").await,
        Found::Queued(_)
    ));
    let again = list(&*f, s(0, 1000)).await;
    assert_eq!(
        (again.urls.len(), again.matched),
        (200, 200),
        "nothing taken"
    );
    f.close();
}
