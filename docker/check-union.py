#!/usr/bin/env python3
"""The union of a shared crawl's replicas against the test site's ground truth (the Redis
smoke tests): WORK holds truth.tsv, pages-0.jsonl … pages-2.jsonl (the killed replica's may
end in half a line) and stats.json of a replica that finished. Every URL of the ground truth
recorded, none outside it, at most MAX_TWICE recorded twice, and the crawl finished.

    check-union.py WORK NAME MAX_TWICE
"""
import collections
import json
import sys

work, name, max_twice = sys.argv[1], sys.argv[2], int(sys.argv[3])
truth = {l.split("\t")[0] for l in open(f"{work}/truth.tsv") if l.strip() and not l.startswith("#")}
times = collections.Counter()
per = []
for n in range(3):
    text = open(f"{work}/pages-{n}.jsonl").read()
    whole = text[: text.rfind("\n") + 1]
    urls = [json.loads(l)["url"] for l in whole.splitlines()]
    per.append(len(urls))
    times.update(urls)
missing = sorted(truth - set(times))
extra = sorted(set(times) - truth)
twice = sorted(u for u, n in times.items() if n > 1)
stats = json.load(open(f"{work}/stats.json"))
print(f"{name}: records per replica {per}; {len(times)} URLs, ground truth {len(truth)}: "
      f"{len(missing)} missing, {len(extra)} extra, {len(twice)} recorded twice; "
      f"leases expired {stats['frontier'].get('leases_expired')}")
problems = []
if missing:
    problems.append(f"missing {missing[:5]}")
if extra:
    problems.append(f"extra {extra[:5]}")
if len(twice) > max_twice:
    problems.append(f"{len(twice)} recorded twice (more than the {max_twice} in flight): {twice[:5]}")
if stats["stopped_by"] != "finished":
    problems.append(f"stopped_by {stats['stopped_by']}")
if problems:
    sys.exit(f"{name}: FAILED: " + "; ".join(problems))
