#!/bin/bash
cd /work/runs/fill30
B=/work/main/target/release/mvcclab
for spec in "30 10 p30" "3 0 p3"; do set -- $spec
rm -rf /work/scratch-fill/$3; mkdir -p /work/scratch-fill/$3
flock /work/measure.lock nice -n -5 $B run --design innodb --workload oltp_read_write --tables 1 --table-size 100000 --threads 4 --time $1 --warmup $2 --buffer-pool 8MiB --os-cache 64MiB --rand-seed 1 --rate 587 --data-dir /work/scratch-fill/$3 --report /work/runs/fill30/$3/ > $3.log 2>&1
echo "$3 rc=$? $(date)" >> times
/work/diagtool/target/release/diagtool /work/scratch-fill/$3/innodb $3-chain.csv > $3-diag.txt 2>&1 || /work/diagtool/target/release/diagtool /work/scratch-fill/$3 $3-chain.csv > $3-diag.txt 2>&1
done
echo done-preset >> times
