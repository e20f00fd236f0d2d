import json,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
prev=None
for r in rows:
    root=int(r['root'][0][0]) if r['root'] else -1
    leaves=[p for p in r['pages'] if p[0]!=root]
    if not leaves: continue
    bins=[0]*13
    for p in leaves: bins[min(p[1]//100,12)]+=1
    below=sum(1 for p in leaves if p[2]<8192)
    m=r['metrics']
    print('%5.1f leaves %3d below-thr %3d  bins/100: %s  splits %s merges %s' % (r['t'],len(leaves),below,' '.join('%3d'%b for b in bins),m.get('index_page_splits'),m.get('index_page_merge_successful')))
