#!/bin/bash
# MariaDB's freed and undo blocks by tablespace during 1m oltp_read_write (polled every 2 s)
cd docs/fidelity/fsp31/freed
B=mvcclab
date > times
rm -rf /tmp/scratch-freed; mkdir -p /tmp/scratch-freed
python3 poll.py /tmp/scratch-freed poll.jsonl & P=$!
flock /work/measure.lock nice -n -5 $B run --target mariadb --workload oltp_read_write --tables 1 --table-size 1000000 --threads 4 --time 30 --warmup 10 --buffer-pool 64MiB --os-cache 64MiB --rand-seed 1 --bound-os-cache --drop-caches --fuse-device --fuse-mode block-device --server-dir /tmp/scratch-freed --report docs/fidelity/fsp31/freed/mariadb/ > mariadb.log 2>&1
echo "mariadb rc=$? $(date)" >> times
sleep 3; kill $P
echo done >> times
