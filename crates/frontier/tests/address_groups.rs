//! Address groups in the local scheduler, past what the contract suite checks: a group's
//! waiting hosts are served whatever happens to the one on the ready heap for them (its
//! queue deleted, an operator's block), so no host of a group is stranded.

use std::time::Duration;

use frontier::{AddressKey, Frontier, HostControls, Lease, LocalFrontier, Outcome};

fn frontier() -> LocalFrontier {
    let mut cfg = test_support::contract::base_config();
    cfg.politeness.max_per_ip = 1;
    LocalFrontier::new(cfg, &[]).expect("frontier")
}

async fn take(f: &LocalFrontier) -> Option<Lease> {
    Frontier::try_next(f).await.expect("try_next")
}

/// `a.test` in flight (its group's one fetch); `b.test` then `c.test` placed in the group and
/// given back, waiting. Returns the frontier and `a.test`'s lease.
async fn one_out_two_waiting() -> (LocalFrontier, Lease) {
    let f = frontier();
    let key = AddressKey::of("192.0.2.1".parse().unwrap());
    for url in ["http://a.test/1", "http://b.test/1", "http://c.test/1"] {
        f.offer(url, 1, None);
    }
    let mut out = Vec::new();
    while let Some(l) = take(&f).await {
        out.push(l);
    }
    out.sort_by(|x, y| x.host().cmp(y.host()));
    let mut out = out.into_iter();
    let a = out.next().unwrap();
    assert!(f.place_host(&a, key));
    for other in out {
        assert!(
            !f.place_host(&other, key),
            "{}: the group is full",
            other.host()
        );
        f.complete(other, Outcome::Released);
    }
    assert!(take(&f).await.is_none(), "the group's one fetch is out");
    (f, a)
}

#[tokio::test]
async fn a_deleted_queue_passes_the_groups_turn_on() {
    let (f, a) = one_out_two_waiting().await;
    f.complete(a, Outcome::Done);
    // One of the waiting hosts is on the heap for the group; delete both one at a time,
    // the other is served each time.
    let first = take(&f).await.expect("a waiting host is served");
    let (served, other) = (first.host().to_owned(), ["b.test", "c.test"]);
    f.complete(first, Outcome::Done);
    assert!(other.contains(&served.as_str()));
    let rest = if served == "b.test" {
        "c.test"
    } else {
        "b.test"
    };
    let next = take(&f).await.expect("the other waiting host");
    assert_eq!(next.host(), rest);
    f.complete(next, Outcome::Done);

    // Again, deleting the queue of the host on the heap for the group.
    let (f, a) = one_out_two_waiting().await;
    f.complete(a, Outcome::Done);
    let counts: Vec<u64> = ["b.test", "c.test"]
        .iter()
        .map(|h| f.delete_queue(h, 0))
        .collect();
    assert_eq!(counts, [1, 1]);
    assert!(take(&f).await.is_none());
    let (f, a) = one_out_two_waiting().await;
    f.complete(a, Outcome::Done);
    assert_eq!(f.delete_queue("b.test", 0), 1);
    assert_eq!(
        take(&f)
            .await
            .expect("c.test takes the group's turn")
            .host(),
        "c.test"
    );
}

#[tokio::test]
async fn a_blocked_host_does_not_hold_its_group() {
    let (f, a) = one_out_two_waiting().await;
    let block = HostControls {
        block_for: Some(Duration::from_secs(3600)),
        ..HostControls::default()
    };
    assert!(Frontier::set_host(&f, "b.test", block.clone())
        .await
        .unwrap());
    f.complete(a, Outcome::Done);
    assert_eq!(take(&f).await.expect("c.test is served").host(), "c.test");
    let (f, a) = one_out_two_waiting().await;
    assert!(Frontier::set_host(&f, "c.test", block).await.unwrap());
    f.complete(a, Outcome::Done);
    assert_eq!(take(&f).await.expect("b.test is served").host(), "b.test");
}

#[tokio::test]
async fn the_groups_are_counted_for_metrics() {
    let (f, _a) = one_out_two_waiting().await;
    let s = f.stats();
    let figures: Vec<u64> = [
        "address_groups",
        "address_groups_shared",
        "address_group_hosts_max",
        "address_waiting_hosts",
    ]
    .iter()
    .map(|k| s.extra(k))
    .collect();
    assert_eq!(figures, [1, 1, 3, 2]);
}

#[tokio::test]
async fn a_longer_delay_for_the_host_on_the_heap_passes_the_groups_turn_on() {
    let (f, a) = one_out_two_waiting().await;
    f.complete(a, Outcome::Done);
    // One waiting host is on the heap for the group now; an hour's delay for each in turn
    // leaves the other to be served.
    let hour = HostControls {
        delay: Some(Duration::from_secs(3600)),
        ..HostControls::default()
    };
    assert!(Frontier::set_host(&f, "b.test", hour.clone())
        .await
        .unwrap());
    let served = take(&f).await.expect("c.test takes the turn");
    assert_eq!(served.host(), "c.test");
    f.complete(served, Outcome::Done);

    let (f, a) = one_out_two_waiting().await;
    f.complete(a, Outcome::Done);
    assert!(Frontier::set_host(&f, "c.test", hour).await.unwrap());
    assert_eq!(take(&f).await.expect("b.test").host(), "b.test");
}

#[tokio::test]
async fn a_waiting_host_asked_for_by_name_is_served_when_its_group_has_room() {
    let (f, a) = one_out_two_waiting().await;
    assert!(
        Frontier::try_next_from(&f, "c.test")
            .await
            .unwrap()
            .is_none(),
        "the group is full"
    );
    f.complete(a, Outcome::Done);
    for host in ["c.test", "b.test"] {
        let l = Frontier::try_next_from(&f, host)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{host}: the group has room"));
        f.complete(l, Outcome::Done);
    }
    assert!(take(&f).await.is_none(), "nothing left");
}
