#!/bin/bash
cd /work/runs/frag32/diag2
DIAG_UNDO_ALLOC=1 flock /work/measure.lock nice -n -5 /work/runs/mvcclab-diag32b run --design innodb --workload oltp_read_write --tables 1 --table-size 1000000 --threads 4 --time 30 --warmup 10 --buffer-pool 64MiB --os-cache 64MiB --rand-seed 1 --rate 680 --report /work/runs/frag32/diag2/out/ > log 2> diag.txt
echo "rc=$?" >> log
