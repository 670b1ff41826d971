#!/usr/bin/env bash
# bench/pair.sh NAME [RUNS]: bench/NAME.lua (wick) against bench/NAME_torch.py
# (PyTorch, the venv's) at 1 thread pinned to one core on both sides, runs
# alternating; prints each case's median over RUNS (default 5) and the ratio
# wick / PyTorch (below 1: wick is faster). Each side prints `case<TAB>ms` lines.
# THREADS=n: n threads on both sides, pinned to cores CORE .. CORE + n - 1.
set -euo pipefail
NAME=$1
RUNS=${2:-5}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
PYTHON=${PYTHON:-$HOME/.cache/wick-torch-venv/bin/python}
CORE=${CORE:-0}
THREADS=${THREADS:-1}
CORES=$CORE
[ "$THREADS" -gt 1 ] && CORES="$CORE-$((CORE + THREADS - 1))"
cd "$ROOT"
[ -x "$BUILD/wick" ] || { cmake -S . -B "$BUILD" >/dev/null && cmake --build "$BUILD" -j2 >/dev/null; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS BLIS_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS
for _ in $(seq "$RUNS"); do
  taskset -c "$CORES" "$BUILD/wick" "bench/$NAME.lua" "$THREADS" >>"$OUT/wick"
  taskset -c "$CORES" "$PYTHON" "bench/${NAME}_torch.py" "$THREADS" >>"$OUT/torch"
done
median() { # file name
  awk -v n="$2" '$1 == n { print $2 }' "$1" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
printf '| case (ms per call, %s thread(s)) | wick | PyTorch | wick / PyTorch |\n|---|---|---|---|\n' "$THREADS"
for name in $(awk '{ print $1 }' "$OUT/wick" | awk '!seen[$0]++'); do
  w=$(median "$OUT/wick" "$name"); t=$(median "$OUT/torch" "$name")
  printf '| %s | %s | %s | %s |\n' "$name" "$w" "$t" "$(awk -v a="$w" -v b="$t" 'BEGIN { printf "%.2f", a / b }')"
done
