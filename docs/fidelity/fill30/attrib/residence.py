"""k_1 / PRIMARY leaf residence from the throwaway page logs.
MariaDB log (device side): t,kind,space,page,type,level,index_id  (W twice per page write: doublewrite + home)
preset log (pool side): t,kind,rel,block
Usage: residence.py mariadb LOG LO HI | residence.py preset LOG LO HI   (LO/HI: seconds from the log's start)"""
import sys, collections, statistics
side, f, lo, hi = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
ev = collections.defaultdict(list)
t0 = None
for l in open(f):
    p = l.strip().split(',')
    if len(p) < 4: continue
    t = float(p[0]); t0 = t if t0 is None else t0
    s = t - t0
    if side == 'mariadb':
        if p[4] != '17855' or p[5] != '0': continue
        key = ('idx' + p[6], p[3])
    else:
        key = ('rel' + p[2], p[3])
    ev[key].append((s, p[1]))
by = collections.defaultdict(lambda: collections.Counter())
rw = collections.defaultdict(list); wr = collections.defaultdict(list)
for (cls, pg), es in ev.items():
    es.sort()
    # dedupe writes of the same page within 0.2 s (doublewrite copy + home write)
    d = []
    for s, k in es:
        if k == 'W' and d and d[-1][1] == 'W' and s - d[-1][0] < 0.2: continue
        d.append((s, k))
    for i, (s, k) in enumerate(d):
        if not (lo <= s < hi): continue
        by[cls][k] += 1
        by[cls]['pages_' + k] += 0
        if k == 'R':
            nxt = next((x for x in d[i+1:] if x[1] in ('W', 'R')), None)
            if nxt and nxt[1] == 'W': rw[cls].append(nxt[0] - s)
        if k == 'W':
            nxt = next((x for x in d[i+1:] if x[1] == 'R'), None)
            if nxt: wr[cls].append(nxt[0] - s)
    for k in ('R', 'W'):
        if any(lo <= s < hi and kk == k for s, kk in d): by[cls]['distinct_' + k] += 1
for cls in sorted(by, key=lambda c: -by[c]['W']):
    c = by[cls]
    if c['W'] + c['R'] < 50: continue
    q = lambda v: ' '.join('%.2f' % x for x in statistics.quantiles(v, n=4)) if len(v) > 3 else '-'
    print('%-8s reads %6d (%5d pages)  writes %6d (%5d pages)  read->write s [q1 med q3] %s (n %d, <1.0 s %.0f%%)  write->read s %s (n %d)' % (
        cls, c['R'], c['distinct_R'], c['W'], c['distinct_W'], q(rw[cls]), len(rw[cls]),
        100 * sum(1 for x in rw[cls] if x < 1.0) / max(1, len(rw[cls])), q(wr[cls]), len(wr[cls])))
