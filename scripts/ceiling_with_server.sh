#!/usr/bin/env bash
# The FUSE device's ceiling with a real server running on it (docs/benchmarks.md, "FUSE
# device ceiling"): starts a managed PostgreSQL on mvcclab's device serving sysbench
# oltp_point_select from one client, and runs scripts/fuse_ceiling.py on the same mount
# while it runs.
#
# Usage: scripts/ceiling_with_server.sh file-system|block-device [MVCCLAB] [WORK_DIR]
#   MVCCLAB   the mvcclab binary (default: target/release/mvcclab; build it with
#             `cargo build --release -p mvcclab`)
#   WORK_DIR  scratch folder for the server (default: a new temporary folder, removed after)
# Needs root (FUSE mount; block-device mode attaches a loop device), python3, PostgreSQL 15.
set -euo pipefail
MODE=${1:?usage: $0 file-system|block-device [MVCCLAB] [WORK_DIR]}
case "$MODE" in file-system|block-device) ;; *) echo "mode must be file-system or block-device, got '$MODE'" >&2; exit 2;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${2:-$ROOT/target/release/mvcclab}
[ -x "$BIN" ] || { echo "no mvcclab binary at $BIN (cargo build --release -p mvcclab)" >&2; exit 2; }
WORK=${3:-$(mktemp -d)}
mkdir -p "$WORK/server"
LOG="$WORK/run.log"
"$BIN" run --target postgresql --fuse-device --fuse-mode "$MODE" --workload oltp_point_select \
  --table-size 10000 --threads 1 --time 75 --warmup 1 --server-dir "$WORK/server" \
  --report "$WORK/report" > "$LOG" 2>&1 &
RUN=$!
for _ in $(seq 1 120); do grep -q "loading" "$LOG" && break; sleep 1; done
sleep 8
DIR=$(ls -d "$WORK"/server/mvcclab-postgresql-*/ | head -1)
if [ "$MODE" = block-device ]; then TARGET=$DIR/mnt; else TARGET=$DIR/device; fi
echo "ceiling on $TARGET, with the server running"
python3 "$ROOT/scripts/fuse_ceiling.py" "$TARGET" 3 4
wait "$RUN"
grep -E "^tps" "$LOG"
[ -n "${3:-}" ] || rm -rf "$WORK"
