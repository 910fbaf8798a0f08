//! Politeness per address where the frontier holds fetches rather than hand-outs (a frontier
//! split into partitions, whose hosts of one address lie in different partitions): a lease
//! placed where its group is full, or its gap has not passed, is refused and given back, its
//! host waiting; a completion frees the group's turn; every URL is still served.

use std::time::Duration;

use frontier::{End, Next, Outcome};

use super::{base_config, complete, lease, next, test_address, two_urls_each, Harness, Lacks};

const PLACED: &str = "place";

/// `max_per_ip = 1`: one fetch of the address at a time, every URL served; `ip_delay` of an
/// hour: after one fetch of the address, every lease of it is refused.
pub async fn an_address_holds_its_fetches(h: &dyn Harness) {
    if h.lacks(Lacks::AddressGroups) {
        return;
    }
    let key = test_address();
    let mut cfg = base_config();
    cfg.politeness.max_per_ip = 1;
    let f = h.open(cfg, &[]);
    two_urls_each(&*f, ["ta.test", "tb.test"]).await;
    let (a, b) = (lease(&*f).await, lease(&*f).await);
    assert!(f.place_host(&a, key).await.expect(PLACED));
    assert!(
        !f.place_host(&b, key).await.expect(PLACED),
        "the group is full: give the lease back"
    );
    complete(&*f, b, Outcome::Released).await;
    // While `a`'s fetch is out, no other lease of the address is placed.
    for _ in 0..50 {
        let Some(c) = f.try_next().await.expect("try_next") else {
            break;
        };
        assert!(!f.place_host(&c, key).await.expect(PLACED), "one at a time");
        complete(&*f, c, Outcome::Released).await;
    }
    let s = f.stats().await.expect("stats");
    let figure = |k: &str| s.extra.get(k).copied().unwrap_or(0);
    assert_eq!(
        (figure("address_groups"), figure("address_groups_shared")),
        (1, 1),
        "{:?}",
        s.extra
    );
    complete(&*f, a, Outcome::Done).await;
    // The turn is free: the remaining URLs are served, one fetch of the address at a time.
    let mut done = 1;
    loop {
        match next(&*f).await {
            Next::Lease(l) => {
                if f.place_host(&l, key).await.expect(PLACED) {
                    complete(&*f, l, Outcome::Done).await;
                    done += 1;
                } else {
                    complete(&*f, l, Outcome::Released).await;
                }
            }
            Next::End(e) => {
                assert_eq!(e, End::Finished);
                break;
            }
        }
    }
    assert_eq!(done, 4);

    // A gap of an hour: once one host of the address fetched, every lease of it is refused.
    let mut cfg = base_config();
    cfg.politeness.ip_delay = Duration::from_secs(3600);
    let f = h.open(cfg, &[]);
    two_urls_each(&*f, ["tc.test", "td.test"]).await;
    let (a, b) = (lease(&*f).await, lease(&*f).await);
    assert!(f.place_host(&a, key).await.expect(PLACED));
    assert!(!f.place_host(&b, key).await.expect(PLACED), "the gap");
    complete(&*f, b, Outcome::Released).await;
    complete(&*f, a, Outcome::Done).await;
    let mut refused = 0;
    while let Some(c) = f.try_next().await.expect("try_next") {
        assert!(!f.place_host(&c, key).await.expect(PLACED), "the gap");
        complete(&*f, c, Outcome::Released).await;
        refused += 1;
        assert!(refused <= 4, "a refused host waits for its turn");
    }
}
