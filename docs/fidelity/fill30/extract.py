"""Compact per-sample extract of a run's timeseries.csv: transactions, history list
length, B-tree splits and successful merges per sample (0.1 s here)."""
import csv,sys
src,dst=sys.argv[1],sys.argv[2]
rows=list(csv.DictReader(open(src+'/timeseries.csv')))
k=rows[0].keys()
hk=[c for c in k if c in ('server.engine.history_list_length','server.innodb_metrics.trx_rseg_history_len')][0]
sk=[c for c in k if c.endswith('index_page_splits')][0]
mk=[c for c in k if c.endswith('index_page_merge_successful')][0]
w=csv.writer(open(dst,'w'))
w.writerow(['sample','transactions','history_list_length','index_page_splits','index_page_merge_successful'])
for i,r in enumerate(rows): w.writerow([i,r['transactions'],r[hk],r[sk],r[mk]])
