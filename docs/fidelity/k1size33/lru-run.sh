#!/bin/bash
# An LRU snapshot of MariaDB (lru.py) and of the preset (a throwaway build writing the
# same at the end of the measured phase, DIAG_LRU, and, DIAG_LRU_AT seconds after the database opened,
# twelve snapshots 0.25 s apart,
# preset-lru.{0..11} with their times in preset-lru.t) in 1m oltp_read_write. usage: lru-run.sh MARIADB_BIN DIAG_BIN OUTDIR
B=$1; D=$2; O=$3; mkdir -p $O; S=/work/scratch-k1
date > $O/times
rm -rf $S; mkdir -p $S
python3 $(dirname $0)/lru.py $S $O/mariadb-lru.json & P=$!
flock /work/measure.lock nice -n -5 $B run --target mariadb --workload oltp_read_write --tables 1 --table-size 1000000 --threads 4 --time 30 --warmup 10 --buffer-pool 64MiB --os-cache 64MiB --rand-seed 1 --bound-os-cache --drop-caches --fuse-device --fuse-mode block-device --server-dir $S --report $O/mariadb/ > $O/mariadb.log 2>&1
echo "mariadb rc=$? $(date)" >> $O/times
sleep 2; kill $P 2>/dev/null; rm -rf $S
DIAG_LRU=$O/preset-lru.txt DIAG_LRU_AT=${AT:-35} flock /work/measure.lock nice -n -5 $D run --design innodb --workload oltp_read_write --tables 1 --table-size 1000000 --threads 4 --time 30 --warmup 10 --buffer-pool 64MiB --os-cache 64MiB --rand-seed 1 --rate 624.56 --warmup-rate 555.22 --report $O/preset/ > $O/preset.log 2>&1
echo "preset rc=$? $(date)" >> $O/times
