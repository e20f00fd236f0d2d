#!/usr/bin/env python3
"""Twelve snapshots, 0.25 s apart, of a running MariaDB's LRU list (INNODB_BUFFER_PAGE_LRU: every block's
position, page, type, index, old flag, FREE_PAGE_CLOCK stamp, first-access time) the first
when Com_commit reaches 18,000 (in the measured phase of a 1m oltp_read_write run), with
the status counters after each (pages whose stamp grew between two snapshots were put at
the head meanwhile) and the monotonic clock in ms before and after each (ACCESS_TIME is ut_time_ms(), my_interval_timer's
CLOCK_MONOTONIC in ms, truncated to 32 bits). usage: lru.py FOLDER OUT.json"""
import json, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mdb
folder, out = sys.argv[1], sys.argv[2]
sock = mdb.wait_socket(folder)
q = lambda sql: mdb.query(sock, sql)
while True:
    r = q("SHOW GLOBAL STATUS LIKE 'Com_commit'")
    if r is None:
        if not mdb.running(folder): sys.exit(1)
    elif int(r[0][1]) >= 18000: break
    time.sleep(0.1)
SNAP = ("SELECT LRU_POSITION, SPACE, PAGE_NUMBER, PAGE_TYPE, INDEX_NAME, IS_OLD, FREE_PAGE_CLOCK, "
        "ACCESS_TIME, OLDEST_MODIFICATION > 0 FROM information_schema.INNODB_BUFFER_PAGE_LRU")
snaps = []
for i in range(12):
    a_ms = time.monotonic_ns() // 1_000_000
    rows = q(SNAP)
    b_ms = time.monotonic_ns() // 1_000_000
    st = q("SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_commit', 'Innodb_buffer_pool_pages_old', "
           "'Innodb_buffer_pool_pages_made_young', 'Innodb_pages_created', 'Innodb_buffer_pool_pages_free')")
    snaps.append({'mono_ms_before': a_ms, 'mono_ms_after': b_ms, 'rows': rows, 'status': st})
    time.sleep(0.25)
json.dump({'snaps': snaps}, open(out, 'w'))
