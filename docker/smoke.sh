#!/usr/bin/env bash
# Docker smoke test: builds the images without pulling anything, brings docker/compose.yaml
# up, crawls the test site inside the private network to completion, checks the output on the
# volume against the test site's ground truth, and tears everything down.
# Exit 0 only if all of that held. SKIP_STATIC_BUILD=1 reuses docker/dist/ as it is.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SMOKE=smoke
source docker/smoke-lib.sh
project="crawler-smoke-$$"
compose() { "${compose_cmd[@]}" -p "$project" -f docker/compose.yaml "$@"; }
work=$(mktemp -d)
run_name="$project-crawl"
cleanup() {
    docker rm -f "$run_name" >/dev/null 2>&1 || true
    compose --profile serve down -v --remove-orphans >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

if [[ -z ${SKIP_STATIC_BUILD:-} ]]; then
    say "docker/build-static.sh"
    docker/build-static.sh
fi
say "docker build (crawler, testsite)"
docker build -q -f docker/Dockerfile --target testsite -t crawler-testsite:local . >/dev/null
docker build -q -f docker/Dockerfile -t crawler:local . >/dev/null
docker run --rm crawler:local --version
[[ $(docker image inspect -f '{{.Config.User}}' crawler:local) == 65532:65532 ]] ||
    fail "the image does not run as the non-root user 65532"
size=$(docker image inspect -f '{{.Size}}' crawler:local)
say "crawler:local is $(( size / 1024 / 1024 )) MiB"

say "compose up testsite"
compose up -d testsite
testsite_id=$(compose ps -q testsite)
for _ in $(seq 1 60); do
    health=$(docker inspect -f '{{.State.Health.Status}}' "$testsite_id")
    [[ $health == healthy ]] && break
    sleep 1
done
[[ $health == healthy ]] || fail "the test site is $health after 60 s"

say "compose run crawler (crawl of h0.test … h4.test inside the network)"
if ! compose run -T --name "$run_name" crawler; then
    docker logs "$run_name" 2>&1 | tail -20 >&2 || true
    fail "the crawl exited non-zero"
fi
for f in pages.jsonl stats.json status.json; do
    docker cp "$run_name:/data/crawl-out/$f" "$work/$f"
done
health_line=$(compose run -T --rm --no-deps crawler health) ||
    fail "crawler health after the crawl: $health_line"
say "crawler health: $health_line"

say "ground truth"
docker run --rm crawler-testsite:local --ground-truth --hosts 5 --pages 2000 --port 8080 \
    >"$work/truth.tsv"
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
truth = {}
for line in open(f"{work}/truth.tsv"):
    if line.startswith("#") or not line.strip():
        continue
    url, expected = line.rstrip("\n").split("\t")
    truth[url] = expected
fetched = {}
for n, line in enumerate(open(f"{work}/pages.jsonl"), 1):
    rec = json.loads(line)
    if rec["url"] in fetched:
        sys.exit(f"smoke: FAILED: {rec['url']} fetched twice (line {n})")
    if rec["status"] is not None:
        fetched[rec["url"]] = str(rec["status"])
    elif (rec["error"] or "").startswith("robots.txt answered 5"):
        fetched[rec["url"]] = "robots-unavailable"
    else:
        fetched[rec["url"]] = "error"
missing = sorted(set(truth) - set(fetched))
extra = sorted(set(fetched) - set(truth))
wrong = sorted(u for u in set(truth) & set(fetched) if truth[u] != fetched[u])
stats = json.load(open(f"{work}/stats.json"))
status = json.load(open(f"{work}/status.json"))
print(f"smoke: {len(fetched)} pages fetched, ground truth {len(truth)}: "
      f"{len(missing)} missing, {len(extra)} extra, {len(wrong)} with another status; "
      f"stopped_by={stats['stopped_by']}, status.json state={status['state']}")
problems = []
if missing: problems.append(f"missing {missing[:5]}")
if extra: problems.append(f"extra {extra[:5]}")
if wrong: problems.append("wrong status " + ", ".join(f"{u}: {fetched[u]} != {truth[u]}" for u in wrong[:5]))
if stats["stopped_by"] != "finished": problems.append(f"stopped_by {stats['stopped_by']}")
if status["state"] != "finished": problems.append(f"status.json state {status['state']}")
if stats["pages"] != len(fetched): problems.append(f"stats.json pages {stats['pages']} != {len(fetched)} lines")
if problems:
    sys.exit("smoke: FAILED: " + "; ".join(problems))
PY
say "crawler serve: the same site through the service (token from the environment)"
# A token of at least 16 characters (shorter ones are refused).
export CRAWLER_API_TOKEN="smoke-token-$$-$(date +%s)"
compose --profile serve up -d serve >/dev/null
serve_id=$(compose --profile serve ps -q serve)
[[ -n $serve_id ]] || fail "the serve container did not start"
want=$(wc -l <"$work/pages.jsonl")
for i in $(seq 1 120); do
    line=$(docker exec -e CRAWLER_SERVICE_API_TOKEN="$CRAWLER_API_TOKEN" "$serve_id" \
        crawler health --api http://127.0.0.1:8700 2>&1) || line="not yet: $line"
    health=$(docker inspect -f '{{.State.Health.Status}}' "$serve_id")
    if [[ $line == "ok: idle: $want pages"* && $health == healthy ]]; then
        break
    fi
    [[ $i -lt 120 ]] || fail "serve not idle with $want pages after 60 s: $line (container $health)"
    sleep 0.5
done
say "serve: $line; container $health"
if docker exec -e CRAWLER_SERVICE_API_TOKEN=wrong "$serve_id" \
    crawler health --api http://127.0.0.1:8700 >/dev/null 2>&1; then
    fail "the API answered a wrong token"
fi
compose --profile serve stop -t 30 serve >/dev/null
docker cp "$serve_id:/data/crawl-out/pages.jsonl" "$work/serve-pages.jsonl"
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def urls(name):
    return sorted((json.loads(l)["url"], json.loads(l)["status"]) for l in open(f"{work}/{name}"))
crawl, serve = urls("pages.jsonl"), urls("serve-pages.jsonl")
if crawl != serve:
    sys.exit(f"smoke: FAILED: serve recorded {len(serve)} (url, status) pairs, crawl {len(crawl)}; "
             f"first difference {next((a, b) for a, b in zip(crawl + [None], serve + [None]) if a != b)}")
print(f"smoke: serve recorded the same {len(serve)} (url, status) pairs as crawl")
PY
say "compose down"
cleanup
trap - EXIT
say "docker smoke test passed"
