#!/usr/bin/env python3
"""Poll a running MariaDB (socket under a folder) for the freed (PAGE_TYPE UNKNOWN) and undo
blocks of its pool by tablespace, every 2 s. One JSON line per sample."""
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
    rows = q("SELECT SPACE, PAGE_TYPE, IS_OLD, OLDEST_MODIFICATION > 0, COUNT(DISTINCT BLOCK_ID) FROM information_schema.INNODB_BUFFER_PAGE WHERE PAGE_STATE = 'FILE_PAGE' AND PAGE_TYPE NOT IN ('INDEX') GROUP BY 1, 2, 3, 4")
    if rows is None and not glob.glob(folder + '/**/mysqld.sock', recursive=True):
        break
    tr = q("SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_commit', 'Innodb_pages_created')")
    if rows is not None:
        f.write(json.dumps({'t': round(time.time() - t0, 2), 'rows': rows, 'status': tr}) + '\n')
        f.flush()
    time.sleep(2)
