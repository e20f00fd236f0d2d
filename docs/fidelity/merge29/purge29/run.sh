#!/bin/bash
# A/B of purge's one search per secondary entry: A = mvcclab-rep29 (ddb3737: lookup then delete), B = purge29 (delete_where)
cd /work/runs/purge29
A=/work/runs/mvcclab-rep29
B=/work/runs/mvcclab-purge29
date > times
for i in 1 2; do
  if [ $i = 1 ]; then order="A B"; else order="B A"; fi
  for s in $order; do
    eval BIN=\$$s
    /work/runs/cell.sh $BIN /work/runs/purge29/$s$i-1m-read_write 1m oltp_read_write; echo "$s$i $(date)" >> times
  done
done
echo done >> times
