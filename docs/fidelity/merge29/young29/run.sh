#!/bin/bash
# what-if: the young sublist's move-to-head threshold (buf_page_peek_if_young's evictions) scaled, 1m oltp_read_write
cd /work/runs/young29
W=/work/runs/mvcclab-whatif29b
date > times
for f in 0.25 4; do
  WHATIF_YOUNG_SCALE=$f /work/runs/cell.sh $W /work/runs/young29/scale$f-1m-rw 1m oltp_read_write; echo "scale$f $(date)" >> times
done
echo done >> times
