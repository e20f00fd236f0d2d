#!/usr/bin/env python3
"""From a preset run's stderr with the throwaway prints of preset-diag-patch.py (never
committed): over the last 30 s, per relation, pages created in the pool (not resident) and
reinitialized in place (a freed block still resident), the time since each block was
freed (percentiles), and the blocks freed and not taken again at the end."""
import collections, sys
ev = []
for line in open(sys.argv[1]):
    if line.startswith('DIAG'):
        p = line.split()
        ev.append((int(p[2]), p[1], int(p[3]), int(p[4])))
t0 = ev[-1][0] - 30000
counts = collections.Counter((k, r) for t, k, b, r in ev if t >= t0)
for rel in sorted({r for _, _, _, r in ev}):
    last_free, ages = {}, {'reinit': [], 'created': []}
    for t, k, b, r in ev:
        if r != rel:
            continue
        if k == 'free':
            last_free[b] = t
        elif k in ages and t >= t0:
            ages[k].append(t - last_free.pop(b) if b in last_free else None)
    print(f"relation {rel}: allocated (fragment) {counts[('alloc', rel)]}, freed {counts[('free', rel)]}")
    for k, v in ages.items():
        known = sorted(a for a in v if a is not None)
        q = lambda f: known[int(f * (len(known) - 1))] if known else '-'
        print(f"  {k}: {len(v)} (never freed before: {len(v) - len(known)}), ms since freed p10/p50/p90: {q(.1)}/{q(.5)}/{q(.9)}")
    print(f"  freed and not taken again at the end: {len(last_free)}")
