#!/usr/bin/env python3
"""From poll.py's samples (poll.jsonl): per sample, MariaDB's resident undo pages of the
system tablespace by extent (64 pages), its freed blocks there (INNODB_BUFFER_PAGE shows a
freed block with page number 0, so only their count), and pages created per commit since
the sample before."""
import collections, json, sys
prev = None
print('t_s  undo_pages  by_extent(extent:pages)  freed_blocks  created  commits')
for line in open(sys.argv[1] if len(sys.argv) > 1 else 'poll.jsonl'):
    d = json.loads(line)
    st = {k: float(v) for k, v in d['status']} if d['status'] else {}
    undo = [int(r[2]) for r in d['rows'] if r[0] == 'UNDO_LOG']
    freed = sum(1 for r in d['rows'] if r[0] == 'UNKNOWN')
    ext = sorted(collections.Counter(p // 64 for p in undo).items())
    cur = (st.get('Innodb_pages_created', 0), st.get('Com_commit', 0))
    dc = (int(cur[0] - prev[0]), int(cur[1] - prev[1])) if prev else ('', '')
    prev = cur
    print(f"{d['t']:6.2f}  {len(undo):4d}  {' '.join(f'{x}:{n}' for x, n in ext):28s}  {freed:4d}  {dc[0]}  {dc[1]}")
