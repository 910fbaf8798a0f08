//! What a url-frontier client puts with a URL ([`Link::client`]) comes back with its lease.

use frontier::{Admission, ClientInfo, Link, Outcome};

use super::{base_config, link, Harness};

fn info(raw: &str) -> Box<ClientInfo> {
    let metadata = vec![("k".to_owned(), vec!["v1".to_owned(), "v2".to_owned()])];
    ClientInfo::new(raw, metadata).expect("small")
}

/// A link's client fields come back with its lease — the string put only where it differs
/// from the canonical form, and nothing for a URL put as it is queued without metadata —
/// and are kept over a restart.
pub async fn client_fields_come_back_with_the_lease(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    let with = |raw: &str, client: Box<ClientInfo>| Link {
        client: Some(client),
        ..link(raw, 1)
    };
    let links = vec![
        with("http://c.test?x", info("http://c.test?x")),
        with(
            "http://c.test/y",
            ClientInfo::new("http://c.test/y", Vec::new()).unwrap(),
        ),
    ];
    let admitted = f.offer(None, links).await.expect("offer");
    assert_eq!(admitted, [Admission::Admitted; 2]);
    let first = f.try_next_from("c.test").await.unwrap().expect("queued");
    assert_eq!(
        first.entry().url,
        "http://c.test/?x",
        "queued in canonical form"
    );
    let kept = first.entry().client.as_deref().expect("kept");
    assert_eq!(kept.original(), Some("http://c.test?x"));
    assert_eq!(kept.metadata(), info("").metadata());
    let second = f.try_next_from("c.test").await.unwrap().expect("queued");
    assert_eq!(
        second.entry().client,
        None,
        "nothing beyond the URL to keep"
    );
    // Given back, it keeps them too.
    f.complete(first, Outcome::Released)
        .await
        .expect("complete");
    let again = f.try_next_from("c.test").await.unwrap().expect("again");
    assert_eq!(
        again.entry().client.as_deref().map(|c| c.metadata().len()),
        Some(1)
    );
    f.complete(again, Outcome::Done).await.expect("complete");
    f.complete(second, Outcome::Done).await.expect("complete");

    // Queued at a restart: restored with them.
    let third = with("http://c.test/z?a=1", info("HTTP://c.test/z?a=1"));
    assert_eq!(
        f.offer(None, vec![third]).await.unwrap(),
        [Admission::Admitted]
    );
    drop(f);
    let Some(g) = h.reopen(base_config(), &[]) else {
        return;
    };
    let l = g.try_next_from("c.test").await.unwrap().expect("restored");
    let kept = l
        .entry()
        .client
        .as_deref()
        .expect("restored with its fields");
    assert_eq!(kept.original(), Some("HTTP://c.test/z?a=1"));
    g.complete(l, Outcome::Done).await.expect("complete");
    g.close();
}
