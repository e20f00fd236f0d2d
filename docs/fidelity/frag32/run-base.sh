#!/bin/bash
# Three same-run pairs per cell at base, oltp_update_index and oltp_read_write (release build of dfdfded)
B=${B:-mvcclab}
OUT=${OUT:-docs/fidelity/frag32/out-base}; rm -rf $OUT; mkdir -p $OUT
date > $OUT.times
flock /work/measure.lock nice -n -5 $B fidelity --scales base --presets innodb --workloads oltp_update_index,oltp_read_write --load-once --fuse-device --fuse-mode block-device --time 30 --warmup 10 --repeats 3 --report $OUT/ > $OUT/log 2>&1
echo "rc=$? $(date)" >> $OUT.times
