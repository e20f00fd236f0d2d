#!/usr/bin/env python3
"""Poll a running MariaDB (socket found under a folder) for the k_1 leaves in its pool.
Writes one JSON line per sample: t, root page, [ [page, n_recs, data_size], ...], metrics."""
import glob, json, subprocess, sys, time
folder, out = sys.argv[1], sys.argv[2]
sock = None
while sock is None:
    s = glob.glob(folder + '/**/mysqld.sock', recursive=True)
    if s: sock = s[0]
    else: time.sleep(0.5)
def q(sql):
    r = subprocess.run(['mariadb', '-S', sock, '-u', 'root', '-N', '-B', '-e', sql], capture_output=True, text=True)
    if r.returncode: return None
    return [l.split('\t') for l in r.stdout.splitlines()]
f = open(out, 'w')
t0 = time.time()
while True:
    root = q("SELECT PAGE_NO FROM information_schema.INNODB_SYS_INDEXES WHERE NAME='k_1'")
    if root is None and not glob.glob(folder + '/**/mysqld.sock', recursive=True):
        break
    pages = q("SELECT PAGE_NUMBER, NUMBER_RECORDS, DATA_SIZE FROM information_schema.INNODB_BUFFER_PAGE WHERE INDEX_NAME='k_1' AND PAGE_TYPE='INDEX' AND TABLE_NAME LIKE '%sbtest1%'")
    m = q("SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE NAME IN ('index_page_splits','index_page_merge_attempts','index_page_merge_successful','index_page_reorg_attempts','trx_rseg_history_len')")
    tr = q("SHOW GLOBAL STATUS LIKE 'Com_commit'")
    if pages is not None:
        f.write(json.dumps({'t': round(time.time() - t0, 2), 'root': root, 'pages': [[int(a), int(b), int(c)] for a, b, c in pages], 'metrics': dict((a, int(b)) for a, b in (m or [])), 'commits': tr}) + '\n')
        f.flush()
    time.sleep(1)
