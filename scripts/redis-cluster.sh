#!/usr/bin/env bash
# A local Redis Cluster from Debian's redis-server, to try the shared frontier on a cluster:
# MASTERS masters with a replica each, on loopback ports BASE … BASE+2×MASTERS−1, each node
# working in DIR/PORT (AOF on). The tests start their own (test-support's RedisCluster).
#
#   scripts/redis-cluster.sh start [DIR] [BASE] [MASTERS]   # defaults: $TMPDIR/crawler-cluster 7100 3
#   scripts/redis-cluster.sh stop  [DIR]
#
# `start` prints the cluster's URL (any one node names it) once every slot is served.
set -euo pipefail

cmd=${1:-start}
dir=${2:-${TMPDIR:-/tmp}/crawler-cluster}
base=${3:-7100}
masters=${4:-3}

case $cmd in
start)
    command -v redis-server >/dev/null || { echo "redis-server is missing (apt-get install redis-server)" >&2; exit 69; }
    addrs=()
    for ((i = 0; i < 2 * masters; i++)); do
        port=$((base + i))
        if redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1; then
            echo "port $port already answers: not a node this script started; choose another BASE" >&2
            exit 1
        fi
        mkdir -p "$dir/$port"
        redis-server --port "$port" --bind 127.0.0.1 --dir "$dir/$port" \
            --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
            --appendonly yes --save "" --repl-diskless-sync-delay 0 --daemonize yes \
            --pidfile "$dir/$port/redis.pid" --logfile "$dir/$port/redis.log"
        addrs+=("127.0.0.1:$port")
    done
    for a in "${addrs[@]}"; do
        for _ in $(seq 100); do
            redis-cli -h 127.0.0.1 -p "${a##*:}" ping >/dev/null 2>&1 && break
            sleep 0.1
        done
    done
    redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log"
    for _ in $(seq 300); do
        redis-cli -h 127.0.0.1 -p "$base" cluster info | grep -q '^cluster_state:ok' && break
        sleep 0.1
    done
    for _ in $(seq 300); do
        [ "$(redis-cli -h 127.0.0.1 -p "$base" cluster nodes | grep -c slave)" -eq "$masters" ] && break
        sleep 0.1
    done
    # A replica that never synced does not take over: wait for every replica's link.
    for a in "${addrs[@]}"; do
        for _ in $(seq 300); do
            redis-cli -h 127.0.0.1 -p "${a##*:}" info replication |
                grep -qE '^(role:master|master_link_status:up)' && break
            sleep 0.1
        done
    done
    echo "redis+cluster://127.0.0.1:$base"
    ;;
stop)
    for pid in "$dir"/*/redis.pid; do
        [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null || true
    done
    ;;
*)
    echo "usage: $0 start|stop [DIR] [BASE] [MASTERS]" >&2
    exit 64
    ;;
esac
