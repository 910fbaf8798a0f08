//! Address groups in the local scheduler, past what the contract suite checks (which holds
//! the groups' limits and turns in every frontier, `test_support::contract::groups`): the
//! figures `/metrics` reads from the scheduler.

use frontier::{AddressKey, Frontier, Lease, LocalFrontier, Outcome};

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
