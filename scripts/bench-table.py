#!/usr/bin/env python3
"""Turns the TSV rows of crates/bloom/bench.sh into the markdown tables of BENCHMARKS.md §1:
Mops/s per implementation (the median where a configuration ran several times) and our
speed as a ratio of the peers' (> 1 means we are faster), then the false positives, then how
many rows meet the issue's targets (the better of our two calls ≥ 5× Guava, ≥ 1/1.2 of
fastbloom) and the misses, each with fastbloom's own ratio to Guava.

Implementations: ours (one item per call), ours-batch (put_batch / might_contain_batch),
fastbloom, fastbloom-thp (fastbloom with glibc's huge-page tunable), bloomfilter, guava.
Usage: scripts/bench-table.py FILE.tsv [FILE.tsv ...]"""
import statistics
import sys
from collections import defaultdict

runs = defaultdict(lambda: defaultdict(list))
fps = defaultdict(dict)
for path in sys.argv[1:]:
    for line in open(path):
        cols = line.rstrip("\n").split("\t")
        if len(cols) < 9 or cols[0] in ("impl",) or cols[0].startswith("#"):
            continue
        impl, keys, n, threads, phase, _ops, _secs, mops, fp = cols[:9]
        key = (int(n), keys, int(threads), phase)
        runs[key][impl].append(float(mops))
        if fp != "-":
            fps[(int(n), keys)][impl] = int(fp)

rows = {key: {impl: statistics.median(v) for impl, v in r.items()} for key, r in runs.items()}
order = {"put": 0, "contains_present": 1, "contains_absent": 2}
impls = ["ours", "ours-batch", "fastbloom", "fastbloom-thp", "bloomfilter", "guava"]
names = ["ours", "ours batch", "fastbloom", "fastbloom +THP", "bloomfilter", "Guava"]
ratios = [("ours", "fastbloom"), ("ours-batch", "fastbloom"), ("ours-batch", "fastbloom-thp"),
          ("ours", "guava"), ("ours-batch", "guava")]
ratio_names = ["ours ÷ fastbloom", "batch ÷ fastbloom", "batch ÷ fastbloom +THP",
               "ours ÷ Guava", "batch ÷ Guava"]

print("| n | keys | threads | phase | " + " | ".join(names) + " | " + " | ".join(ratio_names) + " |")
print("|---|---|---|---|" + "---|" * (len(names) + len(ratio_names)))
for key in sorted(rows, key=lambda k: (k[0], k[1], k[2], order[k[3]])):
    r = rows[key]

    def f(i):
        return f"{r[i]:.2f}" if i in r else "–"

    def ratio(a, b):
        return f"**{r[a] / r[b]:.2f}**" if a in r and b in r else "–"

    n, keys, threads, phase = key
    print(f"| {n:.0e} | {keys} | {threads} | {phase} | "
          + " | ".join(f(i) for i in impls) + " | "
          + " | ".join(ratio(a, b) for a, b in ratios) + " |")
print()
print("False positives among the N absent keys (same keys for every implementation):")
print()
fp_impls = ["ours", "ours-batch", "fastbloom", "bloomfilter", "guava"]
print("| n | keys | ours | ours batch | fastbloom | bloomfilter | Guava |")
print("|---|---|---|---|---|---|---|")
for (n, keys), r in sorted(fps.items()):
    def g(i):
        return f"{r[i]:,} ({r[i] / n:.3%})" if i in r else "–"
    print(f"| {n:.0e} | {keys} | " + " | ".join(g(i) for i in fp_impls) + " |")

# The targets, with the better of our two calls: ≥ 5× Guava, ≥ 1/1.2 of fastbloom.
print()
best = {key: max(r[i] for i in ("ours", "ours-batch") if i in r)
        for key, r in rows.items() if "ours" in r or "ours-batch" in r}
for peer, target, label in (("guava", 5.0, "≥ 5× Guava"), ("fastbloom", 1 / 1.2, "≥ 0.83 × fastbloom")):
    keys = sorted((k for k in best if peer in rows[k]),
                  key=lambda k: (k[0], k[1], k[2], order[k[3]]))
    met = [k for k in keys if best[k] / rows[k][peer] >= target]
    print(f"Target {label} (better of ours and ours batch): {len(met)} of {len(keys)} rows.")
    for k in keys:
        if k in met:
            continue
        n, kind, threads, phase = k
        extra = ""
        if peer == "guava" and "fastbloom" in rows[k]:
            extra = f"; fastbloom {rows[k]['fastbloom'] / rows[k]['guava']:.2f}×"
        print(f"  miss: {n:.0e} {kind} {threads} thread(s) {phase}: "
              f"{best[k] / rows[k][peer]:.2f}×{extra}")
