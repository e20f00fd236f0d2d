#!/usr/bin/env python3
"""The figures of `mvcclab experiment system_versioning` point files (written with
`--shard I/N --report DIR`) before every point of the grid exists, when `mvcclab report
--merge` still refuses the set: per run (design/variant/pool) and phase of one iteration,
statements per second (rows per second for delete_all) and 4 KiB blocks read / written
per statement (per deleted row), as Markdown tables.

Usage: scripts/sysver_points.py [--iteration I] POINT.json...
"""
import json
import sys

PHASES = [
    ("insert", "insert"),
    ("update_non_index", "update c"),
    ("update_index", "update k"),
    ("range_select_first", "range 1st"),
    ("range_select_second", "range 2nd"),
    ("secondary_select_first", "sec. key 1st"),
    ("delete_all", "delete (rows)"),
]


def main(argv):
    it = 3
    if len(argv) > 1 and argv[0] == "--iteration":
        it, argv = int(argv[1]), argv[2:]
    runs = []
    for path in argv:
        with open(path) as f:
            point = json.load(f)
        runs.extend(point["experiment"]["runs"])
    head = "| run | pool MiB | " + " | ".join(h for _, h in PHASES) + " |"
    rule = "|---|---:|" + "---:|" * len(PHASES)
    rate, blocks = [head, rule], [head, rule]
    for r in runs:
        phases = {p["name"]: p for p in r["phases"]}
        pool = r["device"]["buffer_pool_bytes"] / 1048576
        cells_rate, cells_blocks = [], []
        for key, _ in PHASES:
            p = phases.get(f"i{it}_{key}")
            if p is None or not p["ops"]:
                cells_rate.append("")
                cells_blocks.append("")
                continue
            cells_rate.append(f"{p['ops'] / p['elapsed_s']:.0f}")
            po = p["per_op"]
            cells_blocks.append(f"{po['read_blocks_4k']:.2f} / {po['write_blocks_4k']:.2f}")
        name = r["design"]["name"]
        rate.append(f"| {name} | {pool:.1f} | " + " | ".join(cells_rate) + " |")
        blocks.append(f"| {name} | {pool:.1f} | " + " | ".join(cells_blocks) + " |")
    print(f"Statements per second, iteration {it} (delete: rows per second):\n")
    print("\n".join(rate))
    print(f"\n4 KiB blocks per statement, read / written, iteration {it} (delete: per row):\n")
    print("\n".join(blocks))


if __name__ == "__main__":
    main(sys.argv[1:])
