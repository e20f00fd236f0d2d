#!/usr/bin/env python3
"""Side by side: ratio per (scale, workload, metric) from several fidelity.json. usage: cmp.py A/fidelity.json B/fidelity.json ..."""
import json, sys
tabs=[json.load(open(p))['rows'] for p in sys.argv[1:]]
keys=[]
for t in tabs:
    for r in t:
        k=(r['scale'],r['workload'][5:],r['metric'])
        if k not in keys: keys.append(k)
idx=[{(r['scale'],r['workload'][5:],r['metric']):r for r in t} for t in tabs]
skip=('tps','warm-up','hit ratio','requests','syncs')
for k in keys:
    if any(s in k[2] for s in skip): continue
    cells=[]
    for i in idx:
        r=i.get(k)
        if r is None: cells.append('-'.rjust(22)); continue
        rt = r['ratio']
        cells.append((f"{r['preset_value']:.3g}/{r['real_value']:.3g} {rt:.2f}" if rt is not None else 'n/a').rjust(22) + ('!' if r['outside'] else ' '))
    print(f"{k[0]:6} {k[1]:17} {k[2][:48]:48}", ' '.join(cells))
