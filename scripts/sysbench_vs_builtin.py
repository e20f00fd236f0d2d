#!/usr/bin/env python3
"""Per-transaction figures of real sysbench against `mvcclab serve` (mvcclab_stat_io after
minus before, divided by sysbench's transactions) beside the built-in driver's report
(io.by_cause divided by results.transactions), per cause, as a Markdown table.

Usage: scripts/sysbench_vs_builtin.py DIR DESIGN  (DIR as scripts/sysbench_vs_builtin.sh left it)
"""
import csv
import json
import re
import sys

COLS = ["blocks_read_4k", "blocks_written_4k", "read_requests", "write_requests",
        "buffer_hits", "buffer_misses", "wal_bytes"]
REPORT = {"blocks_read_4k": "read_blocks_4k", "blocks_written_4k": "write_blocks_4k"}


def stat_io(path):
    return {r[0]: [int(x) for x in r[1:]] for r in csv.reader(open(path)) if r}


def main(d, design):
    before = stat_io(f"{d}/before-{design}.csv")
    after = stat_io(f"{d}/after-{design}.csv")
    text = open(f"{d}/sysbench-{design}.txt").read()
    txns = int(re.search(r"transactions:\s+(\d+)", text).group(1))
    delta = {c: [a - b for a, b in zip(v, before.get(c, [0] * len(v)))] for c, v in after.items()}
    run = json.load(open(f"{d}/builtin-{design}.json"))["runs"][0]
    bt = max(run["results"]["transactions"], 1)
    by_cause = run["io"]["by_cause"]
    print(f"design {design}: sysbench {txns} transactions; built-in {bt}\n")
    print("| cause | figure | sysbench → serve, per txn | built-in driver, per txn |")
    print("|---|---|---:|---:|")
    for cause in sorted(set(delta) | set(by_cause)):
        for i, col in enumerate(COLS):
            s = delta.get(cause, [0] * len(COLS))[i] / txns
            b = by_cause.get(cause, {}).get(REPORT.get(col, col), 0) / bt
            if s or b:
                print(f"| {cause} | {col} | {s:.2f} | {b:.2f} |")
    for i, col in enumerate(COLS):
        s = sum(v[i] for v in delta.values()) / txns
        b = sum(c.get(REPORT.get(col, col), 0) for c in by_cause.values()) / bt
        print(f"| all | {col} | {s:.2f} | {b:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
