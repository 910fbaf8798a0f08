#!/usr/bin/env python3
"""A crawler that uses `crawler serve` as its frontier over the url-frontier gRPC API.

Unlike examples/fetcher.py (the HTTP lease API, where the service applies robots.txt and
retries), this client decides what a url-frontier client decides: it keeps to its scope,
reads robots.txt itself (longest match, `*` and `$`), retries transient failures, and keeps
its own records. The frontier keeps the queue, deduplication and politeness per host.

    examples/urlfrontier_fetcher.py --grpc 127.0.0.1:7071 [--token T] [--domain test]
        [--resolve '*.test=127.0.0.1'] [--seed URL] [--out records.jsonl] [--exit-when-idle]

Each loop takes URLs (GetURLs, held for --hold seconds), fetches them on --threads threads,
and reports back (PutURLs): the links found as discovered, the page as known and done
(refetchable_from_date = 0). A page's record is written once its report is acked. URLs
come back as this client put them (`http://H.test/a/../b` stays so; the frontier queues and
matches it as `http://h.test/b`), and its records name them so.
Needs `pip install grpcio-tools`; the client code is generated from the repository's .proto
at start.
"""

import argparse
import concurrent.futures
import json
import os
import re
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fetcher  # noqa: E402  (this directory's HTTP-lease fetcher: fetch, links, charsets)

AGENT = "crawler-urlfrontier-client"
TRANSIENT = {429, 500, 502, 503, 504}
ATTEMPTS = 4


def generated(proto_dir):
    """The url-frontier messages and stub, generated from the .proto into a temp dir."""
    from grpc_tools import protoc

    out = tempfile.mkdtemp(prefix="urlfrontier-")
    code = protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={out}",
                        f"--grpc_python_out={out}", "urlfrontier.proto"])
    if code != 0:
        sys.exit(f"protoc failed on {proto_dir}/urlfrontier.proto")
    sys.path.insert(0, out)
    import urlfrontier_pb2
    import urlfrontier_pb2_grpc
    return urlfrontier_pb2, urlfrontier_pb2_grpc


class Robots:
    """robots.txt rules for this agent (RFC 9309): the groups naming it, else `*`; the
    longest matching pattern decides, Allow on a tie; `*` any run, `$` the end."""

    def __init__(self, text):
        groups, agents, rules, in_rules = [], [], [], False
        for raw in text.splitlines():
            line = raw.split("#", 1)[0].strip()
            if ":" not in line:
                continue
            key, value = (p.strip() for p in line.split(":", 1))
            key = key.lower()
            if key == "user-agent":
                if in_rules:
                    groups.append((agents, rules))
                    agents, rules, in_rules = [], [], False
                agents.append(value.lower())
            elif key in ("allow", "disallow"):
                in_rules = True
                if value:
                    rules.append((key == "allow", value))
            elif key == "crawl-delay":
                in_rules = True
        groups.append((agents, rules))
        ours = [r for a, r in groups if any(x != "*" and x in AGENT for x in a)]
        if not ours:
            ours = [r for a, r in groups if "*" in a]
        self.rules = [(allow, self.pattern(p), len(p)) for r in ours for allow, p in r]

    @staticmethod
    def pattern(p):
        anchored = p.endswith("$")
        body = p[:-1] if anchored else p
        regex = ".*".join(re.escape(part) for part in body.split("*"))
        return re.compile(regex + ("$" if anchored else ""))

    def allows(self, path):
        best = None
        for allow, rx, length in self.rules:
            if rx.match(path) and (best is None or length > best[1]
                                   or (length == best[1] and allow)):
                best = (allow, length)
        return best is None or best[0]


# Printable ASCII goes on the wire as it is; anything else is percent-encoded as UTF-8.
WIRE_SAFE = "".join(chr(c) for c in range(0x21, 0x7F))


def to_wire(url):
    """The URL as a request carries it (the frontier hands URLs back as they were put, and a
    page's link may hold characters outside ASCII): as a browser sends it."""
    return urllib.parse.quote(url, safe=WIRE_SAFE)


class Client:
    def __init__(self, args):
        self.args = args
        self.resolve = fetcher.resolver(args.resolve)
        self.robots = {}
        self.lock = threading.Lock()

    def robots_for(self, url):
        """The origin's Robots, or the reason it could not be had (a string)."""
        u = urllib.parse.urlsplit(url)
        origin = f"{u.scheme}://{u.netloc}"
        with self.lock:
            if origin in self.robots:
                return self.robots[origin]
        verdict = self.fetch_robots(origin)
        with self.lock:
            return self.robots.setdefault(origin, verdict)

    def fetch_robots(self, origin):
        where = origin + "/robots.txt"
        for _ in range(5):
            try:
                status, headers, body = self.get(where)
            except Exception as e:
                return f"robots.txt unreachable: {type(e).__name__}"
            if status in (301, 302, 303, 307, 308) and headers.get("location"):
                where = urllib.parse.urljoin(where, headers["location"])
                continue
            if 200 <= status < 300:
                return Robots(body[:500_000].decode("utf-8", "replace"))
            if 400 <= status < 500:
                return Robots("")
            return f"robots.txt unavailable (status {status})"
        return "robots.txt unavailable (too many redirects)"

    def get(self, url):
        """One GET, transient failures retried (Retry-After honoured up to 5 s)."""
        for attempt in range(ATTEMPTS):
            last = attempt == ATTEMPTS - 1
            try:
                status, headers, body = fetcher.fetch(to_wire(url), self.resolve,
                                                      self.args.timeout)
            except Exception:
                if last:
                    raise
                time.sleep(0.1 * 2 ** attempt)
                continue
            if status not in TRANSIENT or last:
                return status, headers, body
            after = headers.get("retry-after", "")
            time.sleep(min(int(after), 5) if after.isdigit() else 0.1 * 2 ** attempt)

    def in_scope(self, url):
        u = urllib.parse.urlsplit(url)
        host = (u.hostname or "").lower()
        return u.scheme in ("http", "https") and (
            not self.args.domain or any(host == d or host.endswith("." + d)
                                        for d in self.args.domain))

    def work(self, url):
        """(record, links) of one URL, or (None, []) when robots.txt disallows it."""
        robots = self.robots_for(url)
        if isinstance(robots, str):
            return {"url": url, "status": None, "error": robots}, []
        u = urllib.parse.urlsplit(url)
        if not robots.allows((u.path or "/") + ("?" + u.query if u.query else "")):
            return None, []
        try:
            status, headers, body = self.get(url)
        except Exception as e:
            return {"url": url, "status": None, "error": f"{type(e).__name__}: {e}"}, []
        record = {"url": url, "status": status, "error": None}
        links = []
        location = headers.get("location")
        if 300 <= status < 400 and status != 304 and location:
            links = [urllib.parse.urljoin(url, location.strip())]
        ctype = headers.get("content-type") or ""
        if status == 200 and ctype.split(";")[0].strip() in ("text/html", "application/xhtml+xml"):
            p = fetcher.Links(url)
            try:
                p.feed(body[:fetcher.MAX_BODY].decode(fetcher.charset(ctype, body), "replace"))
            except Exception:
                pass
            if not p.nofollow:
                links = [urllib.parse.urljoin(p.base, l) for l in p.links]
        links = [l.split("#", 1)[0] for l in links]
        return record, [l for l in links if self.in_scope(l)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grpc", default="127.0.0.1:7071")
    ap.add_argument("--token", default="")
    ap.add_argument("--proto", default=os.path.join(HERE, "..", "crates", "urlfrontier-proto", "proto"))
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--batch", type=int, default=50, help="URLs per queue per GetURLs")
    ap.add_argument("--hold", type=int, default=60, help="seconds a URL is held (delay_requestable)")
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--resolve", action="append", default=[], metavar="NAME=IP")
    ap.add_argument("--domain", action="append", default=[], help="the scope: these domains")
    ap.add_argument("--seed", action="append", default=[], metavar="URL")
    ap.add_argument("--out", default="-", help="records, one JSON line per URL")
    ap.add_argument("--exit-when-idle", action="store_true",
                    help="stop once nothing is queued or held")
    ap.add_argument("--stall", action="store_true",
                    help="take one batch and never report it (to test holds)")
    args = ap.parse_args()
    uf, ufg = generated(os.path.abspath(args.proto))
    import grpc

    stub = ufg.URLFrontierStub(grpc.insecure_channel(args.grpc))
    md = [("authorization", f"Bearer {args.token}")] if args.token else []

    taken = (uf.AckMessage.OK, uf.AckMessage.SKIPPED)
    final = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.INVALID_ARGUMENT,
             grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.NOT_FOUND)

    def put(items):
        """Sends `items` until each is acked OK or SKIPPED: a FAIL (the frontier could not take
        it in time) and whatever a broken stream left unacked are sent again. Acks by ID."""
        acks, pending = {}, list(items)
        for attempt in range(30):
            try:
                for a in stub.PutURLs(iter(pending), metadata=md, timeout=300):
                    acks[a.ID] = a.status
            except grpc.RpcError as e:
                if e.code() in final:
                    raise
            pending = [i for i in pending if acks.get(i.ID) not in taken]
            if not pending:
                return acks
            time.sleep(min(0.1 * 2 ** attempt, 5))
        sys.exit(f"the frontier took {len(pending)} reports in none of 30 attempts")

    def busy():
        """Whether anything is queued or held; a frontier that cannot say is busy."""
        try:
            return stub.GetStats(uf.QueueWithinCrawlParams(), metadata=md, timeout=60).size > 0
        except grpc.RpcError as e:
            if e.code() in final:
                raise
            return True

    def discovered(url):
        return uf.URLItem(discovered=uf.DiscoveredURLItem(info=uf.URLInfo(url=url)), ID="d:" + url)

    if args.seed:
        put([discovered(s) for s in args.seed])
    client = Client(args)
    out = sys.stdout if args.out == "-" else open(args.out, "a")
    with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
        while True:
            try:
                urls = [i.url for i in stub.GetURLs(
                    uf.GetParams(max_urls_per_queue=args.batch, delay_requestable=args.hold),
                    metadata=md, timeout=300)]
            except grpc.RpcError as e:
                if e.code() in final:
                    raise
                time.sleep(0.5)  # UNAVAILABLE: the frontier did not answer in time
                continue
            if args.stall:
                print(f"held {len(urls)}", flush=True)
                while True:
                    time.sleep(3600)
            if not urls:
                if args.exit_when_idle and not busy():
                    break
                time.sleep(0.05)
                continue
            results = list(pool.map(client.work, urls))
            items = []
            for url, (_, links) in zip(urls, results):
                items.extend(discovered(l) for l in links)
                items.append(uf.URLItem(known=uf.KnownURLItem(
                    info=uf.URLInfo(url=url), refetchable_from_date=0), ID=url))
            acks = put(items)
            for url, (record, _) in zip(urls, results):
                if acks.get(url) == uf.AckMessage.OK and record is not None:
                    out.write(json.dumps(record) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
