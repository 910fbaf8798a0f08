#!/usr/bin/env bash
# What a kill -9 costs the resumed crawl, WARC off and on: a crawl of the local test site is
# killed after KILL_SECS, then resumed to its end. Reports the tail reconciled at the resume
# (lines kept, read back from the archive, removed), how long the read-back took, and how
# many pages the site served more than once over both runs (from its request log).
#
#   scripts/bench-resume.sh [pages] [hosts] [kill_secs] [checkpoint_ms]
set -euo pipefail
cd "$(dirname "$0")/.."
pages=${1:-100000}
hosts=${2:-4}
kill_secs=${3:-5.5}
checkpoint_ms=${4:-3000}
port=${PORT:-18779}
cargo build --release --workspace --bins >/dev/null 2>&1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'warc\tlines_at_kill\tkept\tread_back\tremoved\tread_back_s\tresume_s\tserved_twice\n'
for warc in false true; do
    target/release/testsite --pages "$pages" --hosts "$hosts" --addressing ips --port "$port" \
        --threads 1 --request-log "$work/requests" 2>/dev/null &
    server=$!
    for _ in $(seq 1 120); do
        target/release/testsite --probe --port "$port" >/dev/null 2>&1 && break
        sleep 0.5
    done
    cat >"$work/c.toml" <<TOML
[crawl]
concurrency = 64
progress_secs = 3600
checkpoint_ms = $checkpoint_ms
[politeness]
delay_ms = 0
max_per_host = 64
[frontier]
scope = "any"
[fetch]
allow_private = true
[output]
warc = $warc
TOML
    rm -rf "$work/out"
    # exec: the process killed is the crawler itself, not a shell around it.
    run() { RUST_LOG=info exec target/release/crawler crawl --config "$work/c.toml" \
        --seed "http://127.0.0.1:$port/" --out "$work/out" >/dev/null 2>>"$work/log"; }
    : >"$work/log"
    (run) &
    crawler=$!
    sleep "$kill_secs"
    kill -9 "$crawler"
    wait "$crawler" 2>/dev/null || true
    at_kill=$(grep -c '' "$work/out/pages.jsonl")
    : >"$work/log"
    start=$(date +%s.%N)
    (run)
    end=$(date +%s.%N)
    kill "$server"
    wait "$server" 2>/dev/null || true
    python3 - "$work" "$warc" "$at_kill" "$start" "$end" <<'EOF'
import collections, datetime, json, re, sys
work, warc, at_kill, start, end = sys.argv[1:]
state = json.load(open(f"{work}/out/stats.json"))["state"]
tail = state.get("output_tail", {})
stamp = lambda l: datetime.datetime.fromisoformat(re.sub(r"\x1b\[[0-9;]*m", "", l).split()[0].replace("Z", "+00:00"))
log = open(f"{work}/log").read().splitlines()
restored = [stamp(l) for l in log if "resuming the crawl from its state" in l]
reconciled = [stamp(l) for l in log if "output after the last checkpoint" in l]
secs = (reconciled[0] - restored[0]).total_seconds() if restored and reconciled else 0.0
served = collections.Counter()
for line in open(f"{work}/requests"):
    r = json.loads(line)
    if r["path"] != "/robots.txt" and "sitemap" not in r["path"] and r["status"] < 500 and r["status"] != 429:
        served[(r["host"], r["path"])] += 1
twice = sum(n - 1 for n in served.values())
print(f"{warc}\t{at_kill}\t{tail.get('kept', 0)}\t{tail.get('replayed', 0)}\t{tail.get('dropped', 0)}\t{secs:.2f}\t{float(end) - float(start):.1f}\t{twice}")
EOF
    rm -f "$work/requests"
done
