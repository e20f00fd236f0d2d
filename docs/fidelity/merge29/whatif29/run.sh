#!/bin/bash
# what-if: the preset's allocations never take a block whose frame is resident (freed pages stay as dead weight, new pages created at the head)
cd /work/runs/whatif29
W=/work/runs/mvcclab-whatif29
date > times
WHATIF_NO_RESIDENT_REUSE=1 /work/runs/cell.sh $W /work/runs/whatif29/splits-1m-rw 1m oltp_read_write; echo "splits-1m-rw $(date)" >> times
WHATIF_NO_RESIDENT_REUSE_ANY=1 /work/runs/cell.sh $W /work/runs/whatif29/any-1m-rw 1m oltp_read_write; echo "any-1m-rw $(date)" >> times
echo done >> times
