#!/usr/bin/env python3
"""k_1 in a running MariaDB's pool during a sysbench run, and k_1's whole leaf level at the
end. Every 3 s: the k_1 INDEX pages in INNODB_BUFFER_PAGE (count, old, records, data
bytes) with Com_commit. When Com_commit reaches 18,000 (in the measured phase: the warm-up
ends near 5,800, the phase near 27,000-32,000; the server stops too soon after the phase
for a scan then), a covering scan of k_1 (SELECT COUNT(k) ... FORCE INDEX (k_1), READ
UNCOMMITTED so that no entry sends it to the clustered index for an older version)
reads every leaf into the pool, and the same census is taken again: with the pool's 4,000
frames it then holds all of k_1's live pages (a freed page is type UNKNOWN, not
counted). One JSON line per sample. usage: poll.py FOLDER OUT.jsonl"""
import json, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mdb
folder, out = sys.argv[1], sys.argv[2]
sock = mdb.wait_socket(folder)
errors = []
q = lambda sql: mdb.query(sock, sql, errors)
CENSUS = ("SELECT COUNT(*), SUM(IS_OLD = 1), SUM(NUMBER_RECORDS), SUM(DATA_SIZE), "
          "SUM(NUMBER_RECORDS < 600), SUM(OLDEST_MODIFICATION > 0) "
          "FROM information_schema.INNODB_BUFFER_PAGE WHERE INDEX_NAME = 'k_1' "
          "AND PAGE_TYPE = 'INDEX' AND PAGE_STATE = 'FILE_PAGE'")
def commits():
    r = q("SHOW GLOBAL STATUS LIKE 'Com_commit'")
    return int(r[0][1]) if r else None
f = open(out, 'w')
t0 = time.time()
last, grew, still_since = None, False, None
next_census = 0.0
while True:
    c = commits()
    if c is None:
        if not mdb.running(folder): break
        time.sleep(0.2); continue
    now = time.time()
    if last is not None and c > last: grew, still_since = True, None
    elif grew and still_since is None: still_since = now
    last = c
    if c >= 18000:
        before = q(CENSUS)
        t1 = time.time()
        n = q("SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED; SELECT COUNT(k) FROM sbtest.sbtest1 FORCE INDEX (k_1)")
        after = q(CENSUS)
        f.write(json.dumps({'t': round(now - t0, 2), 'end': True, 'commits': c, 'before_scan': before, 'rows': n, 'scan_s': round(time.time() - t1, 2), 'after_scan': after, 'errors': errors[-3:]}) + '\n')
        f.flush(); break
    if now >= next_census:
        f.write(json.dumps({'t': round(now - t0, 2), 'commits': c, 'census': q(CENSUS)}) + '\n'); f.flush()
        next_census = now + 3
    time.sleep(0.1)
