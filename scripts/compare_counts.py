#!/usr/bin/env python3
"""Counts of two or more mvcclab report JSON files side by side, for checking that a change
moved no count (issue 22: "the same counts before and after").

Prints, for each run (design) and each counted field (transactions, operations, 4 KiB
blocks and requests by cause, buffer hits and misses, WAL bytes and records, engine and
table counters), the value in every file, and the spread between them in percent. Timing
fields (latencies, elapsed, TPS, waits) are left out: they are not counts.

Usage: scripts/compare_counts.py base1.json base2.json new1.json [--tolerance-from 2]
  --tolerance-from N: the first N files are the base runs; each later file's value must
  lie within the base runs' range (min..max), widened by 0.5 % of it plus 2 units; lines
  outside are marked OUT and the exit code is 1.
"""
import json
import sys

SECTIONS = (".results.", ".io.", ".engine.", ".space.", ".phases")
TIMING_SUFFIXES = ("_us", "_ms", "_s", "tps", "qps", "_pct")


def flatten(x, p="", out=None):
    out = {} if out is None else out
    if isinstance(x, dict):
        for k, v in x.items():
            flatten(v, f"{p}.{k}" if p else k, out)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            flatten(v, f"{p}[{i}]", out)
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        out[p] = x
    return out


def counted(path):
    leaf = path.split(".")[-1]
    if not any(s in path for s in SECTIONS):
        return False
    if leaf.endswith(TIMING_SUFFIXES) or "latency" in path or "timeseries" in path:
        return False
    return True


def main(argv):
    base_n = None
    files = []
    it = iter(argv)
    for a in it:
        if a == "--tolerance-from":
            base_n = int(next(it))
        else:
            files.append(a)
    flats = [flatten(json.load(open(f))) for f in files]
    keys = sorted({k for f in flats for k in f if counted(k)})
    bad = 0
    print("field\t" + "\t".join(files) + "\tspread_%")
    for k in keys:
        vals = [f.get(k) for f in flats]
        nums = [v for v in vals if v is not None]
        if not nums:
            continue
        lo, hi = min(nums), max(nums)
        spread = 0.0 if hi == 0 else 100.0 * (hi - lo) / max(abs(hi), 1e-9)
        mark = ""
        if base_n:
            b = [v for v in vals[:base_n] if v is not None]
            if b:
                blo, bhi = min(b), max(b)
                slack = 0.005 * max(abs(bhi), abs(blo)) + 2
                for v in vals[base_n:]:
                    if v is not None and not (blo - slack <= v <= bhi + slack):
                        mark = "\tOUT"
                        bad += 1
                        break
        print(f"{k}\t" + "\t".join("-" if v is None else f"{v:g}" for v in vals) + f"\t{spread:.2f}{mark}")
    if base_n:
        print(f"# {bad} field(s) outside the base runs' spread")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
