#!/bin/bash
# k_1 leaf fill over time: MariaDB polled each second (INNODB_BUFFER_PAGE), base oltp_read_write
cd /work/runs/fill30
B=/work/main/target/release/mvcclab
date > times
rm -rf /work/scratch-fill/m; mkdir -p /work/scratch-fill/m
python3 poll.py /work/scratch-fill/m mariadb-poll.jsonl & P=$!
flock /work/measure.lock nice -n -5 $B run --target mariadb --workload oltp_read_write --tables 1 --table-size 100000 --threads 4 --time 30 --warmup 10 --buffer-pool 8MiB --os-cache 64MiB --rand-seed 1 --fuse-device --fuse-mode block-device --server-dir /work/scratch-fill/m --report /work/runs/fill30/mariadb/ > mariadb.log 2>&1
echo "mariadb rc=$? $(date)" >> times
sleep 3; kill $P
echo done >> times
