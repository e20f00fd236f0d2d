#!/usr/bin/env python3
"""From a preset run's stderr with a throwaway build that printed every fragment page
allocated (`DIAG alloc <unix ms> <block> <relation> hint <hint>`) and every page freed
(`DIAG free <unix ms> <block> <relation>`), never committed: per second, the undo
relation's pages allocated and freed, the extents (64 blocks) the allocations took, and
the median time since an allocated block was last freed."""
import collections, sys
ev = []
for line in open(sys.argv[1]):
    if line.startswith('DIAG'):
        p = line.split()
        ev.append((int(p[2]), p[1][0], int(p[3]), int(p[4])))
undo = collections.Counter(e[3] for e in ev if e[1] == 'a').most_common(1)[0][0]
ev = [e for e in ev if e[3] == undo]
t0 = ev[0][0]
last_free, by_s = {}, collections.defaultdict(lambda: [0, 0, collections.Counter(), []])
for t, k, b, _ in ev:
    d = by_s[(t - t0) // 1000]
    if k not in 'af':
        continue  # created / reinitialized lines of preset-diag-patch.py's build
    if k == 'a':
        d[0] += 1
        d[2][b // 64] += 1
        if b in last_free:
            d[3].append(t - last_free[b])
    else:
        d[1] += 1
        last_free[b] = t
print('s  allocated  freed  by_extent(extent:pages)  median_ms_since_freed')
for s in sorted(by_s):
    a, f, ext, ages = by_s[s]
    ages.sort()
    med = ages[len(ages) // 2] if ages else ''
    print(f"{s:3d}  {a:4d}  {f:4d}  {' '.join(f'{x}:{n}' for x, n in sorted(ext.items())):24s}  {med}")
