#!/usr/bin/env python3
"""Walk an InnoDB index's leaf chain in a .ibd file (server stopped). Prints n_recs per leaf in key order,
plus PAGE_LAST_INSERT/DIRECTION stats. usage: ibd.py FILE INDEX_ID [out.csv]"""
import struct, sys, collections
f, idx = sys.argv[1], int(sys.argv[2])
PS = 16384
data = open(f, 'rb').read()
n = len(data) // PS
pages = {}
for p in range(n):
    b = data[p*PS:(p+1)*PS]
    if struct.unpack('>H', b[24:26])[0] != 17855: continue
    ph = 38
    level = struct.unpack('>H', b[ph+26:ph+28])[0]
    iid = struct.unpack('>Q', b[ph+28:ph+36])[0]
    if iid != idx or level != 0: continue
    prev, nxt = struct.unpack('>II', b[8:16])
    nrecs = struct.unpack('>H', b[ph+16:ph+18])[0]
    last_ins = struct.unpack('>H', b[ph+10:ph+12])[0]
    direction = struct.unpack('>H', b[ph+12:ph+14])[0]
    ndir = struct.unpack('>H', b[ph+14:ph+16])[0]
    garbage = struct.unpack('>H', b[ph+8:ph+10])[0]
    # count delete-marked: walk records (compact): infimum at 99, next ptr at rec-2 relative
    dm = 0; rec = 99; cnt = 0
    while True:
        nx = struct.unpack('>h', b[rec-2:rec])[0]
        rec = (rec + nx) & 0xFFFF
        if rec == 112 or cnt > 3000: break
        if b[rec-5] & 0x20: dm += 1
        cnt += 1
    pages[p] = (prev, nxt, nrecs, dm, last_ins, direction, ndir, garbage)
heads = [p for p, v in pages.items() if v[0] == 0xFFFFFFFF]
best = []
for h in heads:
    chain = []; p = h
    while p != 0xFFFFFFFF and p in pages and len(chain) < 10**6:
        chain.append(p); p = pages[p][1]
    if len(chain) > len(best): best = chain
chain = best
print(f"leaves {len(chain)} (pages of level 0 found {len(pages)}) records {sum(pages[p][2] for p in chain)} delete-marked {sum(pages[p][3] for p in chain)}")
hist = collections.Counter(min(pages[p][2] // 100 * 100, 1200) for p in chain)
print("by 100 records:", dict(sorted(hist.items())))
print("last_insert set:", sum(1 for p in chain if pages[p][4]), "direction:", collections.Counter(pages[p][5] for p in chain))
if len(sys.argv) > 3:
    with open(sys.argv[3], 'w') as o:
        o.write("pos,page,n_recs,delete_marked,last_insert,direction,n_direction,garbage\n")
        for i, p in enumerate(chain):
            v = pages[p]
            o.write(f"{i},{p},{v[2]},{v[3]},{v[4]},{v[5]},{v[6]},{v[7]}\n")
