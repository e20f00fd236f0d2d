#!/bin/bash
cd /work/runs/fill30
B=/work/main/target/release/mvcclab
F="--workload oltp_read_write --tables 1 --table-size 100000 --threads 4 --time 30 --warmup 10 --buffer-pool 8MiB --os-cache 64MiB --rand-seed 1 --report-interval 0.1"
for L in ${LATS:-50 150}; do
flock /work/measure.lock nice -n -5 $B run --design innodb $F --rate 463 --latency-us $L --report lat$L/ > lat$L.log 2>&1
echo "lat$L rc=$? $(date)" >> times
done
echo done-lat >> times
