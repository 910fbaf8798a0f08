#!/usr/bin/env bash
# A long single crawl of the local test site (default 10^7 pages on 200 hosts), politeness
# off, concurrency 64, the durable state on (the default): samples pages done, pages/s over the
# last interval, RSS and the state's size every INTERVAL seconds, to show whether the rate is
# sustained and memory flat. Writes the samples as TSV on stdout; the crawl's own files stay in
# a temporary directory that is deleted at the end.
#
#   scripts/bench-long.sh [PAGES] [HOSTS] [INTERVAL]     # default 10000000 200 60 (HOSTS ≤ 254)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pages="${1:-10000000}" hosts="${2:-200}" every="${3:-60}" port=18300 conc=64
cargo build --release --locked -p crawler -p testsite >/dev/null 2>&1
work="$(mktemp -d)"
trap 'kill ${server:-} ${crawl:-} 2>/dev/null || true; rm -rf "$work"' EXIT
target/release/testsite --pages "$pages" --hosts "$hosts" --addressing ips --port $port --threads 1 2>/dev/null &
server=$!
# Every listener is bound before the server answers; a crawl started earlier would find
# robots.txt unreachable and, as RFC 9309 says, treat the host as disallowed.
up=""
for _ in $(seq 1 120); do
    target/release/testsite --probe --port $port >/dev/null 2>&1 && { up=1; break; }
    kill -0 $server 2>/dev/null || break
    sleep 0.5
done
[[ -n $up ]] || { echo "the test site did not come up" >&2; exit 1; }
cat >"$work/crawler.toml" <<TOML
[crawl]
concurrency = $conc
progress_secs = 3600
status_secs = 5
[politeness]
delay_ms = 0
max_per_host = $conc
[frontier]
scope = "any"
expected_urls = $pages
# The test web lives on 127.0.0.x: past the SSRF guard.
[fetch]
allow_private = true
TOML
start=$(date +%s.%N)
target/release/crawler crawl --config "$work/crawler.toml" --seed "http://127.0.0.1:$port/" \
    --out "$work/out" 2>"$work/crawl.err" &
crawl=$!
rss() { awk '/^VmRSS/ {print int($2/1024)}' "/proc/$1/status" 2>/dev/null || echo 0; }
lines() { [[ -f $work/out/pages.jsonl ]] && wc -l <"$work/out/pages.jsonl" || echo 0; }
printf 'elapsed_s\tpages\tpages_per_s_interval\tpages_per_s_overall\tcrawler_rss_mb\ttestsite_rss_mb\tstate_mb\n'
last=0 last_t=$start
while kill -0 $crawl 2>/dev/null; do
    sleep "$every"
    now=$(date +%s.%N)
    n=$(lines)
    state=$(du -sm "$work/out/state" 2>/dev/null | cut -f1 || echo 0)
    printf '%.0f\t%d\t%.0f\t%.0f\t%d\t%d\t%s\n' "$(echo "$now - $start" | bc -l)" "$n" \
        "$(echo "($n - $last) / ($now - $last_t)" | bc -l)" "$(echo "$n / ($now - $start)" | bc -l)" \
        "$(rss $crawl)" "$(rss $server)" "$state"
    last=$n last_t=$now
done
wait $crawl || { echo "crawl failed:"; tail -5 "$work/crawl.err"; exit 1; }
end=$(date +%s.%N)
n=$(lines)
printf '# done: %d pages in %.0f s = %.0f pages/s; stats: %s\n' "$n" "$(echo "$end - $start" | bc -l)" \
    "$(echo "$n / ($end - $start)" | bc -l)" \
    "$(python3 -c "import json; s=json.load(open('$work/out/stats.json')); print(s['stopped_by'], s['pages'], s['frontier']['filter_fpp'])")"
