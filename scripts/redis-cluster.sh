#!/usr/bin/env bash
# A local Redis Cluster from Debian's redis-server, to try the shared frontier on a cluster:
# MASTERS masters with a replica each, on loopback ports BASE … BASE+2×MASTERS−1, each node
# working in DIR/PORT (AOF on). The tests start their own (test-support's RedisCluster).
#
#   scripts/redis-cluster.sh start [DIR] [BASE] [MASTERS]   # defaults: $TMPDIR/crawler-cluster 7100 3
#   scripts/redis-cluster.sh stop  [DIR]
#   REPLICAS=0 …   # masters only (any number from 1: slots assigned by hand, as redis-cli
#                  # --cluster create wants at least 3 masters)
#   AOF=no …       # no append-only file (benchmarks against a Redis without persistence)
#
# `start` prints the cluster's URL (any one node names it) once every slot is served.
set -euo pipefail

cmd=${1:-start}
dir=${2:-${TMPDIR:-/tmp}/crawler-cluster}
base=${3:-7100}
masters=${4:-3}
replicas=${REPLICAS:-1}
aof=${AOF:-yes}

case $cmd in
start)
    command -v redis-server >/dev/null || { echo "redis-server is missing (apt-get install redis-server)" >&2; exit 69; }
    addrs=()
    nodes=$((masters * (1 + replicas)))
    for ((i = 0; i < nodes; i++)); do
        port=$((base + i))
        if redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1; then
            echo "port $port already answers: not a node this script started; choose another BASE" >&2
            exit 1
        fi
        mkdir -p "$dir/$port"
        redis-server --port "$port" --bind 127.0.0.1 --dir "$dir/$port" \
            --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
            --appendonly "$aof" --save "" --repl-diskless-sync-delay 0 --daemonize yes \
            --pidfile "$dir/$port/redis.pid" --logfile "$dir/$port/redis.log"
        addrs+=("127.0.0.1:$port")
    done
    for a in "${addrs[@]}"; do
        for _ in $(seq 100); do
            redis-cli -h 127.0.0.1 -p "${a##*:}" ping >/dev/null 2>&1 && break
            sleep 0.1
        done
    done
    if ((replicas == 0)); then
        # Slots split evenly by hand, then every node introduced to the first.
        for ((i = 0; i < masters; i++)); do
            lo=$((16384 * i / masters)) hi=$((16384 * (i + 1) / masters - 1))
            redis-cli -h 127.0.0.1 -p $((base + i)) cluster addslotsrange "$lo" "$hi" >/dev/null
            ((i == 0)) || redis-cli -h 127.0.0.1 -p $((base + i)) cluster meet 127.0.0.1 "$base" >/dev/null
        done
    else
        redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$replicas" --cluster-yes >"$dir/create.log"
    fi
    # Every node sees every slot served and knows every other node (a client may ask any).
    for a in "${addrs[@]}"; do
        for _ in $(seq 300); do
            info=$(redis-cli -h 127.0.0.1 -p "${a##*:}" cluster info | tr -d '\r')
            grep -q '^cluster_state:ok' <<<"$info" &&
                grep -q "^cluster_known_nodes:$nodes\$" <<<"$info" && break
            sleep 0.1
        done
    done
    for _ in $(seq 300); do
        [ "$(redis-cli -h 127.0.0.1 -p "$base" cluster nodes | grep -c slave)" -eq $((masters * replicas)) ] &&
            [ "$(redis-cli -h 127.0.0.1 -p "$base" cluster nodes | grep -c connected)" -eq "$nodes" ] && break
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
    pids=()
    for pid in "$dir"/*/redis.pid; do
        [ -f "$pid" ] && pids+=("$(cat "$pid")")
    done
    kill "${pids[@]}" 2>/dev/null || true
    # Gone before this returns, so that the ports can be used again at once.
    for p in "${pids[@]}"; do
        for _ in $(seq 100); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
    done
    ;;
*)
    echo "usage: $0 start|stop [DIR] [BASE] [MASTERS]" >&2
    exit 64
    ;;
esac
