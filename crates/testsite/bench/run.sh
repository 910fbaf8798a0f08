#!/usr/bin/env bash
# Measures how many generated pages per second the test site serves on ONE core (one tokio
# worker thread) over loopback keep-alive, with wrk (Debian package `wrk`) on the other core.
#
#   crates/testsite/bench/run.sh [seconds]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
secs="${1:-10}"
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
cargo build --release -p testsite --bin testsite >/dev/null 2>&1
export PAGES=1000000 HOSTS=100 PORT=18080
target/release/testsite --pages "$PAGES" --hosts "$HOSTS" --port "$PORT" --threads 1 2>/dev/null &
server=$!
trap 'kill $server 2>/dev/null' EXIT
sleep 1
wrk -t1 -c64 -d"${secs}s" --latency -s crates/testsite/bench/pages.lua "http://127.0.0.1:$PORT/"
