#!/bin/bash
# usage: [WHAT=undo|index] mdbundo.sh OUT [sysbench extra] — fresh MariaDB (fidelity's 64 MiB settings), load 1M rows by mvcclab,
# sysbench oltp_read_write 45 s at 900 TPS; innodb_metrics and INNODB_BUFFER_PAGE_LRU sampled:
# WHAT=undo (default), every 3 s: undo and system-tablespace pages and FREED frames (page number, LRU position, old, dirty);
# WHAT=index, every 1 s: PRIMARY and k_1 pages and FREED frames (page number, index, LRU position). (This was mdbk1.sh.)
set -e
OUT=$1; shift
D=/tmp/mdbu; rm -rf $D; mkdir -p $D; chown mysql:mysql $D
mariadb-install-db --user=mysql --datadir=$D > /dev/null 2>&1
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
POOL=67108864
setsid runuser -u mysql -- /usr/sbin/mariadbd --no-defaults --datadir=$D --socket=$D/sock --port=$PORT --bind-address=127.0.0.1 --innodb-buffer-pool-size=$POOL --innodb-log-file-size=1073741824 --innodb-flush-method=O_DIRECT --innodb-doublewrite=ON --innodb-lru-scan-depth=768 --skip-grant-tables --innodb-monitor-enable=all > $OUT.mdb.log 2>&1 &
for i in $(seq 60); do mariadb -h127.0.0.1 -P$PORT -uroot -e "select 1" >/dev/null 2>&1 && break; sleep 1; done
M="mariadb -h127.0.0.1 -P$PORT -uroot"
$M -e "create database sbtest"
/work/main/target/release/mvcclab run --target mariadb --url mysql://root@127.0.0.1:$PORT/sbtest --workload oltp_read_write --tables 1 --table-size 1000000 --time 1 > $OUT.load.log 2>&1
sysbench oltp_read_write --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest --tables=1 --table-size=1000000 --threads=4 --rate=900 --time=45 "$@" run > $OUT.sysbench.log &
SB=$!
case ${WHAT:-undo} in
  undo) EVERY=3; Q="SPACE, PAGE_NUMBER, PAGE_TYPE, LRU_POSITION, IS_OLD, OLDEST_MODIFICATION>0 from information_schema.INNODB_BUFFER_PAGE_LRU where PAGE_TYPE in ('UNDO_LOG','UNKNOWN','INODE','ALLOCATED') or SPACE=0" ;;
  index) EVERY=1; Q="PAGE_NUMBER, INDEX_NAME, LRU_POSITION from information_schema.INNODB_BUFFER_PAGE_LRU where INDEX_NAME in ('k_1','PRIMARY') or PAGE_TYPE='UNKNOWN'" ;;
  *) echo "WHAT must be undo or index" >&2; exit 2 ;;
esac
for t in $(seq $EVERY $EVERY 42); do
  sleep $EVERY
  $M -N -e "select $t, name, count from information_schema.innodb_metrics where name in ('buffer_pages_created','trx_rw_commits','index_page_splits','index_page_merge_successful','buffer_LRU_batch_evict_total_pages','buffer_pool_reads')" >> $OUT.metrics
  $M -N -e "select $t, $Q" >> $OUT.lru
done
wait $SB
$M -e "shutdown"
while pgrep -f "datadir=$D" >/dev/null; do sleep 1; done
ls -l $D/ibdata1 > $OUT.ibdata
