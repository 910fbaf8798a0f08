#!/usr/bin/env bash
# Runs the Bloom filter throughput comparison in one go — this crate, fastbloom, bloomfilter
# and Guava (Java 17) on the same keys, phases and thread counts — and prints the TSV rows
# plus our speed as a ratio of each peer's. Figures go to BENCHMARKS.md.
#
#   crates/bloom/bench.sh                 # n = 10^6, 10^7, 10^8
#   NS="1000000" crates/bloom/bench.sh    # quicker
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
NS="${NS:-1000000 10000000 100000000}"
out="${OUT:-target/bloom-bench.tsv}"
mkdir -p "$(dirname "$out")"

cargo bench -p bloom --bench throughput --no-run >/dev/null 2>&1
bin=$(cargo bench -p bloom --bench throughput --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))/\1/p')

{
    printf 'impl\tkeys\tn\tthreads\tphase\tops\tseconds\tMops_per_s\tfalse_positives\n'
    for n in $NS; do
        # Large runs take minutes per phase: measure them once, smaller ones three times.
        repeat=3; impls="ours fastbloom bloomfilter"
        if [[ $n -ge 100000000 ]]; then repeat=1; impls="ours fastbloom"; fi
        "$bin" --n "$n" --keys "int url" --threads "1 2" --impls "$impls" --repeat "$repeat" | tail -n +2
        crates/bloom/java/bench-guava.sh --n "$n" --keys "int url" --threads "1 2" 2>/dev/null | tail -n +2
    done
} | tee "$out"

echo
echo "ratios (ours Mops/s ÷ peer Mops/s; > 1 means we are faster):"
awk -F'\t' 'NR > 1 { key = $2 "\t" $3 "\t" $4 "\t" $5; v[$1, key] = $8; keys[key] = 1; impls[$1] = 1 }
    END {
        printf "keys\tn\tthreads\tphase"
        for (p in impls) if (p != "ours") printf "\tvs_%s", p
        printf "\n"
        for (k in keys) {
            printf "%s", k
            for (p in impls) if (p != "ours") {
                if ((p, k) in v && ("ours", k) in v) printf "\t%.2f", v["ours", k] / v[p, k]; else printf "\t-"
            }
            printf "\n"
        }
    }' "$out" | sort -t$'\t' -k2,2n -k1,1 -k3,3n -k4,4
