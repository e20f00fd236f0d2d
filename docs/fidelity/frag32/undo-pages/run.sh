#!/bin/bash
# MariaDB's undo and freed blocks of the system tablespace, by page number, during 1m oltp_read_write
cd /work/runs/frag32/undo-pages
B=/work/runs/mvcclab-frag32
date > times
rm -rf /work/scratch-undo; mkdir -p /work/scratch-undo
python3 poll.py /work/scratch-undo poll.jsonl & P=$!
flock /work/measure.lock nice -n -5 $B run --target mariadb --workload oltp_read_write --tables 1 --table-size 1000000 --threads 4 --time 30 --warmup 10 --buffer-pool 64MiB --os-cache 64MiB --rand-seed 1 --bound-os-cache --drop-caches --fuse-device --fuse-mode block-device --server-dir /work/scratch-undo --report /work/runs/frag32/undo-pages/mariadb/ > mariadb.log 2>&1
echo "mariadb rc=$? $(date)" >> times
sleep 3; kill $P
ls -la /work/scratch-undo >> times 2>&1
echo done >> times
