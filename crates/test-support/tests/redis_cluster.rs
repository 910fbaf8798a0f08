//! The private Redis Cluster the shared frontier's cluster tests stand on: three masters with
//! a replica each, every slot served, and a master killed for good — its replica promoted by
//! the cluster, with no operator — leaves every slot served.

use test_support::redis_cluster::RedisCluster;

#[test]
fn three_masters_with_replicas_serve_every_slot_and_survive_a_master_killed() {
    let Some(mut cluster) = RedisCluster::for_test(3) else {
        return;
    };
    let view = cluster.view().unwrap();
    let masters: Vec<_> = view.iter().filter(|n| n.master).collect();
    assert_eq!((masters.len(), view.len()), (3, 6), "{view:?}");
    let first = cluster.addrs()[0];
    let info = cluster
        .node(first)
        .unwrap()
        .command(&["CLUSTER", "INFO"])
        .unwrap();
    assert!(info.contains("cluster_slots_ok:16384"), "{info}");

    let victim = masters[0].addr;
    cluster.kill(victim).unwrap();
    let view = cluster.view().unwrap();
    let serving: Vec<_> = view
        .iter()
        .filter(|n| n.master && !n.failed && !n.slots.is_empty())
        .collect();
    assert_eq!(serving.len(), 3, "{view:?}");
    assert!(serving.iter().all(|n| n.addr != victim));
    let live = cluster.addrs().into_iter().find(|a| *a != victim).unwrap();
    let info = cluster
        .node(live)
        .unwrap()
        .command(&["CLUSTER", "INFO"])
        .unwrap();
    assert!(info.contains("cluster_slots_ok:16384"), "{info}");
    assert!(cluster.url().starts_with("redis+cluster://127.0.0.1:"));
}
