#!/bin/bash
# what-if: the preset's purge wake interval (MariaDB's master task wakes purge once a second) at base oltp_read_write
cd /work/runs/wake29
W=/work/runs/mvcclab-whatif29c
date > times
for ms in 0 3000; do
  WHATIF_PURGE_WAKE_MS=$ms /work/runs/cell.sh $W /work/runs/wake29/wake$ms-base-rw base oltp_read_write; echo "wake$ms $(date)" >> times
done
echo done >> times
