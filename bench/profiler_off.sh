#!/usr/bin/env bash
# bench/profiler_off.sh [ROUNDS]: what the profiler's hook costs while no
# profile records. One build, two runs per round, alternating (and their order
# swapped every other round): bench/profiler_off.lua with WICK_PROFILER_HOOK=0
# (the binding's own op functions, no trampolines) and without (the default: a
# trampoline per op that tests wick_profiling and calls the op). Both pinned to
# one core (CORE, default 0), 1 thread. Prints per op the median ns/op of each
# side over ROUNDS (default 9) and the median of the per-round ratios
# hooked / unhooked (1.00: no cost). About 1 minute on a quiet machine.
#   bench/profiler_off.sh [ROUNDS]        (BUILD_DIR=build, CORE=0, N=50000 ops a loop)
set -euo pipefail
ROUNDS=${1:-9}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
CORE=${CORE:-0}
N=${N:-50000}
cd "$ROOT"
[ -x "$BUILD/wick" ] || { echo "profiler_off.sh: no $BUILD/wick (build first)" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 BLIS_NUM_THREADS=1 WICK_NUM_THREADS=1
run() { # side round
  if [ "$1" = off ]; then
    WICK_PROFILER_HOOK=0 taskset -c "$CORE" "$BUILD/wick" bench/profiler_off.lua "$N" >"$OUT/off.$2"
  else
    taskset -c "$CORE" "$BUILD/wick" bench/profiler_off.lua "$N" >"$OUT/on.$2"
  fi
}
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then run off "$r"; run on "$r"; else run on "$r"; run off "$r"; fi
done
grep -q "hooked	false" "$OUT/off.1" || { echo "profiler_off.sh: WICK_PROFILER_HOOK=0 was not honoured" >&2; exit 1; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
printf '| op (4x4 float32, 1 thread) | no hook (ns/op) | hook, off (ns/op) | hooked / no hook |\n|---|---|---|---|\n'
for name in $(awk '$1 != "hooked" { print $1 }' "$OUT/off.1"); do
  off=$(for r in $(seq "$ROUNDS"); do awk -v n="$name" '$1 == n { print $2 }' "$OUT/off.$r"; done | median)
  on=$(for r in $(seq "$ROUNDS"); do awk -v n="$name" '$1 == n { print $2 }' "$OUT/on.$r"; done | median)
  ratio=$(for r in $(seq "$ROUNDS"); do
    paste <(awk -v n="$name" '$1 == n { print $2 }' "$OUT/on.$r") <(awk -v n="$name" '$1 == n { print $2 }' "$OUT/off.$r")
  done | awk '{ printf "%.4f\n", $1 / $2 }' | median)
  printf '| %s | %s | %s | %.3f |\n' "$name" "$off" "$on" "$ratio"
done
echo "(median of $ROUNDS alternating rounds; ratio: median of the per-round ratios; $(date -u +%H:%M) UTC, $(nproc) CPUs)"
