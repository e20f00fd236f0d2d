#!/usr/bin/env python3
"""Every 0.2 s while the server runs: a few InnoDB status counters (one JSON line each);
every 5th sample also the LRU composition by kind. usage: mdbstat.py FOLDER OUT.jsonl"""
import json, os, sys, time, collections
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'k1size33'))
import mdb
folder, out = sys.argv[1], sys.argv[2]
sock = mdb.wait_socket(folder)
q = lambda sql: mdb.query(sock, sql)
NAMES = ('Com_commit','Innodb_buffer_pool_pages_free','Innodb_buffer_pool_pages_data','Innodb_buffer_pool_pages_misc','Innodb_buffer_pool_pages_total',
         'Innodb_buffer_pool_reads','Innodb_history_list_length','Innodb_buffer_pool_pages_made_young','Innodb_pages_created','Innodb_buffer_pool_pages_flushed')
ST = "SHOW GLOBAL STATUS WHERE Variable_name IN (%s)" % ','.join("'%s'" % n for n in NAMES)
MET = "SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE NAME IN ('index_page_splits','index_page_merge_attempts','index_page_merge_successful','index_page_reorg_attempts','buffer_LRU_batch_evict_total_pages','buffer_LRU_batch_flush_total_pages','buffer_LRU_single_flush_num_scan','buffer_LRU_get_free_search')"
K1 = "SELECT COUNT(*), SUM(NUMBER_RECORDS), SUM(DATA_SIZE) FROM information_schema.INNODB_BUFFER_PAGE WHERE INDEX_NAME='k_1' AND PAGE_TYPE='INDEX'"
LRU = "SELECT SPACE, PAGE_TYPE, INDEX_NAME FROM information_schema.INNODB_BUFFER_PAGE_LRU"
f = open(out, 'w'); i = 0
while True:
    st = q(ST)
    if st is None:
        if not mdb.running(folder): break
        time.sleep(0.2); continue
    rec = {'t': time.time(), 'st': {k: v for k, v in st}}
    m = q(MET)
    if m: rec['met'] = {k: v for k, v in m}
    if i % 5 == 0:
        rec['k1'] = q(K1)
        rows = q(LRU)
        if rows:
            c = collections.Counter(mdb.kind([None, r[0], None, r[1], r[2]]) for r in rows)
            rec['lru'] = dict(c)
    f.write(json.dumps(rec) + '\n'); f.flush(); i += 1
    time.sleep(0.2)
