#!/usr/bin/env bash
# Freshness of the recrawl schedules (`[recrawl] policy`) on the changing test site, in one
# run: each policy crawls its own fresh copy of the same site (same seed, same rates) for the
# same time at the same politeness, and the site's request log says exactly how fresh each
# kept it (`testsite --freshness`: the time- and page-averaged share of pages whose last
# fetched copy is the current version, and their mean age), with the fetches made, the 304
# share and the body bytes read.
#
#   scripts/bench-recrawl.sh [SECS]       # default 240 s per policy and regime
#   PAGES=300 CHANGING=20,0.05,5 ...      # the site: pages; a "day" of 20 s, 0.05 to 5
#                                         # changes a day per page (log-uniform)
#   REGIMES="625 156" ...                 # politeness delay_ms per host: capacity about half
#                                         # and twice the site's total change rate
#   POLICIES="fixed adaptive" ...
#   PROFILE=debug ...                     # the binaries (release by default); a run is
#                                         # bound by politeness, not CPU
#
# The fixed interval is N/C (URLs / fetches a second): a uniform sweep at capacity, which
# Cho & Garcia-Molina (2003) found beats proportional refresh on average freshness; adaptive
# starts from the same interval, within [1 s, 600 s]. The window is the second half of each
# run (after the first sweep).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
secs="${1:-240}"
pages="${PAGES:-300}" changing="${CHANGING:-20,0.05,5}" hosts=5 port=18300
profile="${PROFILE:-release}"
if [[ $profile == release ]]; then
    cargo build --release --bins >/dev/null 2>&1
else
    cargo build --bins >/dev/null 2>&1
fi
bin="target/$profile"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
site_args=(--pages "$pages" --changing "$changing" --hosts "$hosts" --port "$port")
# URLs on the site (numeric pages and the rest): what a sweep covers.
urls="$("$bin/testsite" "${site_args[@]}" --ground-truth | grep -vc '^#')"
printf '%-8s %-9s %6s %8s %7s %7s %9s %10s\n' delay_ms policy fetches fetches/s fresh "age s" "304 %" "body MB"
for delay in ${REGIMES:-625 156}; do
    capacity=$(( hosts * 1000 / delay ))
    interval=$(( urls / capacity )); (( interval < 1 )) && interval=1
    for policy in ${POLICIES:-fixed adaptive}; do
        dir="$work/$delay-$policy"; mkdir -p "$dir"
        "$bin/testsite" "${site_args[@]}" --request-log "$dir/log" 2>/dev/null &
        site=$!
        until "$bin/testsite" --port "$port" --probe 2>/dev/null; do sleep 0.1; done
        cat > "$dir/c.toml" <<EOF
[crawl]
concurrency = 16
[politeness]
delay_ms = $delay
max_per_host = 1
[frontier]
scope = "domains"
domains = ["test"]
[recrawl]
policy = "$policy"
interval_secs = $interval
min_interval_secs = 1
max_interval_secs = 600
EOF
        "$bin/crawler" crawl --config "$dir/c.toml" --out "$dir/out" --seed "http://h0.test:$port/" \
            --resolve '*.test=127.0.0.1' --max-duration "$secs" >/dev/null 2>&1 || true
        kill "$site"; wait "$site" 2>/dev/null || true
        f="$("$bin/testsite" "${site_args[@]}" --freshness "$dir/log" --window "$((secs / 2)),$secs")"
        python3 - "$f" "$dir/out/pages.jsonl" "$delay" "$policy" "$secs" <<'PY'
import json, sys
f = json.loads(sys.argv[1])
recs = [json.loads(l) for l in open(sys.argv[2])]
body = sum(r["bytes"] for r in recs)
nm = sum(1 for r in recs if r["status"] == 304)
print(f"{sys.argv[3]:<8} {sys.argv[4]:<9} {len(recs):>6} {len(recs) / float(sys.argv[5]):>8.1f} "
      f"{f['fresh']:>7.3f} {f['mean_age_secs']:>7.1f} {100 * nm / max(1, len(recs)):>9.1f} "
      f"{body / 1e6:>10.2f}")
PY
    done
done
echo "($pages pages, --changing $changing, $urls URLs, $secs s per run; fresh and age over [$((secs / 2)), $secs] s)"
