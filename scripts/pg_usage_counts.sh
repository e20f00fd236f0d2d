#!/bin/bash
# The clock-sweep usage counts PostgreSQL gives the pages of sysbench's sbtest1 after one
# statement on an empty pool (contrib/pg_buffercache): the reference of
# crates/engine/tests/buffer_usage_counts.rs.
#
# Usage: scripts/pg_usage_counts.sh DATA_DIR PORT 'SQL' ['SQL' ...]
# DATA_DIR: a cluster made with `initdb -k`, owned by the postgres user, running on PORT
# with its socket in DATA_DIR/../sock, the pg_buffercache extension created, shared_buffers
# above 6 MiB and autovacuum off. Each statement runs on a fresh 20,000-row sbtest1
# (VACUUM ANALYZE, CHECKPOINT), after a restart; prints relation, fork, block, usage
# count and dirty flag of every buffer of sbtest1 and its indexes. FILLFACTOR (default 100)
# is the table's fill factor (below 100: room for HOT updates).
set -euo pipefail
FF=${FILLFACTOR:-100}
DATA=$1 PORT=$2
shift 2
BIN=/usr/lib/postgresql/15/bin
SOCK=$(dirname "$DATA")/sock
P="psql -h $SOCK -p $PORT -U postgres -X -q -At -v ON_ERROR_STOP=1"
pg() { su postgres -c "$P" ; }
for stmt in "$@"; do
  pg >/dev/null <<SQL
DROP TABLE IF EXISTS sbtest1;
CREATE TABLE sbtest1(id serial PRIMARY KEY, k integer NOT NULL DEFAULT 0,
  c char(120) NOT NULL DEFAULT '', pad char(60) NOT NULL DEFAULT '') WITH (fillfactor = $FF);
INSERT INTO sbtest1(id, k, c, pad) SELECT g, (g * 7919) % 10000, lpad(g::text, 119, '0'),
  lpad(g::text, 59, '0') FROM generate_series(1, 20000) g;
CREATE INDEX k_1 ON sbtest1(k);
SQL
  su postgres -c "$P -c 'VACUUM ANALYZE sbtest1' -c CHECKPOINT" >/dev/null
  su postgres -c "$BIN/pg_ctl -D $DATA -l $DATA/../log -m fast restart" >/dev/null
  echo "== $stmt"
  pg <<SQL | grep -E '^(sbtest1|k_1)'
SET enable_seqscan = off; SET enable_bitmapscan = off;
$stmt;
SELECT c.relname || ' fork ' || b.relforknumber || ' blk ' || b.relblocknumber || ' usage '
  || b.usagecount || ' dirty ' || b.isdirty
  FROM pg_buffercache b JOIN pg_class c ON c.relfilenode = b.relfilenode
  WHERE c.relname IN ('sbtest1', 'sbtest1_pkey', 'k_1') ORDER BY 1;
SQL
done
