#!/usr/bin/env python3
"""Every 5 s while the server runs: the resident k_1 pages' DATA_SIZE and NUMBER_RECORDS
(INNODB_BUFFER_PAGE) and the split/merge counters. usage: mdbhist.py FOLDER OUT.jsonl"""
import json, os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'k1size33'))
import mdb
folder, out = sys.argv[1], sys.argv[2]
sock = mdb.wait_socket(folder)
q = lambda sql: mdb.query(sock, sql)
f = open(out, 'w')
while mdb.running(folder):
    rows = q("SELECT DATA_SIZE, NUMBER_RECORDS, PAGE_NUMBER FROM information_schema.INNODB_BUFFER_PAGE WHERE INDEX_NAME='k_1' AND PAGE_TYPE='INDEX'")
    met = q("SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE NAME IN ('index_page_splits','index_page_merge_attempts','index_page_merge_successful')")
    c = q("SHOW GLOBAL STATUS LIKE 'Com_commit'")
    if rows is not None:
        f.write(json.dumps({'t': time.time(), 'commit': c, 'met': met, 'pages': rows}) + '\n'); f.flush()
    time.sleep(5)
