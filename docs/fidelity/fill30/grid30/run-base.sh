#!/bin/bash
cd /work/runs/grid30
B=/work/runs/mvcclab-grid30
flock /work/measure.lock nice -n -5 $B fidelity --scales base --presets innodb --workloads oltp_update_index,oltp_read_write --load-once --fuse-device --fuse-mode block-device --time 30 --warmup 10 --repeats 3 --report /work/runs/grid30/base/ > base.log 2>&1
echo "base rc=$? $(date)" >> times
