#!/usr/bin/env python3
"""The figures of `mvcclab experiment system_versioning` point files (written with
`--shard I/N --report DIR`) before every point of the grid exists, when `mvcclab report
--merge` still refuses the set: per run (design/variant/pool) and phase of one iteration,
statements per second (rows per second for delete_all) and 4 KiB blocks read / written
per statement (per deleted row), as Markdown tables.

With `--phase NAME` (a phase name without its `iN_` prefix, e.g. `range_select_first`,
`delete_all`) it prints that phase across the iterations instead: per run and iteration,
seconds, statements per second and 4 KiB blocks read / written per statement, for
trends such as the seed's "range selects degrade as history grows".

Usage: scripts/sysver_points.py [--iteration I | --phase NAME] POINT.json...
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


def load_runs(paths):
    runs = []
    for path in paths:
        with open(path) as f:
            point = json.load(f)
        runs.extend(point["experiment"]["runs"])
    return runs


def trend(phase, runs):
    """One phase over the iterations: `s · statements/s · read / written per statement`."""
    iterations = sorted(
        {int(p["name"].split("_", 1)[0][1:]) for r in runs for p in r["phases"]
         if p["name"].split("_", 1)[1] == phase}
    )
    if not iterations:
        sys.exit(f"no phase named {phase!r} in these points (names look like i1_insert)")
    print(f"{phase} per iteration: seconds · statements per second · 4 KiB blocks read / "
          "written per statement (delete_all: per row)\n")
    print("| run | pool MiB | " + " | ".join(f"iteration {i}" for i in iterations) + " |")
    print("|---|---:|" + "---:|" * len(iterations))
    for r in runs:
        phases = {p["name"]: p for p in r["phases"]}
        cells = []
        for i in iterations:
            p = phases.get(f"i{i}_{phase}")
            if p is None or not p["ops"]:
                cells.append("")
                continue
            po = p["per_op"]
            cells.append(
                f"{p['elapsed_s']:.1f} · {p['ops'] / p['elapsed_s']:.0f} · "
                f"{po['read_blocks_4k']:.2f} / {po['write_blocks_4k']:.2f}"
            )
        pool = r["device"]["buffer_pool_bytes"] / 1048576
        print(f"| {r['design']['name']} | {pool:.1f} | " + " | ".join(cells) + " |")


def main(argv):
    it = 3
    if len(argv) > 1 and argv[0] == "--phase":
        trend(argv[1], load_runs(argv[2:]))
        return
    if len(argv) > 1 and argv[0] == "--iteration":
        it, argv = int(argv[1]), argv[2:]
    runs = load_runs(argv)
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
