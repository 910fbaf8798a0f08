#!/usr/bin/env python3
"""Benchmarks of `crawler serve` (BENCHMARKS.md §6), run by scripts/bench-service.sh:

  serve-vs-crawl  pages/s of `crawl` and of `serve` with a dashboard's load (status, hosts and
                  /metrics every second, an open event stream) on the same test site, alternating
  hot-paths       GET /metrics and GET /api/v1/status latency with 100,000 hosts known
  leases          external fetchers' lease + complete of 1,000 URLs per call, URLs/s

Everything runs on loopback; hosts of the synthetic seeds (*.bench.invalid) are never
contacted (workers = 0, robots.txt off).
"""

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.environ.get("CRAWLER", "target/release/crawler")
TESTSITE = os.environ.get("TESTSITE", "target/release/testsite")


class Conn:
    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        self.c.request(method, path, body=data, headers={"Content-Type": "application/json"})
        r = self.c.getresponse()
        raw = r.read()
        if r.status != 200:
            raise RuntimeError(f"{method} {path}: {r.status} {raw[:200]}")
        return raw


def record_span(path):
    """Records in `path`, and seconds from the first record's fetched_at to the last's."""
    from datetime import datetime
    stamps = []
    with open(path) as f:
        for line in f:
            t = json.loads(line)["fetched_at"].replace("Z", "+00:00")
            stamps.append(datetime.fromisoformat(t))
    return len(stamps), (max(stamps) - min(stamps)).total_seconds()


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_serve(work, env_extra, args):
    port = free_port()
    env = dict(os.environ, RUST_LOG="warn", **env_extra)
    p = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{port}", "--out", f"{work}/out",
                          "--config", f"{work}/c.toml", *args],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if "http://" in line:
            break
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    return p, port


def stop(p):
    p.terminate()
    p.wait()


def write_config(work, extra=""):
    with open(f"{work}/c.toml", "w") as f:
        f.write("[crawl]\nconcurrency = 64\nprogress_secs = 3600\n"
                "[politeness]\ndelay_ms = 0\nmax_per_host = 64\n"
                "[frontier]\nscope = \"any\"\n"
                # The test web lives on 127.0.0.x: past the SSRF guard.
                "[fetch]\nallow_private = true\n" + extra)


def serve_vs_crawl(pages, hosts, runs):
    site_port = free_port()
    # Wall: from the process start to the end (crawl: exit; serve: idle seen by the status
    # poll, once a second). Span: first to last record's fetched_at, the crawl's own pace.
    print("run\tvariant\tpages\twall_s\tpages_per_wall_s\tspan_s\tpages_per_span_s")
    for run in range(1, runs + 1):
        for variant in ("crawl", "serve"):
            site = subprocess.Popen([TESTSITE, "--pages", str(pages), "--hosts", str(hosts),
                                     "--addressing", "ips", "--port", str(site_port),
                                     "--threads", "1"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(120):
                if subprocess.run([TESTSITE, "--probe", "--port", str(site_port)],
                                  capture_output=True).returncode == 0:
                    break
                time.sleep(0.5)
            with tempfile.TemporaryDirectory() as work:
                write_config(work)
                seed = f"http://127.0.0.1:{site_port}/"
                if variant == "crawl":
                    t0 = time.monotonic()
                    subprocess.run([BIN, "crawl", "--config", f"{work}/c.toml", "--seed", seed,
                                    "--out", f"{work}/out"], env=dict(os.environ, RUST_LOG="warn"),
                                   check=True, capture_output=True)
                    secs = time.monotonic() - t0
                else:
                    t0 = time.monotonic()
                    p, port = start_serve(work, {}, ["--seed", seed])
                    # A dashboard's load (its event stream of errors; status and hosts every
                    # second) and a Prometheus scrape every second.
                    load = os.environ.get("LOAD", "1") == "1"
                    sse = subprocess.Popen(["curl", "-sN", f"http://127.0.0.1:{port}/api/v1/events?records=errors"]
                                           if load else ["true"], stdout=subprocess.DEVNULL)
                    c = Conn(port)
                    last = 0.0
                    while True:
                        now = time.monotonic()
                        if now - last >= 1.0 and load:
                            last = now
                            c.call("GET", "/api/v1/hosts?limit=50")
                            c.call("GET", "/metrics")
                        s = json.loads(c.call("GET", "/api/v1/status"))
                        if s["state"] == "idle" and s["pages"] > 0:
                            secs = time.monotonic() - t0
                            break
                        time.sleep(1.0)
                    sse.kill()
                    stop(p)
                n, span = record_span(f"{work}/out/pages.jsonl")
            site.terminate()
            site.wait()
            print(f"{run}\t{variant}\t{n}\t{secs:.2f}\t{n / secs:.0f}\t{span:.2f}\t{n / span:.0f}",
                  flush=True)


def hot_paths(hosts):
    with tempfile.TemporaryDirectory() as work:
        write_config(work)
        p, port = start_serve(work, {"CRAWLER_CRAWL_WORKERS": "0",
                                     "CRAWLER_CRAWL_RESPECT_ROBOTS": "false"}, [])
        c = Conn(port)
        for start in range(0, hosts, 10000):
            urls = [f"http://h{i}.bench.invalid/" for i in range(start, min(hosts, start + 10000))]
            c.call("POST", "/api/v1/seeds", {"urls": urls})
        known = json.loads(c.call("GET", "/api/v1/status"))["hosts"]
        print(f"hosts known: {known}")
        print("path\trequests\tmedian_ms\tp99_ms\tmax_ms")
        for path in ("/metrics", "/api/v1/status", "/api/v1/hosts?limit=100"):
            times = []
            for _ in range(200):
                t0 = time.perf_counter()
                c.call("GET", path)
                times.append((time.perf_counter() - t0) * 1000)
            times.sort()
            print(f"{path}\t{len(times)}\t{statistics.median(times):.2f}\t"
                  f"{times[int(len(times) * 0.99) - 1]:.2f}\t{times[-1]:.2f}", flush=True)
        stop(p)


def leases(urls, per_call):
    with tempfile.TemporaryDirectory() as work:
        write_config(work, "[service]\nmax_urls_per_call = 10000\n")
        p, port = start_serve(work, {"CRAWLER_CRAWL_WORKERS": "0",
                                     "CRAWLER_CRAWL_RESPECT_ROBOTS": "false"}, [])
        c = Conn(port)
        for start in range(0, urls, 10000):
            batch = [f"http://h{i % 1000}.bench.invalid/p{i}" for i in range(start, min(urls, start + 10000))]
            c.call("POST", "/api/v1/seeds", {"urls": batch})
        done = 0
        t0 = time.perf_counter()
        lease_s = complete_s = 0.0
        while done < urls:
            a = time.perf_counter()
            got = json.loads(c.call("POST", "/api/v1/leases", {"max": per_call}))["leases"]
            b = time.perf_counter()
            if not got:
                time.sleep(0.01)
                continue
            results = [{"lease_id": l["lease_id"], "status": 200, "content_type": "text/html",
                        "bytes": 1000, "fetch_ms": 1} for l in got]
            c.call("POST", "/api/v1/leases/complete", {"results": results})
            d = time.perf_counter()
            lease_s += b - a
            complete_s += d - b
            done += len(got)
        secs = time.perf_counter() - t0
        stop(p)
        n = sum(1 for _ in open(f"{work}/out/pages.jsonl"))
        print(f"URLs\tper_call\tseconds\tURLs_per_s\tlease_s\tcomplete_s\trecords")
        print(f"{done}\t{per_call}\t{secs:.2f}\t{done / secs:.0f}\t{lease_s:.2f}\t{complete_s:.2f}\t{n}")


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "serve-vs-crawl":
        serve_vs_crawl(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    elif what == "hot-paths":
        hot_paths(int(sys.argv[2]))
    elif what == "leases":
        leases(int(sys.argv[2]), int(sys.argv[3]))
