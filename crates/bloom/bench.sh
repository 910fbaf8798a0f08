#!/usr/bin/env bash
# Runs the Bloom filter throughput comparison in one go — this crate, fastbloom, bloomfilter
# and Guava (Java 17) on the same keys, phases and thread counts — and prints the TSV rows
# and the tables of BENCHMARKS.md §1 (scripts/bench-table.py: medians, our speed as a ratio
# of each peer's). Environment: NS (sizes), REPEAT (processes per implementation and size,
# default 3), PASSES (timed passes per process below 10^7, default 5), OUT (the TSV).
#
#   crates/bloom/bench.sh                 # n = 10^6, 10^7, 10^8
#   NS="1000000" crates/bloom/bench.sh    # quicker
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
NS="${NS:-1000000 10000000 100000000}"
out="${OUT:-target/bloom-bench.tsv}"
mkdir -p "$(dirname "$out")"

cargo bench -p bloom --features hints --bench throughput --no-run >/dev/null 2>&1
bin=$(cargo bench -p bloom --features hints --bench throughput --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))/\1/p')

{
    printf 'impl\tkeys\tn\tthreads\tphase\tops\tseconds\tMops_per_s\tfalse_positives\n'
    for n in $NS; do
        # Every implementation runs in its own process (so no allocator state, huge-page
        # advice included, carries over from one to the next), taking turns, REPEAT times;
        # the table takes the median. Large runs take minutes per phase: measured once.
        repeat="${REPEAT:-3}"; impls="ours ours-batch fastbloom bloomfilter"
        if [[ $n -ge 100000000 ]]; then repeat=1; impls="ours ours-batch fastbloom"; fi
        # Below 10^7 a phase is 10-200 ms of work, which one scheduling hiccup moves by tens
        # of percent: there every process times its phases PASSES times on fresh filters and
        # prints the medians (the Rust harness's --repeat, the Java one's --passes).
        passes=1; if [[ $n -lt 10000000 ]]; then passes="${PASSES:-5}"; fi
        for _ in $(seq "$repeat"); do
            for impl in $impls; do
                "$bin" --n "$n" --keys "int url" --threads "1 2" --impls "$impl" --repeat "$passes" |
                    tail -n +2
            done
            # fastbloom given huge pages the only way it can be without code: glibc's tunable.
            GLIBC_TUNABLES=glibc.malloc.hugetlb=1 \
                "$bin" --n "$n" --keys "int url" --threads "1 2" --impls fastbloom --repeat "$passes" |
                tail -n +2 | sed 's/^fastbloom/fastbloom-thp/'
            # Guava's URL keys at 10^8 are generated inside its timed loop: most of an hour.
            keys="int url"; if [[ $n -ge 100000000 ]]; then keys="int"; fi
            crates/bloom/java/bench-guava.sh --n "$n" --keys "$keys" --threads "1 2" \
                --passes "$passes" 2>/dev/null | tail -n +2
        done
    done
} | tee "$out"

echo
scripts/bench-table.py "$out"
