#!/usr/bin/env bash
# Regenerates the Guava BloomFilter compatibility fixtures used by the Rust tests.
#
# Usage: gen-fixtures.sh [outdir]
#   outdir defaults to <this dir>/../tests/fixtures/guava
# Environment:
#   GUAVA_JAR  path to a Guava jar (default /usr/share/java/guava.jar; fixtures were made with 31.1)
#   JAVAC, JAVA  override the javac / java executables
# Output is deterministic: running twice yields byte-identical files.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
GUAVA_JAR="${GUAVA_JAR:-/usr/share/java/guava.jar}"
JAVAC="${JAVAC:-javac}"
JAVA="${JAVA:-java}"
outdir="${1:-$script_dir/../tests/fixtures/guava}"

if [[ ! -f "$GUAVA_JAR" ]]; then
    echo "gen-fixtures.sh: Guava jar not found at $GUAVA_JAR (set GUAVA_JAR)" >&2
    exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$JAVAC" -encoding UTF-8 -cp "$GUAVA_JAR" -d "$tmp" "$script_dir/GuavaFixtures.java"
mkdir -p "$outdir"
"$JAVA" -Dfile.encoding=UTF-8 -cp "$tmp:$GUAVA_JAR" GuavaFixtures "$outdir"
echo "fixtures written to $outdir" >&2
