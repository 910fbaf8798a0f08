#!/usr/bin/env bash
# Benchmarks of `crawler serve` (BENCHMARKS.md §6): serve with a dashboard's load vs crawl on
# the same test site, the /metrics and /status latency with 100,000 hosts, and the external
# fetchers' lease + complete throughput. Loopback only.
#
#   scripts/bench-service.sh            # 10^5 pages on 100 hosts, 3 alternating runs
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --workspace --bins --locked >/dev/null 2>&1
echo "== serve (dashboard load) vs crawl"
scripts/bench-service.py serve-vs-crawl "${PAGES:-100000}" "${HOSTS:-100}" "${RUNS:-3}"
echo "== hot paths with 100,000 hosts"
scripts/bench-service.py hot-paths 100000
echo "== external fetchers: lease + complete, 1,000 URLs per call"
scripts/bench-service.py leases 100000 1000
