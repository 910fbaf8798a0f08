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

/// A link put under a client's queue key is queued, paced and leased under that key whatever
/// its host — one queue for several hosts, no queue of their own — and stays there over a
/// restart; a key that is the URL's host is its host's queue as without one.
pub async fn a_client_key_is_the_queue(h: &dyn Harness) {
    let mut cfg = base_config();
    cfg.politeness.max_per_host = 1;
    let f = h.open(cfg.clone(), &[]);
    let keyed = |raw: &str, key: &str| Link {
        client: Some(ClientInfo::keyed(raw, key, Vec::new()).expect("small")),
        ..link(raw, 1)
    };
    let links = vec![
        keyed("http://k1.test/a", "shared"),
        keyed("http://k2.test/b", "shared"),
        keyed("http://k3.test/c", "k3.test"),
        keyed("http://k4.test/d", "shared"),
    ];
    let admitted = f.offer(None, links).await.expect("offer");
    assert_eq!(admitted, [Admission::Admitted; 4]);
    for host in ["k1.test", "k2.test", "k4.test"] {
        let none = f.try_next_from(host).await.expect("lease");
        assert!(none.is_none(), "{host} has no queue of its own");
    }
    let first = f.try_next_from("shared").await.unwrap().expect("queued");
    assert_eq!(
        (first.host(), first.entry().url.as_str()),
        ("shared", "http://k1.test/a")
    );
    assert_eq!(first.entry().queue_key(), Some("shared"));
    let held = f.try_next_from("shared").await.expect("lease");
    assert!(
        held.is_none(),
        "one fetch at a time for the key, not per host"
    );
    let own = f.try_next_from("k3.test").await.unwrap().expect("queued");
    assert_eq!(own.host(), "k3.test");
    assert_eq!(own.entry().client, None, "the host's own key is not kept");
    f.complete(first, Outcome::Done).await.expect("complete");
    f.complete(own, Outcome::Done).await.expect("complete");
    let second = f.try_next_from("shared").await.unwrap().expect("queued");
    assert_eq!(second.entry().url, "http://k2.test/b");
    if h.lacks(super::Lacks::QueueFront) {
        f.complete(second, Outcome::Done).await.expect("complete");
        f.close();
        return;
    }
    // Given back, it goes back to its key's queue.
    f.complete(second, Outcome::Released)
        .await
        .expect("complete");
    let again = f.try_next_from("shared").await.unwrap().expect("again");
    assert_eq!(again.entry().url, "http://k2.test/b");
    f.complete(again, Outcome::Done).await.expect("complete");
    drop(f);
    let Some(g) = h.reopen(cfg, &[]) else {
        return;
    };
    let restored = g.try_next_from("shared").await.unwrap().expect("restored");
    assert_eq!(
        (restored.host(), restored.entry().url.as_str()),
        ("shared", "http://k4.test/d")
    );
    g.complete(restored, Outcome::Done).await.expect("complete");
    g.close();
}

/// A lease finished with a date and the client's new fields ([`Lease::replace_client`])
/// comes back at that date with the new string and metadata, in the queue it was in.
pub async fn an_update_replaces_the_client_fields(h: &dyn Harness) {
    let f = h.open(base_config(), &[]);
    let first = ClientInfo::keyed(
        "http://u.test/a",
        "kept",
        vec![("v".into(), vec!["1".into()])],
    );
    let link = Link {
        client: Some(first.expect("small")),
        ..link("http://u.test/a", 1)
    };
    let admitted = f.offer(None, vec![link]).await.expect("offer");
    assert_eq!(admitted, [Admission::Admitted]);
    let mut lease = f.try_next_from("kept").await.unwrap().expect("queued");
    let update = ClientInfo::keyed(
        "HTTP://u.test/a",
        "moved",
        vec![("v".into(), vec!["2".into()])],
    );
    assert!(
        lease.replace_client(update.expect("small")),
        "within the bound"
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    lease.set_due_at(now.saturating_sub(5));
    f.complete(lease, Outcome::Done).await.expect("complete");
    let mut again = None;
    for _ in 0..100 {
        again = f.try_next_from("kept").await.expect("lease");
        if again.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let again = again.expect("due again in its queue");
    let c = again.entry().client.as_deref().expect("kept");
    assert_eq!(
        (c.original(), c.key(), c.metadata()),
        (
            Some("HTTP://u.test/a"),
            Some("kept"),
            &[("v".to_owned(), vec!["2".to_owned()])][..]
        )
    );
    f.complete(again, Outcome::Done).await.expect("complete");
    f.close();
}
