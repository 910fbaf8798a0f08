#!/usr/bin/env bash
# The memory governor's table (crawl.max_memory_mb): a site of big pages crawled ungoverned,
# then under budgets of PERCENTS of that crawl's peak RSS, one run each, on one machine in one
# run. Many 8 MB pages fetched at once are what makes memory peak.
#
#   scripts/bench-memory.sh [PAGES] [BIG] [PERCENTS]     # default 2000 200 "80 60 40"
#
# BIN: the crawler (default target/release/crawler); SITE: the test site (default
# target/release/testsite). Prints one TSV row per run: budget (MB, 0 = ungoverned), peak RSS
# (MB), seconds, pages/s, seconds throttled, records, and the ground truth's URL count.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pages="${1:-2000}" big="${2:-200}" percents="${3:-80 60 40}" port=18530
bin=${BIN:-target/release/crawler} site=${SITE:-target/release/testsite}
if [[ -z ${BIN:-} || -z ${SITE:-} ]]; then cargo build --release --workspace --bins >/dev/null 2>&1; fi
work="$(mktemp -d)"
trap 'kill ${server:-} 2>/dev/null || true; rm -rf "$work"' EXIT
"$site" --pages "$pages" --hosts 16 --big-pages "$big" --port $port --threads 1 2>/dev/null &
server=$!
until "$site" --probe --port $port; do sleep 0.2; done
truth=$("$site" --pages "$pages" --hosts 16 --big-pages "$big" --port $port --ground-truth | grep -vc '^#')
crawl() { # budget in MB
    cat >"$work/c.toml" <<TOML
[crawl]
concurrency = 128
progress_secs = 3600
persist = false
max_memory_mb = $1
[fetch]
resolve = { "*.test" = "127.0.0.1" }
allow_private = true
[politeness]
delay_ms = 0
max_per_host = 16
[frontier]
scope = "domains"
domains = ["test"]
TOML
    rm -rf "$work/out"
    local start end
    start=$(date +%s.%N)
    "$bin" crawl --config "$work/c.toml" --seed "http://h0.test:$port/" --out "$work/out" 2>/dev/null
    end=$(date +%s.%N)
    python3 - "$work/out" "$1" "$start" "$end" "$truth" <<'PY'
import json, sys
out, budget, start, end, truth = sys.argv[1:]
s = json.load(open(out + "/stats.json"))
secs = float(end) - float(start)
print("\t".join(str(x) for x in [budget, s["peak_rss_bytes"] >> 20, f"{secs:.1f}",
      f"{s['pages'] / secs:.0f}", f"{s.get('memory_throttled_secs', 0):.1f}", s["pages"], truth]))
PY
}
printf 'budget_mb\tpeak_rss_mb\tseconds\tpages_per_s\tthrottled_s\trecords\tground_truth\n'
row=$(crawl 0)
echo "$row"
peak=$(cut -f2 <<<"$row")
for p in $percents; do
    crawl $((peak * p / 100))
done
