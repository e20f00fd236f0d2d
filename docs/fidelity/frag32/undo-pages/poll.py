#!/usr/bin/env python3
"""Poll a running MariaDB (socket under a folder) every 2 s for the page numbers of the
system tablespace's undo and freed blocks in its pool (INNODB_BUFFER_PAGE), with
Innodb_pages_created and Com_commit. One JSON line per sample."""
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
    rows = q("SELECT PAGE_TYPE, IS_OLD, PAGE_NUMBER FROM information_schema.INNODB_BUFFER_PAGE WHERE SPACE = 0 AND PAGE_STATE = 'FILE_PAGE' AND PAGE_TYPE IN ('UNDO_LOG', 'UNKNOWN')")
    if rows is None and not glob.glob(folder + '/**/mysqld.sock', recursive=True):
        break
    tr = q("SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_commit', 'Innodb_pages_created', 'Innodb_buffer_pool_pages_free')")
    if rows is not None:
        f.write(json.dumps({'t': round(time.time() - t0, 2), 'rows': rows, 'status': tr}) + '\n')
        f.flush()
    time.sleep(2)
