import json,sys
# usage: summ.py DIR... : per run, the figures the undo fragment question needs
for d in sys.argv[1:]:
    r=json.load(open(d+'/report.json'))
    f=json.load(open(d+'/fidelity.json'))
    for x in r['runs']:
        t=x['io']['total']; n=x['results']['transactions']
        bc=x['engine'].get('buffer_cache') or {}
        u=x['engine'].get('undo') or {}
        who='preset' if x['target']=='embedded' else 'maria '
        print(d.split('/')[-1], who, 'tps %.0f young %.3f created %.3f freed %s index %s index_old %s table %s undo %s unused %s undo_alloc %.3f' % (
            x['results']['tps'], t.get('buffer_pages_made_young',0)/n, t.get('buffer_pages_created',0)/n,
            bc.get('owner_freed_pages'), bc.get('owner_index_pages'), bc.get('owner_index_old'), bc.get('owner_table_pages'), bc.get('owner_undo_pages'), bc.get('unused'),
            u.get('undo_pages_allocated',0)/n))
    for row in f['rows']:
        if any(k in row['metric'] for k in ('pool reads','pool writes','index pages','device writes','file-space')):
            print('   ', row['scale'], row['workload'], row['metric'][:45].ljust(45), '%.4f %.4f %.2f%s'%(row['preset_value'],row['real_value'],row['ratio'],' !' if row['outside'] else ''))
