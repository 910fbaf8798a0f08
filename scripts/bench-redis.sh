#!/usr/bin/env bash
# The shared frontier end to end, in one run:
#  A. one crawler on Redis against one on the local frontier, the 10^5-page test site on 100
#     hosts (as BENCHMARKS.md §4), concurrency 64, politeness off, ROUNDS rounds alternating;
#  B. scale-out: a test site whose pages each take LATENCY_MS to answer (waiting, not CPU),
#     1 process and then 3 processes sharing one Redis, each at concurrency CONC.
# Reports pages/s (records / wall seconds) and whether the records equal the ground truth,
# each URL once. Redis is a private redis-server on a free loopback port, stopped at the end.
#
#   scripts/bench-redis.sh [pages] [hosts]      ROUNDS=2 LATENCY_MS=20 CONC=16 SCALE_PAGES=20000
#   CRAWLER=path/to/crawler scripts/bench-redis.sh   # another build of the crawler (A/B)
#   SITE=path/to/testsite: another build of the test site (with CRAWLER too: nothing is built)
#   CLUSTER=1 …: only C. the 10^5-page site again, 1 process at concurrency 64, ROUNDS rounds
#     over one Redis and Redis Clusters (scripts/redis-cluster.sh, no AOF) of 1, 2 and 3
#     masters and of 3 masters with a replica each (every admission waited for on it), the
#     crawl in PARTITIONS partitions (default 6) on the clusters; with each master's CPU
#     seconds over the crawl (`INFO cpu`), the busiest being where a crawl stops scaling.
#   LIMITS=1 …: only D. the 10^5-page site, 1 process at concurrency 64 on one Redis at
#     PARTITIONS partitions (default 6), ROUNDS rounds alternating: no crawl-wide limit, a
#     page budget never reached (`max_pages`, split into shares), politeness per address that
#     never holds (`max_per_ip` = 1000: every fetch asks its address' home partition for a
#     turn) — what the limits cost when they hold nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pages=${1:-100000} hosts=${2:-100}
rounds=${ROUNDS:-2} latency=${LATENCY_MS:-20} conc=${CONC:-16} scale_pages=${SCALE_PAGES:-20000}
port=18310
command -v redis-server >/dev/null || { apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; }
if [[ -z ${CRAWLER:-} || -z ${SITE:-} ]]; then cargo build --release --workspace --bins >/dev/null 2>&1; fi
crawler=${CRAWLER:-target/release/crawler} site=${SITE:-target/release/testsite}
work=$(mktemp -d)
rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >/dev/null 2>&1 &
redis=$!
server=
cleanup() {
    kill $redis ${server:-} 2>/dev/null || true
    for d in "$work"/cluster/*/; do [[ -d $d ]] && scripts/redis-cluster.sh stop "$d"; done
    rm -rf "$work"
}
trap cleanup EXIT
until redis-cli -p "$rport" ping >/dev/null 2>&1; do sleep 0.1; done
redis_url="redis://127.0.0.1:$rport/0"
# The crawl's servers: the ports whose `INFO cpu` is read, every one flushed before a crawl.
masters=("$rport") flushed=("$rport") frontier_extra= crawl_extra= politeness_extra=
cpu_of() { # port: user + sys CPU seconds of that server
    redis-cli -p "$1" info cpu | tr -d '\r' |
        awk -F: '/^used_cpu_(user|sys):/ {s += $2} END {printf "%.2f", s}'
}

start_site() { # pages hosts [flags]
    local p=$1 h=$2; shift 2
    "$site" --pages "$p" --hosts "$h" --addressing ips --port $port --threads 1 "$@" 2>/dev/null &
    server=$!
    until "$site" --probe --port $port >/dev/null 2>&1; do sleep 0.2; done
    "$site" --pages "$p" --hosts "$h" --addressing ips --port $port --ground-truth "$@" \
        | grep -v '^#' | cut -f1 | sort >"$work/truth"
}
stop_site() { kill $server; wait $server 2>/dev/null || true; server=; }

config() { # file concurrency backend
    cat >"$1" <<TOML
[crawl]
concurrency = $2
progress_secs = 3600
persist = false
$crawl_extra
[politeness]
delay_ms = 0
max_per_host = $2
$politeness_extra
[frontier]
scope = "any"
backend = "$3"
redis_url = "$redis_url"
crawl_id = "bench"
$frontier_extra
[fetch]
allow_private = true
TOML
}

# Runs N processes at once into out-1..N; prints seconds, records, and the ground-truth check.
crawl() { # name processes concurrency backend
    local name=$1 n=$2 c=$3 backend=$4
    for p in "${flushed[@]}"; do redis-cli -p "$p" flushall >/dev/null 2>&1 || true; done
    config "$work/$name.toml" "$c" "$backend"
    local start end pids=() cpu0=() cpu=()
    for p in "${masters[@]}"; do cpu0+=("$(cpu_of "$p")"); done
    start=$(date +%s.%N)
    for i in $(seq 1 "$n"); do
        rm -rf "$work/$name-out-$i"
        "$crawler" crawl --config "$work/$name.toml" --seed "http://127.0.0.1:$port/" \
            --out "$work/$name-out-$i" >/dev/null 2>"$work/$name-$i.log" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    end=$(date +%s.%N)
    local i=0
    for p in "${masters[@]}"; do
        cpu+=("$(python3 -c "print(f'{$(cpu_of "$p") - ${cpu0[$i]}:.2f}')")")
        i=$((i + 1))
    done
    cat "$work/$name"-out-*/pages.jsonl | python3 -c '
import json, sys
print("\n".join(json.loads(l)["url"] for l in sys.stdin))' | sort >"$work/$name.urls"
    local records unique
    records=$(grep -c '' "$work/$name.urls")
    unique=$(sort -u "$work/$name.urls" | grep -c '')
    local same=no
    cmp -s <(sort -u "$work/$name.urls") "$work/truth" && [[ $records == "$unique" ]] && same=yes
    local by_master
    by_master=$(IFS=+; echo "${cpu[*]}")
    [[ $backend == local ]] && by_master=-
    python3 -c "s=$end-$start; print(f'$name\t$n\t$c\t{s:.1f}\t$records\t{$records/s:.0f}\t$same\t$by_master')"
}

printf 'run\tprocesses\tconcurrency\tseconds\trecords\tpages_per_s\tground_truth_once\tredis_cpu_s_by_master\n'
if [[ ${CLUSTER:-0} == 1 ]]; then
    # C. The same crawl over one Redis and over clusters, setups alternating each round.
    # Six free loopback ports in a row whose cluster-bus ports (+10000) are free too.
    cbase=$(python3 -c '
import random, socket
def free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); return True
    except OSError:
        return False
    finally:
        s.close()
while True:
    b = random.randrange(20000, 29000)
    if all(free(b + i) and free(b + 10000 + i) for i in range(6)):
        print(b); break')
    cdir="$work/cluster"
    cluster() { # name masters replicas
        local name=$1 m=$2 r=$3
        mkdir -p "$cdir/$name"
        REPLICAS=$r AOF=no scripts/redis-cluster.sh start "$cdir/$name" "$cbase" "$m" || {
            tail -n 5 "$cdir/$name"/*/redis.log >&2
            return 1
        }
    }
    uncluster() { scripts/redis-cluster.sh stop "$cdir/$1"; }
    start_site "$pages" "$hosts"
    for r in $(seq 1 "$rounds"); do
        masters=("$rport") flushed=("$rport") frontier_extra= redis_url="redis://127.0.0.1:$rport/0"
        crawl "one-redis-$r" 1 64 redis
        for setup in 1:0 2:0 3:0 3:1; do
            m=${setup%:*} rep=${setup#*:}
            name="cluster-${m}m${rep}r-$r"
            redis_url=$(cluster "$name" "$m" "$rep")
            masters=() flushed=()
            for ((i = 0; i < m * (1 + rep); i++)); do
                flushed+=($((cbase + i)))
                redis-cli -p $((cbase + i)) info replication | grep -q '^role:master' &&
                    masters+=($((cbase + i)))
            done
            frontier_extra="partitions = ${PARTITIONS:-6}"
            crawl "$name" 1 64 redis
            uncluster "$name"
        done
    done
    stop_site
    exit 0
fi
if [[ ${LIMITS:-0} == 1 ]]; then
    # D. Crawl-wide limits over partitions that hold nothing, against none.
    start_site "$pages" "$hosts"
    frontier_extra="partitions = ${PARTITIONS:-6}"
    for r in $(seq 1 "$rounds"); do
        crawl_extra= politeness_extra=
        crawl "no-limits-$r" 1 64 redis
        crawl_extra="max_pages = 1000000000"
        crawl "max-pages-$r" 1 64 redis
        crawl_extra= politeness_extra="max_per_ip = 1000"
        crawl "per-address-$r" 1 64 redis
    done
    stop_site
    exit 0
fi
start_site "$pages" "$hosts"
for r in $(seq 1 "$rounds"); do
    crawl "local-$r" 1 64 local
    crawl "redis-$r" 1 64 redis
done
stop_site
start_site "$scale_pages" 20 --latency-ms "$latency"
crawl "latency-1" 1 "$conc" redis
crawl "latency-3" 3 "$conc" redis
stop_site
