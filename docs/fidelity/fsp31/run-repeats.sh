#!/bin/bash
OUT=docs/fidelity/fsp31/out-repeats; rm -rf $OUT; mkdir -p $OUT
date > docs/fidelity/fsp31/out-repeats.times
flock /work/measure.lock nice -n -5 mvcclab fidelity --scales 1m,sweep --presets innodb --workloads oltp_update_index,oltp_read_write --load-once --fuse-device --fuse-mode block-device --time 30 --warmup 10 --repeats 3 --report $OUT/ > $OUT/log 2>&1
echo "rc=$? $(date)" >> docs/fidelity/fsp31/out-repeats.times
