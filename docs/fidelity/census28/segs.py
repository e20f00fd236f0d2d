#!/usr/bin/env python3
"""segs.py FILE.ibd: each B-tree index's leaf and non-leaf file segments in a stopped
server's .ibd (16 KiB pages): pages reserved and used (fsp0fsp.cc fseg_n_reserved_pages_low),
extents on FSEG_FREE / NOT_FULL / FULL, fragment pages, and the free pages inside the
NOT_FULL extents (where a split's page comes from)."""
import struct, sys
PS = 16384
f = open(sys.argv[1], 'rb'); data = f.read(); n = len(data) // PS
def page(p): return data[p*PS:(p+1)*PS]
FIL_NULL = 0xFFFFFFFF
roots = {}
for p in range(n):
    pg = page(p)
    if struct.unpack('>H', pg[24:26])[0] != 17855: continue
    prev, nxt = struct.unpack('>II', pg[8:16])
    level = struct.unpack('>H', pg[64:66])[0]
    idx = struct.unpack('>Q', pg[66:74])[0]
    if prev == FIL_NULL and nxt == FIL_NULL:
        if idx not in roots or level > roots[idx][1]: roots[idx] = (p, level)
def flst(b, off):
    ln = struct.unpack('>I', b[off:off+4])[0]
    fp, fo = struct.unpack('>IH', b[off+4:off+10])
    return ln, (fp, fo)
def xdes_of(page_no):
    # extent descriptor: XDES page = page_no - page_no % 16384 (page 0 for the first), entries at 150, 40 bytes each
    xp = page_no - page_no % PS
    ent = (page_no % PS) // 64
    b = page(xp)
    off = 150 + ent * 40
    state = struct.unpack('>I', b[off+20:off+24])[0]
    bits = b[off+24:off+40]
    free = sum(1 for i in range(64) if (bits[(2*i)//8] >> ((2*i) % 8)) & 1)
    return state, free
def walk(b_page, first):
    out = []; pg, off = first; seen = 0
    while pg != FIL_NULL and seen < 100000:
        # node address points at XDES_FLST_NODE (offset 8 within the descriptor entry)
        ent = (off - 150 - 8) // 40
        xp = pg
        out.append(xp // 1 * 0 + (pg - pg % PS) + ent * 64)
        b = page(pg)
        nxt_p, nxt_o = struct.unpack('>IH', b[off+6:off+12])
        pg, off = nxt_p, nxt_o; seen += 1
    return out
for idx, (root, level) in sorted(roots.items()):
    r = page(root)
    for name, o in (('leaf', 74), ('top', 84)):
        sp, ip, io = struct.unpack('>IIH', r[o:o+10])
        ib = page(ip); e = io
        nfu = struct.unpack('>I', ib[e+8:e+12])[0]
        lf, ff = flst(ib, e+12); ln_, fn_ = flst(ib, e+28); lfull, _ = flst(ib, e+44)
        frag = [struct.unpack('>I', ib[e+64+4*i:e+68+4*i])[0] for i in range(32)]
        nfrag = sum(1 for x in frag if x != FIL_NULL)
        reserved = 64 * (lf + ln_ + lfull) + nfrag
        used = nfu + 64 * lfull + nfrag
        nf_ext = walk(ip, fn_)
        free_in_nf = sum(xdes_of(x)[1] for x in nf_ext)
        print(f'index {idx} root {root} level {level} {name}: reserved {reserved} used {used} free {reserved-used} | extents FREE {lf} NOT_FULL {ln_} FULL {lfull} frag {nfrag} | free pages in NOT_FULL extents {free_in_nf}')
print(f'file pages {n}')
