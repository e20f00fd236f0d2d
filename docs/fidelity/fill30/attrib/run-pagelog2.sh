#!/bin/bash
cd /work/runs/fill30
rm -f pagelog-m.csv poollog-p.csv
WHATIF_PAGELOG=/work/runs/fill30/pagelog-m.csv WHATIF_POOLLOG=/work/runs/fill30/poollog-p.csv /work/runs/cell.sh /work/runs/mvcclab-pagelog30b /work/runs/fill30/c1m-log2 1m oltp_read_write > c1m-log2.log 2>&1
echo "c1m-log2 rc=$? $(date)" >> times
