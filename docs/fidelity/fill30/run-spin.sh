#!/bin/bash
cd /work/runs/fill30
B=/work/runs/mvcclab-spin30
F="--workload oltp_read_write --tables 1 --table-size 100000 --threads 4 --time 30 --warmup 10 --buffer-pool 8MiB --os-cache 64MiB --rand-seed 1 --report-interval 0.1"
for S in ${SPINS:-100 200}; do
WHATIF_PURGE_SPIN_US=$S flock /work/measure.lock nice -n -5 $B run --design innodb $F --rate 463 --report spin$S/ > spin$S.log 2>&1
echo "spin$S rc=$? $(date)" >> times
done
echo done-spin >> times
