#!/bin/bash
# history list length at 0.1 s on both sides: full rate (preset at MariaDB's TPS) and 240 TPS
cd /work/runs/fill30
B=/work/main/target/release/mvcclab
F="--workload oltp_read_write --tables 1 --table-size 100000 --threads 4 --time 30 --warmup 10 --buffer-pool 8MiB --os-cache 64MiB --rand-seed 1 --report-interval 0.1"
flock /work/measure.lock nice -n -5 $B run --target mariadb $F --fuse-device --fuse-mode block-device --report fine-m/ > fine-m.log 2>&1
echo "fine-m rc=$? $(date)" >> times
tps=$(python3 -c "import json;r=json.load(open('fine-m/report.json'));print(round(r['runs'][0]['results']['tps']))")
flock /work/measure.lock nice -n -5 $B run --design innodb $F --rate $tps --report fine-p/ > fine-p.log 2>&1
echo "fine-p rc=$? tps=$tps $(date)" >> times
flock /work/measure.lock nice -n -5 $B run --target mariadb $F --rate 240 --fuse-device --fuse-mode block-device --report fine-m240/ > fine-m240.log 2>&1
echo "fine-m240 rc=$? $(date)" >> times
flock /work/measure.lock nice -n -5 $B run --design innodb $F --rate 240 --report fine-p240/ > fine-p240.log 2>&1
echo "fine-p240 rc=$? $(date)" >> times
echo done-fine >> times
