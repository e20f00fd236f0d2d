#!/bin/bash
# k_1's leaves in MariaDB's pool during a 1m oltp_read_write run and all of them at its end
# (poll.py). usage: run.sh BIN OUTDIR
B=$1; O=$2; mkdir -p $O; S=/work/scratch-k1
date > $O/times
rm -rf $S; mkdir -p $S
python3 $(dirname $0)/poll.py $S $O/poll.jsonl & P=$!
flock /work/measure.lock nice -n -5 $B run --target mariadb --workload oltp_read_write --tables 1 --table-size 1000000 --threads 4 --time 30 --warmup 10 --buffer-pool 64MiB --os-cache 64MiB --rand-seed 1 --bound-os-cache --drop-caches --fuse-device --fuse-mode block-device --server-dir $S --report $O/mariadb/ > $O/mariadb.log 2>&1
echo "mariadb rc=$? $(date)" >> $O/times
sleep 3; kill $P 2>/dev/null
rm -rf $S
