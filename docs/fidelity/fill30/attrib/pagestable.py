import json,sys
print("| `1m` oltp_read_write, per transaction | TPS | PRIMARY read | PRIMARY written | `k_1` read | `k_1` written | system written | pool writes |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for f in sys.argv[1:]:
    r=json.load(open(f+'/report.json'))
    for run in r['runs']:
        t=run['results']['transactions']; tb=run['engine']['tables']
        side='MariaDB' if run['target']=='mariadb' else 'preset'
        sysw = run['server']['counters'].get('innodb_pages.system.pages_written',0)/t if run['target']=='mariadb' else 0
        print('| %s, `%s` | %.0f | %.3f | %.3f | %.3f | %.3f | %s | %.3f |' % (side, f.split('/')[-1], run['results']['tps'], tb['heap_blks_read']/t, tb['heap_blks_written']/t, tb['idx_blks_read']/t, tb['idx_blks_written']/t, ('%.3f'%sysw) if run['target']=='mariadb' else '—', run['io']['total']['buffer_pages_written']/t))
