#!/bin/bash
# usage: mdbbase.sh WORKLOAD ROWS POOL SECONDS RATE OUTPREFIX — fresh MariaDB, load by mvcclab (1 s run), sysbench, wait for purge, parse k_1 and PRIMARY leaf chains
set -e
WL=$1; ROWS=$2; POOL=$3; S=$4; R=$5; OUT=$6
D=/tmp/mdbb; rm -rf $D; mkdir -p $D; chown mysql:mysql $D
mariadb-install-db --user=mysql --datadir=$D > /dev/null 2>&1
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
setsid runuser -u mysql -- /usr/sbin/mariadbd --no-defaults --datadir=$D --socket=$D/sock --port=$PORT --bind-address=127.0.0.1 --innodb-buffer-pool-size=$POOL --innodb-log-file-size=1073741824 --innodb-flush-method=O_DIRECT --skip-grant-tables --innodb-monitor-enable=all > $OUT.mdb.log 2>&1 &
for i in $(seq 60); do mariadb -h127.0.0.1 -P$PORT -uroot -e "select 1" >/dev/null 2>&1 && break; sleep 1; done
mariadb -h127.0.0.1 -P$PORT -uroot -e "create database sbtest"
/work/main/target/release/mvcclab run --target mariadb --url mysql://root@127.0.0.1:$PORT/sbtest --workload $WL --tables 1 --table-size $ROWS --time 1 > $OUT.load.log 2>&1
sysbench $WL --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest --tables=1 --table-size=$ROWS --threads=4 --rate=$R --time=10 run > $OUT.warmup.log
mariadb -h127.0.0.1 -P$PORT -uroot -N -e "select name,count from information_schema.innodb_metrics where name in ('index_page_splits','index_page_merge_attempts','index_page_merge_successful','trx_rw_commits')" > $OUT.metrics
sysbench $WL --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest --tables=1 --table-size=$ROWS --threads=4 --rate=$R --time=$S run > $OUT.sysbench.log
mariadb -h127.0.0.1 -P$PORT -uroot -N -e "select name,count from information_schema.innodb_metrics where name in ('index_page_splits','index_page_merge_attempts','index_page_merge_successful','trx_rw_commits')" >> $OUT.metrics
IDS=$(mariadb -h127.0.0.1 -P$PORT -uroot -N -e "select i.INDEX_ID, i.NAME from information_schema.INNODB_SYS_INDEXES i join information_schema.INNODB_SYS_TABLES t using(TABLE_ID) where t.NAME='sbtest/sbtest1'")
for i in $(seq 300); do h=$(mariadb -h127.0.0.1 -P$PORT -uroot -N -e "select count from information_schema.innodb_metrics where name='trx_rseg_history_len'"); [ "$h" = 0 ] && break; sleep 1; done
mariadb -h127.0.0.1 -P$PORT -uroot -e "set global innodb_fast_shutdown=1; shutdown"
while pgrep -f "datadir=$D" >/dev/null; do sleep 1; done
echo "$IDS" | while read id name; do echo "== $name"; python3 /work/runs/leafchain/ibd.py $D/sbtest/sbtest1.ibd $id $OUT.$name.csv; done
