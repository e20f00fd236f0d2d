#!/usr/bin/env python3
"""Pages put at the head of the LRU list between consecutive snapshots (lru-run.sh with
twelve snapshots a side), by kind, MariaDB against the preset: per interval and summed,
made young (old in the earlier snapshot), young pages moved to the head again, and the
young pages eligible for a move in the earlier snapshot (evictions since their head
stamp at least frames x (1024 - 378) / 4096, buf_page_peek_if_young) with the share of
them moved by the later one. A page put at the head has a larger stamp in the later
snapshot; one evicted and read again meanwhile has stamp 0 (it entered at the midpoint)
and is counted new. A page new in the later snapshot is counted at the head (stamp > 0:
created, or read and moved to the head within the interval) or at the midpoint. usage: lru-series.py DIR K1_REL TABLE_REL UNDO_REL"""
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mdb
d, k1, tab, undo = sys.argv[1:5]
THR = 4056 * (1024 - 378) // 4096
KINDS = ['k_1', 'table', 'undo', 'system']
kind_m = mdb.kind
def snaps_m():
    out = []
    for s in json.load(open(d + '/mariadb-lru.json'))['snaps']:
        st = dict(s['status']); old = int(st['Innodb_buffer_pool_pages_old'])
        snap = {}
        for r in s['rows']:
            if r[3] == 'UNKNOWN': continue  # freed blocks read page 0
            # LRU_POSITION counts from the tail; the old pages are the last `old`
            snap[(r[1], r[2])] = (kind_m(r), int(r[0]) < old, int(r[6]))
        out.append(((s['mono_ms_before'] + s['mono_ms_after']) / 2000, snap, int(st['Com_commit'])))
    return out
def snaps_p():
    times = [l.split() for l in open(d + '/preset-lru.t')]
    out = []
    for i, a, b in times:
        snap = {}
        for l in open(f'{d}/preset-lru.{i}'):
            pos, rel, block, old, ev, age, dirty, free, stamp = l.split()
            if free == '1': continue
            k = 'k_1' if rel == k1 else 'table' if rel == tab else ('system' if int(block) < 129 else 'undo') if rel == undo else 'system'
            snap[(rel, block)] = (k, old == '1', int(stamp), int(ev) + int(stamp))
        out.append(((float(a) + float(b)) / 2, snap, None))
    return out
def series(snaps, name):
    tot = {k: [0, 0, 0, 0, 0, 0] for k in KINDS}
    secs = snaps[-1][0] - snaps[0][0]
    print(f'{name}: {len(snaps) - 1} intervals over {secs:.2f} s; per interval k_1 / table moved to head, made young')
    line = []
    for (t0, a, _), (t1, b, _) in zip(snaps, snaps[1:]):
        clock = max(v[3] if len(v) > 3 else v[2] for v in a.values())
        per = {}
        for k in KINDS:
            mv = sum(1 for p, v in b.items() if v[0] == k and p in a and v[2] > a[p][2] and not a[p][1])
            my = sum(1 for p, v in b.items() if v[0] == k and p in a and v[2] > a[p][2] and a[p][1])
            el = [p for p, v in a.items() if v[0] == k and not v[1] and v[2] > 0 and clock - v[2] >= THR]
            elm = sum(1 for p in el if p in b and b[p][2] > a[p][2])
            # new in the pool with a head stamp: created (buf_page_create_low puts a page
            # at the head), or read (in at the midpoint, stamp 0) and then moved to the
            # head within the interval: not made young (old_blocks_time is 1 s), but made
            # young by the midpoint's boundary moving past it (buf_LRU_old_adjust_len) and
            # then moved at its next access (buf_page_peek_if_young with stamp 0)
            cr = sum(1 for p, v in b.items() if v[0] == k and v[2] > 0 and (p not in a or v[2] < a[p][2]))
            rd = sum(1 for p, v in b.items() if v[0] == k and v[2] == 0 and (p not in a or a[p][2] > 0))
            t = tot[k]; t[0] += mv; t[1] += my; t[2] += len(el); t[3] += elm; t[4] += cr; t[5] += rd
            per[k] = (mv, my)
        line.append(f"{per['k_1'][0]}/{per['table'][0]},{per['k_1'][1]}/{per['table'][1]}")
    print('   ', '  '.join(line))
    for k in KINDS:
        mv, my, el, elm, cr, rd = tot[k]
        print(f'  {k:7s} moved to head {mv / secs:7.0f}/s  made young {my / secs:6.0f}/s  new at the head {cr / secs:5.0f}/s  new at the midpoint {rd / secs:6.0f}/s  eligible moved {elm}/{el} = {elm / el if el else 0:.2f} per {secs / (len(snaps) - 1):.2f} s')
    return tot, secs
sm = snaps_m(); sp = snaps_p()
series(sm, 'mariadb'); series(sp, 'preset')
c = [s[2] for s in sm]
print(f'mariadb commits over its snapshots: {c[-1] - c[0]} in {sm[-1][0] - sm[0][0]:.2f} s')
