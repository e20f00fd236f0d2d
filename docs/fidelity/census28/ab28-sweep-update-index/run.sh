#!/bin/bash
# A/B at sweep oltp_update_index: A = 8499ea4 (two descents per new secondary entry), B = e494518 (one)
cd /work/runs/ab28
A=/work/runs/census28/mvcclab-census
B=/work/runs/grid28/mvcclab-e494518
date > times
for i in 1 2; do
  /work/runs/cell.sh $A /work/runs/ab28/A$i sweep oltp_update_index; date >> times
  /work/runs/cell.sh $B /work/runs/ab28/B$i sweep oltp_update_index; date >> times
done
