#!/usr/bin/env bash
# bench/profiler_off.sh [ROUNDS]: what the profiler's hook costs while no
# profile records. Two builds of the same tree, run alternating (their order
# swapped every other round): BUILD_DIR (default build, the hook compiled in:
# each of the binding's C functions tests wick_profiling first, WL_FUNCTION in
# src/lua/wick_lua.h) and NOHOOK_DIR (default build-nohook, configured and
# brought up to date here with -DWICK_PROFILER_HOOK=OFF and BUILD_DIR's build
# type: the same functions without the test). Both run
# bench/profiler_off.lua pinned to one core (CORE, default 0), 1 thread.
# Prints per op the median ns/op of each side over ROUNDS (default 9) and the
# median of the per-round ratios hooked / unhooked (1.00: no cost). About 1
# minute on a quiet machine, plus the second build's first time.
#   bench/profiler_off.sh [ROUNDS]        (BUILD_DIR=build, NOHOOK_DIR=build-nohook, CORE=0, N=50000)
set -euo pipefail
ROUNDS=${1:-9}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
NOHOOK=${NOHOOK_DIR:-$ROOT/build-nohook}
CORE=${CORE:-0}
N=${N:-50000}
cd "$ROOT"
[ -x "$BUILD/wick" ] || { echo "profiler_off.sh: no $BUILD/wick (build first)" >&2; exit 1; }
TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD/CMakeCache.txt")
cmake -S "$ROOT" -B "$NOHOOK" -DCMAKE_BUILD_TYPE="${TYPE:-Release}" -DWICK_PROFILER_HOOK=OFF -DWICK_LUA54=OFF >/dev/null
cmake --build "$NOHOOK" -j"$(nproc)" --target wick_runner wick_lua >/dev/null
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
CPUS=$(nproc)
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 BLIS_NUM_THREADS=1 WICK_NUM_THREADS=1
run() { # side round
  if [ "$1" = off ]; then
    taskset -c "$CORE" "$NOHOOK/wick" bench/profiler_off.lua "$N" >"$OUT/off.$2"
  else
    taskset -c "$CORE" "$BUILD/wick" bench/profiler_off.lua "$N" >"$OUT/on.$2"
  fi
}
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then run off "$r"; run on "$r"; else run on "$r"; run off "$r"; fi
done
grep -q "hooked	false" "$OUT/off.1" || { echo "profiler_off.sh: $NOHOOK/wick has the hook (WICK_PROFILER_HOOK=OFF not honoured)" >&2; exit 1; }
grep -q "hooked	true" "$OUT/on.1" || { echo "profiler_off.sh: $BUILD/wick has no hook" >&2; exit 1; }
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
echo "(median of $ROUNDS alternating rounds; ratio: median of the per-round ratios; $(date -u +%H:%M) UTC, $CPUS CPUs, $(uname -m); $(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed "s/^ //"))"
