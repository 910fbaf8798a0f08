//! Address groups past their limits (see `pace::hosts_on_one_address_share_its_limits`): a
//! group's waiting hosts are served whatever happens to the one that holds the group's turn
//! (its queue deleted, an operator's block or longer delay), and a waiting host asked for by
//! name is served once its group has room — so no host of a group is stranded; and the
//! groups' figures `/metrics` shows.

use std::time::Duration;

use frontier::{Frontier, HostControls, Lease, Outcome};

use super::{base_config, complete, offer, Harness, Lacks};

async fn take(f: &dyn Frontier) -> Option<Lease> {
    f.try_next().await.expect("try_next")
}

/// `a.test` in flight (its group's one fetch, `max_per_ip = 1`); `b.test` then `c.test`
/// placed in the group and given back, waiting. Returns the frontier and `a.test`'s lease.
async fn one_out_two_waiting(h: &dyn Harness) -> (std::sync::Arc<dyn Frontier>, Lease) {
    let mut cfg = base_config();
    cfg.politeness.max_per_ip = 1;
    let f = h.open(cfg, &[]);
    let key = super::test_address();
    let urls: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|h| format!("http://{h}.test/1"))
        .collect();
    offer(&*f, None, &urls).await;
    let mut out = Vec::new();
    while let Some(l) = take(&*f).await {
        out.push(l);
    }
    out.sort_by(|x, y| x.host().cmp(y.host()));
    assert_eq!(out.len(), 3, "not placed yet, each host takes a fetch");
    let mut out = out.into_iter();
    let a = out.next().expect("a.test");
    assert!(f.place_host(&a, key).await.expect("place"));
    for other in out {
        assert!(
            !f.place_host(&other, key).await.expect("place"),
            "{}: the group is full",
            other.host()
        );
        complete(&*f, other, Outcome::Released).await;
    }
    assert!(take(&*f).await.is_none(), "the group's one fetch is out");
    (f, a)
}

/// Deleting the queue of the host that holds the group's turn, or of both waiting hosts,
/// strands nothing: the other is served, or nothing is left.
pub async fn a_deleted_queue_passes_the_groups_turn_on(h: &dyn Harness) {
    if h.lacks(Lacks::AddressGroups) {
        return;
    }
    let (f, a) = one_out_two_waiting(h).await;
    complete(&*f, a, Outcome::Done).await;
    let first = take(&*f).await.expect("a waiting host is served");
    let served = first.host().to_owned();
    complete(&*f, first, Outcome::Done).await;
    let rest = match served.as_str() {
        "b.test" => "c.test",
        "c.test" => "b.test",
        other => panic!("{other} was not waiting"),
    };
    let next = take(&*f).await.expect("the other waiting host");
    assert_eq!(next.host(), rest);
    complete(&*f, next, Outcome::Done).await;

    let (f, a) = one_out_two_waiting(h).await;
    complete(&*f, a, Outcome::Done).await;
    for host in ["b.test", "c.test"] {
        assert_eq!(f.delete_queue(host, 0).await.expect("delete"), 1, "{host}");
    }
    assert!(take(&*f).await.is_none(), "nothing left");

    let (f, a) = one_out_two_waiting(h).await;
    complete(&*f, a, Outcome::Done).await;
    assert_eq!(f.delete_queue("b.test", 0).await.expect("delete"), 1);
    let c = take(&*f).await.expect("c.test takes the group's turn");
    assert_eq!(c.host(), "c.test");
}

/// An operator's block or longer delay of a waiting host leaves the group's turn to the
/// other: whichever of the two held it.
pub async fn a_held_back_host_does_not_hold_its_group(h: &dyn Harness) {
    if h.lacks(Lacks::AddressGroups) {
        return;
    }
    let block = HostControls {
        block_for: Some(Duration::from_secs(3600)),
        ..HostControls::default()
    };
    let hour = HostControls {
        delay: Some(Duration::from_secs(3600)),
        ..HostControls::default()
    };
    for control in [block, hour] {
        for (held, served) in [("b.test", "c.test"), ("c.test", "b.test")] {
            // Before and after the group's fetch ends.
            for before in [true, false] {
                let (f, a) = one_out_two_waiting(h).await;
                let mut a = Some(a);
                if !before {
                    complete(&*f, a.take().expect("a.test"), Outcome::Done).await;
                }
                assert!(f.set_host(held, control.clone()).await.expect("set_host"));
                if let Some(a) = a {
                    complete(&*f, a, Outcome::Done).await;
                }
                let got = take(&*f)
                    .await
                    .unwrap_or_else(|| panic!("{served} is served ({control:?} on {held})"));
                assert_eq!(got.host(), served, "{control:?} on {held}");
            }
        }
    }
}

/// A waiting host asked for by name (a client's lease of one queue) is refused while its
/// group is full and served once it has room.
pub async fn a_waiting_host_asked_for_by_name_is_served_when_its_group_has_room(h: &dyn Harness) {
    if h.lacks(Lacks::AddressGroups) {
        return;
    }
    let (f, a) = one_out_two_waiting(h).await;
    assert!(
        f.try_next_from("c.test")
            .await
            .expect("try_next_from")
            .is_none(),
        "the group is full"
    );
    complete(&*f, a, Outcome::Done).await;
    for host in ["c.test", "b.test"] {
        let l = f
            .try_next_from(host)
            .await
            .expect("try_next_from")
            .unwrap_or_else(|| panic!("{host}: the group has room"));
        complete(&*f, l, Outcome::Done).await;
    }
    assert!(take(&*f).await.is_none(), "nothing left");
}

/// The figures `/metrics` shows: groups, groups of more than one host, the most hosts in one,
/// hosts waiting for their group's turn.
pub async fn the_groups_are_counted(h: &dyn Harness) {
    if h.lacks(Lacks::AddressGroups) {
        return;
    }
    let (f, a) = one_out_two_waiting(h).await;
    let figures = |s: &frontier::Stats| -> Vec<u64> {
        [
            "address_groups",
            "address_groups_shared",
            "address_group_hosts_max",
            "address_waiting_hosts",
        ]
        .iter()
        .map(|k| s.extra(k))
        .collect()
    };
    let s = f.stats().await.expect("stats");
    assert_eq!(figures(&s), [1, 1, 3, 2]);
    complete(&*f, a, Outcome::Done).await;
    let b = take(&*f).await.expect("a waiting host is served");
    let s = f.stats().await.expect("stats");
    assert_eq!(figures(&s)[3], 1, "one host still waits: {:?}", figures(&s));
    complete(&*f, b, Outcome::Done).await;
}
