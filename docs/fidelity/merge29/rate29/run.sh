#!/bin/bash
# MariaDB at half its own rate at base oltp_read_write: does its purge catch up, and do its k_1 splits fall?
cd /work/runs/rate29
B=/work/runs/mvcclab-purge29
date > times
for t in "--target mariadb" "--design innodb"; do
  n=$(echo $t | awk '{print $2}')
  flock /work/measure.lock nice -n -5 $B run $t --workload oltp_read_write --tables 1 --table-size 100000 --threads 4 --time 30 --warmup 10 --buffer-pool 8MiB --os-cache 64MiB --rand-seed 1 --fuse-device --fuse-mode block-device --rate 240 --report /work/runs/rate29/$n/ > $n.log 2>&1
  echo "$n rc=$? $(date)" >> times
done
echo done >> times
