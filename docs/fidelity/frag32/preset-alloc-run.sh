#!/bin/bash
# preset alone, 1m oltp_read_write at MariaDB's TPS, printing every undo page allocated and every page freed
cd /work/runs/frag32/diag
DIAG_UNDO_ALLOC=1 flock /work/measure.lock nice -n -5 /work/runs/mvcclab-diag32 run --design innodb --workload oltp_read_write --tables 1 --table-size 1000000 --threads 4 --time 30 --warmup 10 --buffer-pool 64MiB --os-cache 64MiB --rand-seed 1 --rate 850 --report /work/runs/frag32/diag/out/ > log 2> diag.txt
echo "rc=$?" >> log
