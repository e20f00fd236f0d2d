#!/usr/bin/env python3
"""File-space pages per transaction in a fidelity report: preset (engine.undo) and MariaDB
(innodb_metrics by type), by scale and workload. usage: fsp.py DIR/fidelity.json"""
import json, sys
d = json.load(open(sys.argv[1]))
def runs(o):
    if isinstance(o, dict):
        if 'runs' in o and isinstance(o['runs'], list):
            return o['runs']
        for v in o.values():
            r = runs(v)
            if r: return r
    return None
for r in runs(d):
    w = r['workload']; o = w['options']; n = max(r['results']['transactions'], 1)
    shape = f"{o['tables']} x {o['table_size']}"
    name = r['design']['name']; u = r['engine']['undo']
    line = f"{w['name']:18} {shape:12} {name:13} tps {r['results']['tps']:7.1f}  fsp read {u.get('file_space_pages_read',0)/n:.4f} written {u.get('file_space_pages_written',0)/n:.4f} pages/txn"
    if r.get('server'):
        c = r['server']['counters']
        parts = []
        for k in ['fsp_hdr', 'xdes', 'index_inode', 'ibuf_bitmap']:
            parts.append(f"{k} r {c.get('innodb_metrics.buffer_page_read_'+k,0)/n:.4f} w {c.get('innodb_metrics.buffer_page_written_'+k,0)/n:.4f}")
        line += "  | " + ", ".join(parts)
    print(line)
