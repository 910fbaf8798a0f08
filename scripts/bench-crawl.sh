#!/usr/bin/env bash
# Crawls one local test site with this crawler and with Scrapy (PyPI; a follow-all
# CrawlSpider), at matched concurrency and politeness off, in one run: pages/s, peak RSS,
# CPU seconds, and URLs fetched vs the site's ground truth. Hosts are 127.0.0.x addresses
# (`--addressing ips`) so no peer needs name resolution.
#
#   scripts/bench-crawl.sh [PAGES] [HOSTS]      # default 100000 100
#   SKIP_PEERS=1 scripts/bench-crawl.sh ...     # only ours (state off / bloom / exact)
#   PEERS=spider scripts/bench-crawl.sh ...     # peers to run (default "spider scrapy")
#   PEER_TIMEOUT=600 ...                        # stop spider_cli after this many s (1200)
#
# spider_cli is built from its crates.io source into target/peers (HTTP-only build:
# --no-default-features --features status_code; it has no concurrency flag, so it runs at
# its default), with the one-line fix to its output loop described below. Its fetched URLs are read from the test site's request log, because its
# `crawl -o` lists fewer URLs than it fetches.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pages="${1:-100000}" hosts="${2:-100}" port=18200 conc=64
# LINKS=plain serves every link as an absolute URL (same ground truth): spider_cli misses
# most of the site's other link forms, which would make its pages/s meaningless.
links_flag=(); [[ ${LINKS:-} == plain ]] && links_flag=(--plain-links)
cargo build --release --workspace --bins >/dev/null 2>&1
peers="${PEERS:-spider scrapy}"
[[ -n ${SKIP_PEERS:-} ]] && peers=""
if [[ " $peers " == *" scrapy "* ]]; then
    python3 -c "import scrapy" 2>/dev/null || pip install -q scrapy
fi
spider=target/peers/bin/spider
if [[ " $peers " == *" spider "* && ! -x $spider ]]; then
    # spider_cli 2.53.9 from crates.io with one fix to its output loop: `crawl -o` reads pages
    # from a 32-slot broadcast channel with `while let Ok(..) = rx.recv()`, so the first time
    # the crawl gets 32 pages ahead (at once on a local server) recv() says Lagged, the loop
    # ends, main returns and the crawl is dropped mid-way with exit code 0. The fix skips
    # the lag (lost lines do not matter: fetched URLs come from the request log).
    version=2.53.9
    src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/spider_cli-$version 2>/dev/null | head -1 || true)
    if [[ -z $src ]]; then
        cargo info "spider_cli@$version" >/dev/null   # downloads and unpacks the crate
        src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/spider_cli-$version | head -1)
    fi
    rm -rf target/peers/spider_cli && mkdir -p target/peers && cp -r "$src" target/peers/spider_cli
    sed -i 's/while let Ok(res) = rx2.recv().await {/while let Ok(res) = loop { match rx2.recv().await { Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue, other => break other } } {/' \
        target/peers/spider_cli/src/main.rs
    grep -q 'RecvError::Lagged' target/peers/spider_cli/src/main.rs
    printf '\n[workspace]\n' >>target/peers/spider_cli/Cargo.toml   # not part of ours
    cargo install --path target/peers/spider_cli --locked --no-default-features --features status_code --root target/peers
fi
for tool in bc time; do   # Debian packages the measurements use
    command -v "$tool" >/dev/null || [[ -x /usr/bin/$tool ]] || { apt-get update -qq && apt-get install -y -qq "$tool"; }
done
work="$(mktemp -d)"
trap 'kill ${server:-} 2>/dev/null || true; rm -rf "$work"' EXIT
start_site() { # [extra testsite flags]
    target/release/testsite --pages "$pages" --hosts "$hosts" --addressing ips --port $port --threads 1 "${links_flag[@]}" "$@" 2>/dev/null &
    server=$!
    for _ in $(seq 1 120); do   # until every listener is bound
        target/release/testsite --probe --port $port >/dev/null 2>&1 && break
        sleep 0.5
    done
}
# The peers read no sitemaps, so neither does the crawler here: the same URL set for all.
target/release/testsite --pages "$pages" --hosts "$hosts" --addressing ips --port $port --ground-truth \
    --no-sitemaps | grep -v '^#' | cut -f1 | sort >"$work/truth"
seed="http://127.0.0.1:$port/"
run_timed() { # name, command... (wall s, peak RSS KiB, user s, system s)
    local name=$1; shift
    /usr/bin/time -f "%e %M %U %S" -o "$work/$name.time" "$@" >/dev/null 2>"$work/$name.err" || true
}
report() { # name: one TSV row from the timing and the URL list
    local name=$1 wall rss user sys
    # The last line: a peer stopped by `timeout` adds a "terminated by signal" line first.
    read -r wall rss user sys < <(tail -n 1 "$work/$name.time")
    local fetched found
    fetched=$(wc -l <"$work/$name.urls")
    found=$(sort -u "$work/$name.urls" | comm -12 - "$work/truth" | wc -l)
    printf '%s\t%d\t%d\t%.1f\t%.0f\t%.1f\t%.1f\t%d/%d\n' "$name" "$pages" "$hosts" "$wall" \
        "$(echo "$fetched / $wall" | bc -l)" "$(echo "$rss / 1024" | bc -l)" "$(echo "$user + $sys" | bc -l)" \
        "$found" "$(wc -l <"$work/truth")"
}
printf 'crawler\tpages\thosts\tseconds\tpages_per_s\tpeak_rss_mb\tcpu_s\tground_truth_found\n'

# Ours three ways: the durable state off, on (dedup = "bloom", the default), and in exact mode.
run_ours() { # name, persist, dedup
    local name=$1
    start_site
    cat >"$work/$name.toml" <<TOML
[crawl]
concurrency = $conc
progress_secs = 3600
persist = $2
sitemaps = false
[politeness]
delay_ms = 0
max_per_host = $conc
[frontier]
scope = "any"
dedup = "$3"
# The test web lives on 127.0.0.x: past the SSRF guard.
[fetch]
allow_private = true
TOML
    run_timed "$name" target/release/crawler crawl --config "$work/$name.toml" --seed "$seed" --out "$work/$name-out"
    python3 -c "import json; [print(json.loads(l)['url']) for l in open('$work/$name-out/pages.jsonl')]" >"$work/$name.urls"
    report "$name"
    kill $server; wait $server 2>/dev/null || true
}
run_ours ours-memory false bloom
run_ours ours true bloom
run_ours ours-exact true exact

if [[ " $peers " == *" spider "* ]]; then
    start_site --request-log "$work/spider.log"
    # Bounded: spider_cli slows down as its crawl grows (see BENCHMARKS.md); the URLs it
    # fetched by then are still counted.
    run_timed spider timeout -s INT "${PEER_TIMEOUT:-1200}" "$spider" -r -u "$seed" crawl -o
    kill $server; wait $server 2>/dev/null || true
    python3 - "$work/spider.log" "$port" >"$work/spider.urls" <<'PY'
import json, re, sys
# As requested, but with percent-encoded unreserved characters decoded (`%70` → `p`), as
# the ground truth is written: spider_cli does not normalise the link forms it finds.
unreserved = lambda m: chr(int(m[1], 16)) if re.fullmatch(r"[A-Za-z0-9._~-]", chr(int(m[1], 16))) else m[0].upper()
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["path"] != "/robots.txt":
        path = re.sub(r"%([0-9A-Fa-f]{2})", unreserved, r["path"])
        print(f"http://{r['host']}:{sys.argv[2]}{path}")
PY
    report spider
fi
[[ " $peers " == *" scrapy "* ]] || exit 0

start_site
OUT="$work/scrapy.urls" run_timed scrapy scrapy runspider scripts/peers/scrapy_follow_all.py -a seed="$seed" \
    -s CONCURRENT_REQUESTS=$conc
report scrapy
kill $server; wait $server 2>/dev/null || true
