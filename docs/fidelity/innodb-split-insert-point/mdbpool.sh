#!/bin/bash
# usage: mdbpool.sh WORKLOAD ROWS POOL_BYTES RATE OUT — fresh MariaDB, load, sysbench 45 s, INNODB_BUFFER_PAGE composition at 25 s and 40 s
# (2026-11-27) IS_OLD is an integer in 10.11; rw1m.pool25.txt and rw1m.pool40.txt were read with IS_OLD='YES', so their "old" column counts the young blocks.
set -e
WL=$1; ROWS=$2; POOL=$3; R=$4; OUT=$5
D=/tmp/mdbp; rm -rf $D; mkdir -p $D; chown mysql:mysql $D
mariadb-install-db --user=mysql --datadir=$D > /dev/null 2>&1
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
setsid runuser -u mysql -- /usr/sbin/mariadbd --no-defaults --datadir=$D --socket=$D/sock --port=$PORT --bind-address=127.0.0.1 --innodb-buffer-pool-size=$POOL --innodb-log-file-size=1073741824 --innodb-flush-method=O_DIRECT --innodb-doublewrite=ON --innodb-lru-scan-depth=$(( POOL / 16384 * 1536 / 8192 )) --skip-grant-tables --innodb-monitor-enable=all > $OUT.mdb.log 2>&1 &
for i in $(seq 60); do mariadb -h127.0.0.1 -P$PORT -uroot -e "select 1" >/dev/null 2>&1 && break; sleep 1; done
mariadb -h127.0.0.1 -P$PORT -uroot -e "create database sbtest"
/work/main/target/release/mvcclab run --target mariadb --url mysql://root@127.0.0.1:$PORT/sbtest --workload $WL --tables 1 --table-size $ROWS --time 1 > $OUT.load.log 2>&1
Q="select PAGE_STATE, PAGE_TYPE, coalesce(INDEX_NAME,'-') idx, count(*) n, sum(OLDEST_MODIFICATION>0) dirty, sum(IS_OLD=1) old from information_schema.INNODB_BUFFER_PAGE group by 1,2,3 order by n desc"
sysbench $WL --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest --tables=1 --table-size=$ROWS --threads=4 --rate=$R --time=45 run > $OUT.sysbench.log &
SB=$!
sleep 25; mariadb -h127.0.0.1 -P$PORT -uroot -e "$Q" > $OUT.pool25.txt
mariadb -h127.0.0.1 -P$PORT -uroot -N -e "select name,count from information_schema.innodb_metrics where name in ('buffer_pool_size','buffer_pool_pages_free','buffer_pool_pages_data','buffer_pool_pages_misc','buffer_pool_pages_total')" >> $OUT.pool25.txt
sleep 15; mariadb -h127.0.0.1 -P$PORT -uroot -e "$Q" > $OUT.pool40.txt
mariadb -h127.0.0.1 -P$PORT -uroot -e "show global status like 'Innodb_buffer_pool_pages%'" >> $OUT.pool40.txt
wait $SB
mariadb -h127.0.0.1 -P$PORT -uroot -e "shutdown"
while pgrep -f "datadir=$D" >/dev/null; do sleep 1; done
