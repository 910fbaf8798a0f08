#!/usr/bin/env python3
"""Turns the TSV rows of crates/bloom/bench.sh (ours, fastbloom, bloomfilter, guava) into the
markdown table of BENCHMARKS.md: Mops/s per implementation and our speed as a ratio of each
peer's (> 1 means we are faster). Usage: scripts/bench-table.py FILE.tsv [FILE.tsv ...]"""
import sys
from collections import defaultdict

rows = defaultdict(dict)
fps = defaultdict(dict)
for path in sys.argv[1:]:
    for line in open(path):
        cols = line.rstrip("\n").split("\t")
        if len(cols) < 9 or cols[0] in ("impl",) or cols[0].startswith("#"):
            continue
        impl, keys, n, threads, phase, _ops, _secs, mops, fp = cols[:9]
        key = (int(n), keys, int(threads), phase)
        rows[key][impl] = float(mops)
        if fp != "-":
            fps[key][impl] = int(fp)

order = {"put": 0, "contains_present": 1, "contains_absent": 2}
print("| n | keys | threads | phase | ours | fastbloom | bloomfilter | Guava | ours ÷ fastbloom | ours ÷ Guava |")
print("|---|---|---|---|---|---|---|---|---|---|")
for key in sorted(rows, key=lambda k: (k[0], k[1], k[2], order[k[3]])):
    r = rows[key]
    def f(i):
        return f"{r[i]:.2f}" if i in r else "–"
    def ratio(i):
        return f"**{r['ours'] / r[i]:.2f}**" if i in r and "ours" in r else "–"
    n, keys, threads, phase = key
    print(f"| {n:.0e} | {keys} | {threads} | {phase} | {f('ours')} | {f('fastbloom')} | "
          f"{f('bloomfilter')} | {f('guava')} | {ratio('fastbloom')} | {ratio('guava')} |")
print()
print("False positives among the N absent keys (same keys for every implementation):")
print()
print("| n | keys | ours | fastbloom | bloomfilter | Guava |")
print("|---|---|---|---|---|---|")
seen = set()
for key in sorted(fps):
    n, keys, threads, phase = key
    if (n, keys) in seen:
        continue
    seen.add((n, keys))
    r = fps[key]
    g = lambda i: f"{r[i]:,} ({r[i] / n:.3%})" if i in r else "–"
    print(f"| {n:.0e} | {keys} | {g('ours')} | {g('fastbloom')} | {g('bloomfilter')} | {g('guava')} |")
