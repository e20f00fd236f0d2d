import json,sys,glob,os,re
rows=[]
for d in sorted(glob.glob('./*-*/')):
    tag=os.path.basename(d.rstrip('/'))
    try: r=json.load(open(d+'report.json'))
    except Exception: continue
    out={}
    for run in r['runs']:
        side=run['target'] if isinstance(run['target'],str) else 'preset'
        side='preset' if side=='embedded' else 'real'
        t=run['results']['transactions']; io=run['io']['total']; u=run['engine']['undo']
        out[side]=dict(tps=run['results'].get('tps',0),w=io['buffer_pages_written']/t,c=io['buffer_pages_created']/t,
                       s=u['index_page_splits']/t,m=u['index_page_merge_successful']/t)
    md=open(d+'fidelity.md').read()
    m=re.search(r'pool writes, 4 KiB blocks / txn \| (\S+) \| (\S+) \| (\S+)',md)
    p,q=out.get('preset'),out.get('real')
    print('%-26s tps %5.0f pool writes %s/%s = %s  | created %.3f/%.3f splits %.3f/%.3f merges %.3f/%.3f'%(tag,p['tps'],m.group(1),m.group(2),m.group(3),p['c'],q['c'],p['s'],q['s'],p['m'],q['m']))
