#!/usr/bin/env bash
# A/B of two variants of this crawler on the same local test site, runs alternating
# (A B A B …) so the machine's drift hits both alike. A variant is a list of environment
# assignments given to the crawler (e.g. a lever switched by a variable); "" is the default.
#
#   scripts/ab-crawl.sh "VAR=1" "" [RUNS] [PAGES] [HOSTS]     # default 3 100000 100
#
# BIN_A / BIN_B: other crawler binaries to compare (a build with another allocator, say);
# both default to target/release/crawler.
# PIN=1: the test site runs on CPU 1 and the crawler on CPU 0 (taskset), so the crawler's
# pages/s is what one core of it does, not what is left of two cores shared with the site.
#
# Prints one TSV row per run: variant, pages, seconds, pages/s, peak RSS (MB), CPU s, and the
# test site's CPU s during the crawl (read from /proc: sharing the cores, what the site needs
# is part of what the crawl waits for).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
a=$1 b=$2 runs="${3:-3}" pages="${4:-100000}" hosts="${5:-100}" port=18500
cargo build --release --workspace --bins >/dev/null 2>&1
work="$(mktemp -d)"
trap 'kill ${server:-} 2>/dev/null || true; rm -rf "$work"' EXIT
cat >"$work/c.toml" <<TOML
[crawl]
concurrency = 64
progress_secs = 3600
[politeness]
delay_ms = 0
max_per_host = 64
[frontier]
scope = "any"
TOML
site_cpu="" crawl_cpu=""
if [[ ${PIN:-} == 1 ]]; then site_cpu="taskset -c 1" crawl_cpu="taskset -c 0"; fi
tick=$(getconf CLK_TCK)
site_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
printf 'variant\tpages\tseconds\tpages_per_s\tpeak_rss_mb\tcpu_s\tsite_cpu_s\n'
for i in $(seq 1 "$runs"); do
    for v in A B; do
        if [[ $v == A ]]; then vars=$a bin=${BIN_A:-target/release/crawler}; else vars=$b bin=${BIN_B:-target/release/crawler}; fi
        $site_cpu target/release/testsite --pages "$pages" --hosts "$hosts" --addressing ips --port $port --threads 1 2>/dev/null &
        server=$!
        for _ in $(seq 1 120); do
            target/release/testsite --probe --port $port >/dev/null 2>&1 && break
            sleep 0.5
        done
        rm -rf "$work/out"
        site0=$(site_ticks $server)
        # shellcheck disable=SC2086
        # The test web lives on 127.0.0.x: past the SSRF guard, for binaries that have one.
        cp "$work/c.toml" "$work/c-$v.toml"
        if "$bin" config default | grep -q '^allow_private'; then
            printf '[fetch]\nallow_private = true\n' >>"$work/c-$v.toml"
        fi
        $crawl_cpu env $vars /usr/bin/time -f "%e %M %U %S" -o "$work/time" "$bin" crawl \
            --config "$work/c-$v.toml" --seed "http://127.0.0.1:$port/" --out "$work/out" >/dev/null 2>&1
        site1=$(site_ticks $server)
        kill $server; wait $server 2>/dev/null || true
        read -r wall rss user sys < <(tail -n 1 "$work/time")
        n=$(wc -l <"$work/out/pages.jsonl")
        python3 -c "print(f'$v (${vars:-default} $bin)\t$n\t$wall\t{$n/$wall:.0f}\t{$rss/1024:.1f}\t{$user+$sys:.1f}\t{($site1-$site0)/$tick:.1f}')"
    done
done
