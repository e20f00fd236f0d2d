#!/usr/bin/env bash
# Real sysbench against `mvcclab serve` beside the built-in driver on the same design
# (issue 31 item 5): serve's mvcclab_stat_io before and after sysbench's run, then
# `mvcclab run` with the same workload, size, threads and time. Per-transaction table:
# scripts/sysbench_vs_builtin.py DIR DESIGN. Usage: scripts/sysbench_vs_builtin.sh [DESIGN]
set -eu
BIN=${BIN:-target/release/mvcclab}
D=${OUT:-/tmp/mvcclab-sysbench-vs-builtin}
mkdir -p $D
DESIGN=${1:-postgres}
$BIN serve --design $DESIGN --buffer-pool 128MiB > $D/serve-$DESIGN.out 2>&1 &
SPID=$!
for i in $(seq 50); do grep -q listening $D/serve-$DESIGN.out && break; sleep 0.2; done
PORT=$(sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' $D/serve-$DESIGN.out | head -1)
SB="sysbench oltp_read_write --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=$PORT --pgsql-user=postgres --pgsql-db=postgres --tables=1 --table-size=10000"
$SB prepare > $D/prepare-$DESIGN.txt
psql -h 127.0.0.1 -p $PORT -U postgres -At -F, -c 'SELECT * FROM mvcclab_stat_io' > $D/before-$DESIGN.csv
$SB --threads=2 --time=20 run > $D/sysbench-$DESIGN.txt
psql -h 127.0.0.1 -p $PORT -U postgres -At -F, -c 'SELECT * FROM mvcclab_stat_io' > $D/after-$DESIGN.csv
kill -TERM $SPID; wait $SPID || true
$BIN run --design $DESIGN --workload oltp_read_write --tables 1 --table-size 10000 --threads 2 --time 20 \
  --warmup 0 --buffer-pool 128MiB --format json --output $D/builtin-$DESIGN.json --quiet
