#!/bin/bash
# A/B of the right merge: A = ceefb77 (the right sibling moves into the leaf), B = 23e7dbb (the leaf moves into its right sibling, InnoDB)
cd /work/runs/ab29
A=/work/runs/mvcclab-ceefb77
B=/work/runs/mvcclab-merge29
date > times
for i in 1 2 3; do
  for c in "sweep oltp_update_index" "1m oltp_update_index" "1m oltp_read_write"; do
    set -- $c
    if [ $i = 3 ] && [ $1 = 1m ]; then continue; fi
    tag=$(echo $1-$2 | sed 's/oltp_//')
    if [ $((i % 2)) = 1 ]; then first=A; second=B; else first=B; second=A; fi
    for s in $first $second; do
      eval BIN=\$$s
      /work/runs/cell.sh $BIN /work/runs/ab29/$s$i-$tag $1 $2; echo "$s$i-$tag $(date)" >> times
    done
  done
done
echo done >> times
