#!/bin/bash
# usage: mdbrun.sh SECONDS RATE OUT.csv  — restore /tmp/mdb-loaded, run sysbench, wait for purge, shut down, parse k_1 chain
set -e
S=$1; R=$2; OUT=$3
rm -rf /tmp/mdb; cp -a /tmp/mdb-loaded /tmp/mdb
PORT=$(cat /tmp/mdb.port)
setsid runuser -u mysql -- /usr/sbin/mariadbd --no-defaults --datadir=/tmp/mdb --socket=/tmp/mdb/sock --port=$PORT --bind-address=127.0.0.1 --innodb-buffer-pool-size=512M --innodb-log-file-size=1073741824 --innodb-flush-method=O_DIRECT --skip-grant-tables --innodb-monitor-enable=all > /tmp/mdb.log 2>&1 &
for i in $(seq 60); do mariadb -h127.0.0.1 -P$PORT -uroot -e "select 1" >/dev/null 2>&1 && break; sleep 1; done
sysbench oltp_update_index --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest --tables=1 --table-size=1000000 --threads=4 --rate=$R --time=$S run > ${OUT%.csv}.sysbench.log
mariadb -h127.0.0.1 -P$PORT -uroot -N -e "select name,count from information_schema.innodb_metrics where name in ('index_page_splits','index_page_merge_attempts','index_page_merge_successful','trx_rseg_history_len','trx_rw_commits','index_page_reorg_attempts')" > ${OUT%.csv}.metrics
for i in $(seq 120); do h=$(mariadb -h127.0.0.1 -P$PORT -uroot -N -e "select count from information_schema.innodb_metrics where name='trx_rseg_history_len'"); [ "$h" = 0 ] && break; sleep 1; done
mariadb -h127.0.0.1 -P$PORT -uroot -N -e "select name,count from information_schema.innodb_metrics where name in ('index_page_splits','index_page_merge_attempts','index_page_merge_successful','trx_rseg_history_len')" >> ${OUT%.csv}.metrics
mariadb -h127.0.0.1 -P$PORT -uroot -e "set global innodb_fast_shutdown=1; shutdown"
while pgrep -x mariadbd >/dev/null; do sleep 1; done
python3 /work/runs/leafchain/ibd.py /tmp/mdb/sbtest/sbtest1.ibd 24 $OUT
