#!/bin/bash
# One base oltp_update_index MariaDB run (fresh load, the fidelity pair's flags) with a
# poller beside it: mdbstat.py (status counters and the LRU list by kind) or mdbhist.py
# (the resident k_1 pages). usage: run-mdb.sh stat|hist BIN OUT
P=$1; B=$2; O=$3; mkdir -p $O; S=/work/scratch-k1b
rm -rf $S; mkdir -p $S
python3 $(dirname $0)/mdb$P.py $S $O/$P.jsonl & PID=$!
flock /work/measure.lock nice -n -5 $B run --target mariadb --workload oltp_update_index --tables 1 --table-size 100000 --threads 4 --time 30 --warmup 10 --buffer-pool 8MiB --os-cache 64MiB --rand-seed 1 --fuse-device --fuse-mode block-device --server-dir $S --report $O/mariadb/ > $O/mariadb.log 2>&1
echo "mariadb rc=$? $(date)" >> $O/times
sleep 2; kill $PID 2>/dev/null; rm -rf $S
