#!/usr/bin/env python3
"""Where each kind of page sits in the LRU list, MariaDB against the preset (lru-run.sh's
snapshots): per kind, pages, old pages, the young pages' median and quartiles of
evictions since last put at the head (FREE_PAGE_CLOCK against the newest stamp, pages never put at the head left out; the
preset prints its clock less the page's stamp), and the pages in each tenth of the list
from the head. usage: lru-summ.py DIR"""
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mdb, statistics as S
d = sys.argv[1]
m = json.load(open(d + '/mariadb-lru.json'))
if 'snaps' in m:  # lru.py's twelve snapshots: the first
    m = m['snaps'][0]
K1 = 'k_1'
kind_m = mdb.kind
# LRU_POSITION counts from the tail (handler/i_s.cc `i_s_innodb_fill_buffer_lru` walks
# from UT_LIST_GET_LAST); IS_OLD reads NULL in this view, so the old pages are the
# Innodb_buffer_pool_pages_old last ones.
n_m = len(m['rows'])
old_m = int(dict(m['status'])['Innodb_buffer_pool_pages_old'])
rows_m = []
for r in m['rows']:
    rows_m.append((n_m - 1 - int(r[0]), kind_m(r), int(int(r[0]) < old_m), int(r[6])))
clock_m = max(x[3] for x in rows_m)
# preset: pos-from-tail rel block old evictions_since_stamp access_age_ms dirty free
lines = [l.split() for l in open(d + '/preset-lru.txt')]
n_p = len(lines)
rels = {}
for l in lines: rels[l[1]] = rels.get(l[1], 0) + 1
big = sorted(rels, key=lambda r: -rels[r])
print('preset relations by resident pages:', [(r, rels[r]) for r in big])
k1_rel = sys.argv[2] if len(sys.argv) > 2 else None
table_rel = sys.argv[3] if len(sys.argv) > 3 else None
undo_rel = sys.argv[4] if len(sys.argv) > 4 else None
rows_p = []
for l in lines:
    pos_tail, rel, block, old, ev, age, dirty, free = l[:8]
    pos = n_p - 1 - int(pos_tail)
    if free == '1': k = 'freed'
    elif rel == k1_rel: k = 'k_1'
    elif rel == table_rel: k = 'table'
    elif rel == undo_rel: k = 'system' if int(block) < 129 else 'undo'  # rollback segment headers first
    else: k = 'system'
    rows_p.append((pos, k, int(old), int(ev)))
def summ(rows, n, clock=None):
    out = {}
    for k in sorted(set(r[1] for r in rows)):
        rs = [r for r in rows if r[1] == k]
        young = [r for r in rs if not r[2]]
        ev = sorted((clock - r[3]) if clock is not None else r[3] for r in young if (clock is None or r[3] > 0))
        q = (lambda p: ev[int(p * (len(ev) - 1))]) if ev else (lambda p: None)
        tenths = [0] * 10
        for r in rs: tenths[min(9, r[0] * 10 // n)] += 1
        out[k] = (len(rs), sum(r[2] for r in rs), q(0.25), q(0.5), q(0.75), tenths)
    return out
for name, rows, n, clock in (('mariadb', rows_m, n_m, clock_m), ('preset', rows_p, n_p, None)):
    print(f'{name}: {n} pages in the LRU list')
    for k, (cnt, old, q1, q2, q3, t) in summ(rows, n, clock).items():
        print(f'  {k:7s} {cnt:5d} old {old:5d}  young evictions since head q1/med/q3 {q1}/{q2}/{q3}  tenths {t}')
print('mariadb status', m['status'])
