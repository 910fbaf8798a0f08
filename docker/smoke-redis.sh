#!/usr/bin/env bash
# Docker smoke test of the shared frontier: builds the images without pulling anything
# (Redis is Debian's redis-server on `scratch`), brings docker/compose.redis.yaml up, lets the
# three replicas crawl the test site, `docker kill`s one of them mid-crawl, waits for the other
# two to finish, and checks the union of the three outputs against the test site's ground
# truth: every URL recorded, none outside it, and no more repeats than the killed replica
# had fetches in flight. SKIP_STATIC_BUILD=1 reuses docker/dist/ as it is.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SMOKE=smoke-redis
source docker/smoke-lib.sh
project="crawler-smoke-redis-$$"
compose() { "${compose_cmd[@]}" -p "$project" -f docker/compose.redis.yaml "$@"; }
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

say "compose up redis, testsite"
compose up -d redis testsite
for service in redis testsite; do
    id=$(compose ps -q $service)
    for _ in $(seq 1 60); do
        health=$(docker inspect -f '{{.State.Health.Status}}' "$id")
        [[ $health == healthy ]] && break
        sleep 1
    done
    [[ $health == healthy ]] || fail "$service is $health after 60 s"
done

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
python3 - "$work" <<'PY'
import collections, json, sys
work = sys.argv[1]
truth = {l.split("\t")[0] for l in open(f"{work}/truth.tsv") if l.strip() and not l.startswith("#")}
times = collections.Counter()
per = []
for n in range(3):
    text = open(f"{work}/pages-{n}.jsonl").read()
    whole = text[: text.rfind("\n") + 1]   # the killed replica may have left half a line
    urls = [json.loads(l)["url"] for l in whole.splitlines()]
    per.append(len(urls))
    times.update(urls)
missing = sorted(truth - set(times))
extra = sorted(set(times) - truth)
twice = sorted(u for u, n in times.items() if n > 1)
stats = json.load(open(f"{work}/stats.json"))
print(f"smoke-redis: records per replica {per}; {len(times)} URLs, ground truth {len(truth)}: "
      f"{len(missing)} missing, {len(extra)} extra, {len(twice)} recorded twice; "
      f"leases expired {stats['frontier'].get('leases_expired')}")
problems = []
if missing: problems.append(f"missing {missing[:5]}")
if extra: problems.append(f"extra {extra[:5]}")
if len(twice) > 8: problems.append(f"{len(twice)} recorded twice (more than the 8 in flight): {twice[:5]}")
if stats["stopped_by"] != "finished": problems.append(f"stopped_by {stats['stopped_by']}")
if problems:
    sys.exit("smoke-redis: FAILED: " + "; ".join(problems))
PY
say "compose down"
cleanup
trap - EXIT
say "docker smoke test of the shared frontier passed"
