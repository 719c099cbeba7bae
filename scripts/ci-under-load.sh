#!/bin/bash
# Runs .ci/run N times in a row, each from a fresh clone of this checkout's HEAD, while a CPU-bound
# process (`yes`) runs the whole time: what issue #15 asks CI to survive. Stops at the first red run.
# Each run logs to $OUT/run-K.log; one summary line per run goes to $OUT/summary.txt.
# Usage: scripts/ci-under-load.sh N [OUT]   (OUT defaults to /tmp/ci-under-load)
set -u
N=${1:?usage: scripts/ci-under-load.sh N [OUT]}
OUT=${2:-/tmp/ci-under-load}
REPO=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
yes > /dev/null & HOG=$!
trap 'kill $HOG 2>/dev/null' EXIT
echo "start $(date -u +%FT%TZ) commit $(git -C "$REPO" rev-parse --short HEAD), hog pid $HOG" >> "$OUT/summary.txt"
for k in $(seq 1 "$N"); do
  rm -rf "$OUT/clone" && git clone -q "$REPO" "$OUT/clone"
  start=$(date +%s)
  (cd "$OUT/clone" && PATH=/usr/local/bin:/usr/bin:/bin bash .ci/run > "$OUT/run-$k.log" 2>&1); rc=$?
  echo "run $k: exit $rc after $(( $(date +%s) - start )) s; $(grep -E '^tests:' "$OUT/run-$k.log")" >> "$OUT/summary.txt"
  [ "$rc" -ne 0 ] && break
done
echo "end $(date -u +%FT%TZ)" >> "$OUT/summary.txt"
