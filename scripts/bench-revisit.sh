#!/usr/bin/env bash
# A second pass over an unchanged static site (Debian's rust-doc served by nginx, ETag and
# Last-Modified on, as nginx sends them by default): a `fixed` recrawl schedule brings every
# URL back after INTERVAL seconds, and the second pass's conditional GETs should read almost no
# body. The first run stops after 0.8 INTERVAL (the first pass must fit); the resumed run
# starts once every URL is due, so the second pass goes at the crawl's pace, not the schedule's.
# Prints per pass: records, 304s, unchanged, body bytes, and pages/s (first to last record).
#
#   scripts/bench-revisit.sh [INTERVAL]        # default 60 s
#   N=64 PROFILE=debug DOCROOT=… START=…      # fetches in flight; the binaries; the site
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
interval="${1:-60}" n="${N:-64}" port=18722
docroot="${DOCROOT:-/usr/share/doc/rust-doc/html}"
start="${START:-std/index.html}"
source scripts/lib/nginx.sh
nginx_need $([[ -n ${DOCROOT:-} || -d $docroot ]] || echo rust-doc)
profile="${PROFILE:-release}"
if [[ $profile == release ]]; then
    cargo build --release -p crawler >/dev/null 2>&1
else
    cargo build -p crawler >/dev/null 2>&1
fi
work="$(mktemp -d)"
nginx_start "$work" "$port" "$docroot"
server=$nginx_pid
trap 'kill ${server:-} 2>/dev/null || true; [[ -n ${KEEP:-} ]] && echo "kept $work" || rm -rf "$work"' EXIT
cat >"$work/c.toml" <<EOF
[crawl]
concurrency = $n
[politeness]
delay_ms = 0
max_per_host = $n
[recrawl]
policy = "fixed"
interval_secs = $interval
min_interval_secs = 1
jitter = 0.05
EOF
run() {
    "target/$profile/crawler" crawl --config "$work/c.toml" --seed "http://127.0.0.1:$port/$start" \
        --out "$work/out" --max-duration "$1" >/dev/null 2>>"$work/crawl.log" || true
}
# The first pass, stopped before any URL is due again (the interval less its 5% jitter).
run "$((interval * 4 / 5))"
# Until its last URL is due (fetched at most 0.8 INTERVAL in, due an interval and its jitter
# later), then a run shorter than the interval: the second pass, no third.
sleep "$((interval + interval / 10 + 2))"
run "$((interval * 2 / 3))"
python3 - "$work/out/pages.jsonl" <<'PY'
import json, sys
from datetime import datetime
recs = [json.loads(l) for l in open(sys.argv[1])]
def t(r):
    return datetime.strptime(r["fetched_at"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
print("pass\trecords\t304s\tunchanged\tbody MB\tpages/s")
for name, rs in (("first", [r for r in recs if not r.get("refetch")]),
                 ("second", [r for r in recs if r.get("refetch")])):
    if not rs:
        print(f"{name}\t0"); continue
    secs = max(t(r) for r in rs) - min(t(r) for r in rs)
    body = sum(r["bytes"] for r in rs)
    print(f"{name}\t{len(rs)}\t{sum(r['status'] == 304 for r in rs)}\t"
          f"{sum(r.get('changed') is False for r in rs)}\t{body / 1e6:.2f}\t{len(rs) / max(secs, 1e-3):.0f}")
PY
