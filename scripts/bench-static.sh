#!/usr/bin/env bash
# The crawl against the limit: a static HTML documentation site (Debian's rust-doc, the Rust
# standard library's documentation) served by nginx on a private loopback port, crawled with
# the default settings (politeness off for the one host, N fetches in flight), then the same
# URL list fetched by `curl -Z --parallel-max N -K urls`, in one run.
#
#   scripts/bench-static.sh [N] [RUNS]          # default 64 fetches in flight, 2 runs each
#   DOCROOT=/some/html START=index.html ...     # another static site (default: rust-doc)
#
# Installs nginx and rust-doc from Debian when missing. A first crawl lists the URLs (and
# warms the page cache); then crawl and curl alternate. Prints one TSV row per run: tool,
# URLs, seconds, URLs/s, peak RSS (MB, the crawler's stats.json), and the ratio of the mean
# crawl time to the mean curl time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
n="${1:-64}" runs="${2:-2}" port=18720
docroot="${DOCROOT:-/usr/share/doc/rust-doc/html}"
start="${START:-std/index.html}"
source scripts/lib/nginx.sh
nginx_need $([[ -n ${DOCROOT:-} || -d $docroot ]] || echo rust-doc)
cargo build --release -p crawler >/dev/null 2>&1
crawler="${BIN:-target/release/crawler}"

work="$(mktemp -d)"
nginx_start "$work" "$port" "$docroot"
server=$nginx_pid
trap 'kill ${server:-} 2>/dev/null || true; rm -rf "$work"' EXIT

export CRAWLER_CRAWL_CONCURRENCY=$n CRAWLER_POLITENESS_DELAY_MS=0 CRAWLER_POLITENESS_MAX_PER_HOST=$n
crawl() {
    rm -rf "$work/out"
    local t0 t1
    t0=$(date +%s.%N)
    "$crawler" crawl --fresh --seed "http://127.0.0.1:$port/$start" --out "$work/out" \
        >/dev/null 2>"$work/crawl.log"
    t1=$(date +%s.%N)
    echo "$t0 $t1"
}
crawl >/dev/null
python3 - "$work/out/pages.jsonl" >"$work/urls" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("status") is not None and not r.get("sitemap"):
        print('url = "%s"\noutput = "/dev/null"' % r["url"])
PY
urls=$(grep -c '^url' "$work/urls")
bytes=$(python3 -c "import json,sys; print(sum(json.loads(l).get('bytes',0) for l in open(sys.argv[1])))" "$work/out/pages.jsonl")
echo "# $urls URLs, $((bytes / 1000000)) MB, N = $n, docroot $docroot" >&2

printf 'tool\turls\tseconds\turls_per_s\tpeak_rss_mb\n'
sum_crawl=0 sum_curl=0
for _ in $(seq "$runs"); do
    read -r t0 t1 < <(crawl)
    s=$(echo "$t1 - $t0" | bc -l)
    got=$(wc -l <"$work/out/pages.jsonl")
    rss=$(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['peak_rss_bytes']/1e6,1))" "$work/out/stats.json")
    printf 'crawler\t%s\t%.2f\t%.0f\t%s\n' "$got" "$s" "$(echo "$got / $s" | bc -l)" "$rss"
    sum_crawl=$(echo "$sum_crawl + $s" | bc -l)
    t0=$(date +%s.%N)
    curl -s --no-progress-meter -Z --parallel-max "$n" -K "$work/urls" 2>/dev/null
    t1=$(date +%s.%N)
    s=$(echo "$t1 - $t0" | bc -l)
    printf 'curl -Z\t%s\t%.2f\t%.0f\t\n' "$urls" "$s" "$(echo "$urls / $s" | bc -l)"
    sum_curl=$(echo "$sum_curl + $s" | bc -l)
done
printf 'crawl / curl (mean seconds)\t%.2f\n' "$(echo "$sum_crawl / $sum_curl" | bc -l)"
