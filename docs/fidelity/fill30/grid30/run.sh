#!/bin/bash
# The flagged innodb cells with the per-index rows, three pairs each (release build of d6c4a72+)
cd /work/runs/grid30
B=/work/runs/mvcclab-grid30
date > times
flock /work/measure.lock nice -n -5 $B fidelity --scales 1m,sweep --presets innodb --workloads oltp_update_index,oltp_read_write --load-once --fuse-device --fuse-mode block-device --time 30 --warmup 10 --repeats 3 --report /work/runs/grid30/rep/ > rep.log 2>&1
echo "rep rc=$? $(date)" >> times
