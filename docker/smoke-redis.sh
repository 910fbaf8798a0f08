#!/usr/bin/env bash
# Docker smoke test of the shared frontier: builds the images without pulling anything
# (Redis is Debian's redis-server on `scratch`), brings docker/compose.redis.yaml up, lets the
# three replicas crawl the test site, `docker kill`s one of them mid-crawl, waits for the other
# two to finish, and checks the union of the three outputs against the test site's ground
# truth: every URL recorded, none outside it, and no more repeats than the killed replica
# had fetches in flight. SKIP_STATIC_BUILD=1 reuses docker/dist/ as it is.
#
# CLUSTER=1 does the same on docker/compose.redis-cluster.yaml (a Redis Cluster of three
# masters with a replica each; the crawl split into 6 partitions) and also kills the master
# that holds the crawl's first partition right after
# the replica: the cluster promotes its replica, and the union must still be whole.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ -n ${CLUSTER:-} ]]; then
    SMOKE=smoke-redis-cluster
    file=docker/compose.redis-cluster.yaml
    redis=(redis-1 redis-2 redis-3 redis-4 redis-5 redis-6)
else
    SMOKE=smoke-redis
    file=docker/compose.redis.yaml
    redis=(redis)
fi
source docker/smoke-lib.sh
project="crawler-$SMOKE-$$"
compose() { "${compose_cmd[@]}" -p "$project" -f "$file" "$@"; }
work=$(mktemp -d)
cleanup() {
    compose down -v --remove-orphans >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

if [[ -z ${SKIP_STATIC_BUILD:-} || ! -d docker/dist/redis-rootfs ]]; then
    say "docker/build-static.sh"
    docker/build-static.sh
fi
say "docker build (crawler, testsite, redis)"
docker build -q -f docker/Dockerfile --target testsite -t crawler-testsite:local . >/dev/null
docker build -q -f docker/Dockerfile --target redis -t crawler-redis:local . >/dev/null
docker build -q -f docker/Dockerfile -t crawler:local . >/dev/null
docker run --rm --entrypoint /usr/bin/redis-server crawler-redis:local --version

say "compose up ${redis[*]} testsite"
compose up -d "${redis[@]}" testsite
for service in "${redis[@]}" testsite; do
    id=$(compose ps -q $service)
    for _ in $(seq 1 60); do
        health=$(docker inspect -f '{{.State.Health.Status}}' "$id")
        [[ $health == healthy ]] && break
        sleep 1
    done
    [[ $health == healthy ]] || fail "$service is $health after 60 s"
done
if [[ -n ${CLUSTER:-} ]]; then
    say "compose up cluster-init"
    compose up --no-deps cluster-init >/dev/null
    code=$(docker wait "$(compose ps -a -q cluster-init)")
    [[ $code == 0 ]] || { compose logs cluster-init >&2; fail "cluster-init exited $code"; }
    cli() { docker exec "$(compose ps -q redis-1)" redis-cli "$@"; }
    for _ in $(seq 1 60); do
        [[ $(cli cluster info) == *cluster_state:ok* ]] && break
        sleep 0.5
    done
    [[ $(cli cluster info) == *cluster_state:ok* ]] || fail "the cluster is not ok after 30 s"
fi

say "compose up crawler-1 crawler-2 crawler-3"
compose up -d --no-deps crawler-1 crawler-2 crawler-3
ids=()
for n in 1 2 3; do ids+=("$(compose ps -q crawler-$n)"); done
lines() { # records so far in replica $1's pages.jsonl
    docker cp "${ids[$1]}:/data/crawl-out/pages.jsonl" "$work/p" 2>/dev/null || { echo 0; return; }
    grep -c '' "$work/p" || true
}
for _ in $(seq 1 300); do
    [[ $(lines 0) -ge 150 ]] && break
    sleep 0.2
done
at=$(lines 0)
[[ $at -ge 150 ]] || fail "crawler-1 recorded $at pages in 60 s"
[[ $(docker inspect -f '{{.State.Running}}' "${ids[0]}") == true ]] ||
    fail "crawler-1 finished before it could be killed"
docker kill "${ids[0]}" >/dev/null
say "docker kill crawler-1 after $at records"
if [[ -n ${CLUSTER:-} ]]; then
    # The master serving the slot of the crawl's first partition (of 6; its address's last
    # octet names the service).
    slot=$(cli cluster keyslot 'crawl:{smoke}:stats')
    ip=$(cli cluster nodes | python3 -c '
import sys
slot = int(sys.argv[1])
for line in sys.stdin:
    f = line.split()
    if "master" not in f[2] or "fail" in f[2]:
        continue
    for r in f[8:]:
        lo, _, hi = r.partition("-")
        if lo.isdigit() and int(lo) <= slot <= int(hi or lo):
            print(f[1].split(":")[0])
' "$slot")
    [[ -n $ip ]] || fail "no master serves slot $slot"
    master="redis-$(( ${ip##*.} - 10 ))"
    docker kill "$(compose ps -q "$master")" >/dev/null
    say "docker kill $master (the master of the crawl's first partition, slot $slot)"
fi

for n in 1 2; do
    code=$(timeout 300 docker wait "${ids[$n]}") || fail "crawler-$((n + 1)) did not finish in 300 s"
    [[ $code == 0 ]] || { docker logs "${ids[$n]}" 2>&1 | tail -20 >&2; fail "crawler-$((n + 1)) exited $code"; }
done
for n in 0 1 2; do
    docker cp "${ids[$n]}:/data/crawl-out/pages.jsonl" "$work/pages-$n.jsonl"
done
docker cp "${ids[1]}:/data/crawl-out/stats.json" "$work/stats.json"

say "ground truth"
docker run --rm crawler-testsite:local --ground-truth --hosts 5 --pages 2000 --port 8080 \
    >"$work/truth.tsv"
python3 docker/check-union.py "$work" "$SMOKE" 8
say "compose down"
cleanup
trap - EXIT
say "docker smoke test of the shared frontier passed"
