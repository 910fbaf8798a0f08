//! url-frontier's own service tests (its `tests` module: testUpdates, NeverRefetched,
//! RightOrder), and the per-URL calls as its clients send them, ported call for call to a Python client generated from the `.proto`, against
//! `crawler serve` without a `[recrawl]` schedule (a client's dates are kept all the same).
//! As upstream, every scenario starts by deleting the crawls it uses.

use crate::grpc::{python_stubs, run_python, start_serve};
use crate::util::{terminate, CrawlDir};

/// The scenarios, in upstream's words where it has them; one line per answer.
const SCENARIOS: &str = r#"
import sys, time
import grpc
sys.path.insert(0, sys.argv[1])
import urlfrontier_pb2 as uf
import urlfrontier_pb2_grpc as ufg

stub = ufg.URLFrontierStub(grpc.insecure_channel(sys.argv[2]))
md = [("authorization", "Bearer " + sys.argv[3])]
def before():
    stub.DeleteCrawl(uf.DeleteCrawlMessage(value="BESPOKE"), metadata=md, timeout=30)
    stub.DeleteCrawl(uf.DeleteCrawlMessage(), metadata=md, timeout=30)
def send(*items):
    return len(list(stub.PutURLs(iter(items), metadata=md, timeout=30)))
def discovered(url, key):
    return uf.URLItem(discovered=uf.DiscoveredURLItem(info=uf.URLInfo(url=url, key=key)))
def known(url, key, date=0):
    info = uf.URLInfo(url=url, key=key)
    return uf.URLItem(known=uf.KnownURLItem(info=info, refetchable_from_date=date))
def get(key, n):
    p = uf.GetParams(key=key, max_urls_per_queue=n, delay_requestable=2, crawlID="DEFAULT")
    return ",".join(i.url for i in stub.GetURLs(p, metadata=md, timeout=30)) or "-"
def queue(key):
    s = stub.GetStats(uf.QueueWithinCrawlParams(key=key), metadata=md, timeout=30)
    return f"{s.numberOfQueues} {s.inProcess}"

# testUpdates: a URL and its duplicate, one queue; held for 2 s, then free again; deleted.
before()
u = "http://key1.com/"
print("acked", send(discovered(u, "key1.com"), discovered(u, "key1.com")))
print("queues", len(stub.ListQueues(uf.Pagination(), metadata=md, timeout=30).values))
print("got", get("key1.com", 1))
print("queue", queue("key1.com"))
print("got", get("key1.com", 1))
time.sleep(2)
print("queue", queue("key1.com"))
q = uf.QueueWithinCrawlParams(key="key1.com")
print("deleted", stub.DeleteQueue(q, metadata=md, timeout=30).value, queue("key1.com"))

# NeverRefetched: a known URL with no date is never handed out (and one never seen, too).
before()
print("acked", send(known(u, "key1.com")))
print("got", get("key1.com", 1))
print("acked", send(known("http://key2.com/", "key2.com")))
print("got", get("key2.com", 1))

# RightOrder: known URLs with dates come out earliest date first, whatever the put order
# (and, not upstream's, one with a date to come is not handed out yet).
before()
now = int(time.time())
later, sooner = known(u + "later", "key1.com", now), known(u + "sooner", "key1.com", now - 10000)
print("acked", send(later, sooner, known("http://key3.com/", "key3.com", now + 3600)))
print("got", get("key1.com", 2).split(",")[0])
print("got", get("key3.com", 1))

# Not upstream's (its tests have no per-URL calls): GetURLStatus, ListURLs, CountURLs and
# PurgeURLs as a generated client sends them, proto3 optional fields set and left out; in a
# crawl of its own (DEFAULT still holds what RightOrder took).
C = "PERURL"
def item(url, key, date=None):
    info = uf.URLInfo(url=url, key=key, crawlID=C)
    if date is None:
        return uf.URLItem(discovered=uf.DiscoveredURLItem(info=info))
    return uf.URLItem(known=uf.KnownURLItem(info=info, refetchable_from_date=date))
stub.DeleteCrawl(uf.DeleteCrawlMessage(value=C), metadata=md, timeout=30)
print("acked", send(item("http://a.key/x", "k1"), item("http://b.key/Y", ""),
                    item("http://c.key/", "", now + 3600)))
count = lambda **p: stub.CountURLs(uf.CountUrlParams(crawlID=C, **p), metadata=md, timeout=30).value
print("count", count(), count(filter="KEY/Y", ignoreCase=True), count(filter="KEY/Y"))
page = stub.ListURLs(uf.ListUrlParams(size=2, crawlID=C), metadata=md, timeout=30)
print("list", ",".join(f"{i.known.info.key}:{i.known.info.url}" for i in page))
s = stub.GetURLStatus(uf.URLStatusRequest(url="http://c.key/", crawlID=C), metadata=md, timeout=30)
print("status", s.known.refetchable_from_date == now + 3600)
try:
    stub.GetURLStatus(uf.URLStatusRequest(url="http://nowhere.key/", crawlID=C), metadata=md,
                      timeout=30)
except grpc.RpcError as e:
    print("status", e.code().name)
print("purged", stub.PurgeURLs(uf.PurgeUrlParams(crawlID=C), metadata=md, timeout=30).value,
      count())
"#;

#[test]
fn upstreams_scenarios_of_one_queue() {
    let Some(stubs) = python_stubs() else {
        return;
    };
    let dir = CrawlDir::new("[crawl]\nworkers = 0\n");
    let (child, _, grpc, _) = start_serve(&dir);
    assert_eq!(
        run_python(SCENARIOS, stubs.path(), &grpc),
        [
            // testUpdates
            "acked 2",
            "queues 1",
            "got http://key1.com/",
            "queue 1 1",
            "got -",
            "queue 1 0",
            "deleted 1 0 0",
            // NeverRefetched
            "acked 1",
            "got -",
            "acked 1",
            "got -",
            // RightOrder
            "acked 3",
            "got http://key1.com/sooner",
            "got -",
            // The per-URL calls
            "acked 3",
            "count 3 1 0",
            "list b.key:http://b.key/Y,k1:http://a.key/x",
            "status True",
            "status NOT_FOUND",
            "purged 3 0",
        ]
    );
    terminate(child);
}
