#!/usr/bin/env bash
# `crawler bloom build` / `query` at N keys (default 10^8), batch calls vs one call per key,
# runs alternating: the figures of BENCHMARKS.md §1 ("batch calls and memory hints").
#
#   crates/bloom/cli-bench.sh [N] [ROUNDS]
#
# Needs gcc (for the key generator) and 2 × N × 59 bytes of disk in target/ (12 GB at 10^8).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
n="${1:-100000000}" rounds="${2:-3}"
work=target/bloom-cli-bench
mkdir -p "$work"
cargo build --release --locked --bin crawler >/dev/null 2>&1
gcc -O2 -o "$work/gen" crates/bloom/cli-bench-keys.c
[[ -s "$work/keys-$n" ]] || "$work/gen" "$n" >"$work/keys-$n"
[[ -s "$work/absent-$n" ]] || "$work/gen" "$n" "$n" >"$work/absent-$n"
crawler=target/release/crawler
t() { /usr/bin/time -f "%e" "$@" 2>&1 >/dev/null | tail -1; }
"$crawler" bloom build --expected "$n" --fpp 0.01 --out "$work/f.bloom" --input "$work/keys-$n"
printf 'variant\tbuild_s\tpresent_s\tabsent_s\n'
for _ in $(seq 1 "$rounds"); do
    for flag in "" --per-key; do
        b=$(t "$crawler" bloom build --expected "$n" --fpp 0.01 --out "$work/g.bloom" --input "$work/keys-$n" $flag)
        cmp -s "$work/f.bloom" "$work/g.bloom" || { echo "filters differ" >&2; exit 1; }
        p=$(t "$crawler" bloom query "$work/f.bloom" --input "$work/keys-$n" $flag)
        a=$(t "$crawler" bloom query "$work/f.bloom" --input "$work/absent-$n" $flag)
        printf '%s\t%s\t%s\t%s\n' "${flag:-batch}" "$b" "$p" "$a"
    done
done
