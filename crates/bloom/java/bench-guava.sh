#!/usr/bin/env bash
# Runs the Guava BloomFilter throughput matrix and prints TSV on stdout.
#
# Usage: bench-guava.sh [--n "N1 N2 ..."] [--keys "int url"] [--threads "1 2"]
#                       [--fpp P] [--seconds-warmup S] [--passes P]
#   defaults: --n "1000000 10000000 100000000" --keys "int url" --threads "1 2" --fpp 0.01
# Each configuration runs in a fresh JVM; --passes P times its phases P times on fresh filters
# and prints the medians. Environment:
#   GUAVA_JAR  Guava jar (default /usr/share/java/guava.jar)
#   JAVA_OPTS  JVM options (default "-Xmx16g")
#   JAVAC, JAVA  override the javac / java executables
# Columns: impl keys n threads phase ops seconds Mops_per_s false_positives
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
GUAVA_JAR="${GUAVA_JAR:-/usr/share/java/guava.jar}"
JAVAC="${JAVAC:-javac}"
JAVA="${JAVA:-java}"
JAVA_OPTS="${JAVA_OPTS:--Xmx16g}"

ns="1000000 10000000 100000000"
keys="int url"
threads="1 2"
fpp="0.01"
warmup=()
passes=()

while [[ $# -gt 0 ]]; do
    case "$1" in
        --n) ns="$2"; shift 2 ;;
        --keys) keys="$2"; shift 2 ;;
        --threads) threads="$2"; shift 2 ;;
        --fpp) fpp="$2"; shift 2 ;;
        --seconds-warmup) warmup=(--seconds-warmup "$2"); shift 2 ;;
        --passes) passes=(--passes "$2"); shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "bench-guava.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

if [[ ! -f "$GUAVA_JAR" ]]; then
    echo "bench-guava.sh: Guava jar not found at $GUAVA_JAR (set GUAVA_JAR)" >&2
    exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$JAVAC" -encoding UTF-8 -cp "$GUAVA_JAR" -d "$tmp" "$script_dir/GuavaBench.java"

printf 'impl\tkeys\tn\tthreads\tphase\tops\tseconds\tMops_per_s\tfalse_positives\n'
for n in $ns; do
    for k in $keys; do
        for t in $threads; do
            # shellcheck disable=SC2086
            "$JAVA" $JAVA_OPTS -cp "$tmp:$GUAVA_JAR" GuavaBench \
                --n "$n" --fpp "$fpp" --threads "$t" --keys "$k" ${warmup[@]+"${warmup[@]}"} ${passes[@]+"${passes[@]}"}
        done
    done
done
