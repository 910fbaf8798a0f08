#!/usr/bin/env python3
"""An external fetcher for `crawler serve`, in Python's standard library alone.

It takes due URLs with a lease (POST /api/v1/leases), fetches each one itself (no redirect
following: a redirect is reported with its Location, and the frontier decides), extracts the
links of HTML pages, and gives the results back (POST /api/v1/leases/complete). Politeness
and robots.txt are the service's: it only hands out URLs that may be fetched now.

    examples/fetcher.py --api http://127.0.0.1:8700 [--token T] [--threads 8]
                        [--resolve '*.test=127.0.0.1'] [--seed URL] [--exit-when-idle]

Run the service with `crawl.workers = 0` (CRAWLER_CRAWL_WORKERS=0) and only fetchers like
this one crawl; run several, on several machines, and they share the frontier.
"""

import argparse
import codecs
import concurrent.futures
import http.client
import json
import re
import sys
import time
import urllib.parse
from html.parser import HTMLParser

MAX_BODY = 10 * 1024 * 1024


class Links(HTMLParser):
    """The links a page exposes: a/area/link[href], frame/iframe[src] and the first <base>;
    rel="nofollow" links and pages with <meta name="robots" content="nofollow"> are skipped."""

    def __init__(self, page):
        super().__init__(convert_charrefs=True)
        self.base = page
        self.base_set = False
        self.links = []
        self.nofollow = False

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        rel = a.get("rel", "").lower().split()
        if tag == "base" and not self.base_set and a.get("href"):
            self.base = urllib.parse.urljoin(self.base, a["href"].strip())
            self.base_set = True
        elif tag == "meta" and a.get("name", "").lower() == "robots":
            if "nofollow" in a.get("content", "").lower():
                self.nofollow = True
        elif tag in ("a", "area") and a.get("href") and "nofollow" not in rel:
            self.links.append(a["href"].strip())
        elif tag == "link" and a.get("href"):
            self.links.append(a["href"].strip())
        elif tag in ("frame", "iframe") and a.get("src"):
            self.links.append(a["src"].strip())


# WHATWG: labels that name another encoding than Python's codec of the same name.
ENCODING_ALIASES = {"iso-8859-1": "cp1252", "latin1": "cp1252", "ascii": "cp1252",
                    "us-ascii": "cp1252", "x-sjis": "shift_jis"}


def charset(ctype, body):
    """The page's encoding: the Content-Type's charset, else a <meta> one, else UTF-8."""
    label = None
    if ctype and "charset=" in ctype.lower():
        label = ctype.lower().split("charset=", 1)[1].split(";")[0].strip().strip('"\'')
    if not label:
        m = re.search(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", body[:4096], re.I)
        if m:
            label = m.group(1).decode("ascii").lower()
    label = ENCODING_ALIASES.get(label or "utf-8", label or "utf-8")
    try:
        codecs.lookup(label)
    except LookupError:
        label = "utf-8"
    return label


def resolver(rules):
    """`NAME=IP` or `*.suffix=IP` rules, like curl --resolve (the port stays the URL's)."""
    table = [r.split("=", 1) for r in rules]

    def resolve(host):
        for name, ip in table:
            if name == host or (name.startswith("*.") and host.endswith(name[1:])):
                return ip
        return host

    return resolve


def fetch(url, resolve, timeout):
    """One GET: (status, headers, body) or raises."""
    u = urllib.parse.urlsplit(url)
    port = u.port or (443 if u.scheme == "https" else 80)
    conn_cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    conn = conn_cls(resolve(u.hostname), port, timeout=timeout)
    path = u.path or "/"
    if u.query:
        path += "?" + u.query
    host = u.hostname if u.port is None else f"{u.hostname}:{u.port}"
    try:
        conn.request("GET", path, headers={"Host": host, "User-Agent": "crawler-fetcher.py/0.1"})
        resp = conn.getresponse()
        body = resp.read(MAX_BODY + 1)
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body
    finally:
        conn.close()


def work(lease, resolve, timeout):
    url = lease["url"]
    started = time.monotonic()
    result = {"lease_id": lease["lease_id"]}
    try:
        status, headers, body = fetch(url, resolve, timeout)
    except Exception as e:  # a connection error is a result like any other
        result.update(status=None, error=f"{type(e).__name__}: {e}")
        result["fetch_ms"] = int((time.monotonic() - started) * 1000)
        return result
    ctype = headers.get("content-type")
    links = []
    if status == 200 and ctype and ctype.split(";")[0].strip() in ("text/html", "application/xhtml+xml"):
        p = Links(url)
        try:
            p.feed(body[:MAX_BODY].decode(charset(ctype, body), "replace"))
        except Exception:
            pass
        if not p.nofollow:
            links = [urllib.parse.urljoin(p.base, l) for l in p.links]
    retry_after = headers.get("retry-after")
    result.update(
        status=status,
        final_url=headers.get("location"),
        content_type=ctype,
        bytes=min(len(body), MAX_BODY),
        fetch_ms=int((time.monotonic() - started) * 1000),
        links=links,
        retry_after_secs=int(retry_after) if retry_after and retry_after.isdigit() else None,
    )
    if len(body) > MAX_BODY:
        result["error"] = f"body longer than {MAX_BODY} bytes; cut"
    return result


class Api:
    def __init__(self, base, token):
        u = urllib.parse.urlsplit(base)
        self.host, self.port = u.hostname, u.port or 80
        self.headers = {"Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def call(self, method, path, body=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        try:
            data = None if body is None else json.dumps(body).encode()
            conn.request(method, path, body=data, headers=self.headers)
            resp = conn.getresponse()
            payload = json.loads(resp.read() or b"null")
            if resp.status != 200:
                raise RuntimeError(f"{method} {path}: {resp.status} {payload}")
            return payload
        finally:
            conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--api", default="http://127.0.0.1:8700")
    ap.add_argument("--token", default="")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--batch", type=int, default=50, help="URLs leased per call")
    ap.add_argument("--lease-secs", type=int, default=60)
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--resolve", action="append", default=[], metavar="NAME=IP")
    ap.add_argument("--seed", action="append", default=[], metavar="URL")
    ap.add_argument("--exit-when-idle", action="store_true",
                    help="stop once the crawl is idle (nothing queued, nothing in flight)")
    ap.add_argument("--stall", action="store_true",
                    help="take one batch of leases and never return them (to test expiry)")
    args = ap.parse_args()
    api = Api(args.api, args.token)
    resolve = resolver(args.resolve)
    if args.seed:
        answer = api.call("POST", "/api/v1/seeds", {"urls": args.seed})
        for r in answer["results"]:
            print(f"seed {r['url']}: {r['result']}", file=sys.stderr)
    fetched = 0
    with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
        while True:
            leases = api.call("POST", "/api/v1/leases",
                              {"max": args.batch, "lease_secs": args.lease_secs})["leases"]
            if args.stall:
                print(f"leased {len(leases)}", flush=True)
                while True:
                    time.sleep(3600)
            if not leases:
                if args.exit_when_idle and api.call("GET", "/api/v1/status")["state"] == "idle":
                    break
                time.sleep(0.05)
                continue
            results = list(pool.map(lambda l: work(l, resolve, args.timeout), leases))
            api.call("POST", "/api/v1/leases/complete", {"results": results})
            fetched += len(results)
    print(f"fetched {fetched}", file=sys.stderr)


if __name__ == "__main__":
    main()
