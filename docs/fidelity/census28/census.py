import json,sys
for f in sys.argv[1:]:
    r=json.load(open(f))
    print('==',f)
    for run in r['runs']:
        bc=run['engine'].get('buffer_cache',{})
        side=run['target'] if isinstance(run['target'],str) else 'real'
        row=[]
        for c in ['table','index','undo','system','freed','memory']:
            p=bc.get('owner_%s_pages'%c,0)
            if p: row.append('%s %d (d %d, old %d)'%(c,p,bc.get('owner_%s_dirty'%c,0),bc.get('owner_%s_old'%c,0)))
        row.append('unused %d'%bc.get('unused',0))
        print('  %-9s'%side, ' | '.join(row))
