#!/bin/bash
cd /work/runs/fill30
for S in 200 0; do
WHATIF_PURGE_SPIN_US=$S /work/runs/cell.sh /work/runs/mvcclab-spin30 /work/runs/fill30/c1m-spin$S 1m oltp_read_write > c1m-spin$S.log 2>&1
echo "c1m-spin$S rc=$? $(date)" >> times
done
echo done-c1m >> times
