#!/usr/bin/env bash
# bench/gemm_kernels.sh [ROUNDS]: float32 products at the ports' shapes
# (bench/gemm_shapes.lua) three ways, runs alternating, 1 thread pinned (or
# WICK_NUM_THREADS, then CORES): BLIS only (WICK_NO_AVX512_F32=1), wick as it
# chooses (its AVX-512 kernel where C has few rows or columns, src/cpu/cpu_gemm.c),
# and PyTorch from PyPI (MKL). Prints per shape the median GFLOP/s of each side
# over ROUNDS (default 5) and the medians of the per-round ratios.
#   bench/gemm_kernels.sh [ROUNDS]        (BUILD_DIR=build, CORES=0)
set -euo pipefail
ROUNDS=${1:-5}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
cd "$ROOT"
[ -x "$BUILD/wick" ] || { echo "gemm_kernels.sh: no $BUILD/wick (build first)" >&2; exit 1; }
PY=$("$ROOT/../shared/bench/setup-torch.sh")
export WICK_NUM_THREADS=${WICK_NUM_THREADS:-1}
CORES=${CORES:-$([ "$WICK_NUM_THREADS" = 1 ] && echo 0 || echo "0-$((WICK_NUM_THREADS - 1))")}
export OMP_NUM_THREADS=$WICK_NUM_THREADS MKL_NUM_THREADS=$WICK_NUM_THREADS BLIS_NUM_THREADS=1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
CPU=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed "s/^ //")
run() { # side round
  case $1 in
  blis) WICK_NO_AVX512_F32=1 taskset -c "$CORES" "$BUILD/wick" bench/gemm_shapes.lua >"$OUT/blis.$2" ;;
  wick) taskset -c "$CORES" "$BUILD/wick" bench/gemm_shapes.lua >"$OUT/wick.$2" ;;
  torch) taskset -c "$CORES" "$PY" bench/gemm_shapes_torch.py >"$OUT/torch.$2" ;;
  esac
}
for r in $(seq "$ROUNDS"); do
  case $((r % 3)) in
  1) run blis "$r"; run wick "$r"; run torch "$r" ;;
  2) run wick "$r"; run torch "$r"; run blis "$r" ;;
  0) run torch "$r"; run blis "$r"; run wick "$r" ;;
  esac
done
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
col() { for r in $(seq "$ROUNDS"); do awk -v s="$2" '$1 == s { print $2 }' "$OUT/$1.$r"; done; }
ratio() { paste <(col "$1" "$3") <(col "$2" "$3") | awk '{ printf "%.4f\n", $1 / $2 }' | median; }
printf '| float32 product (GFLOP/s), %s thread(s) | BLIS only | wick | PyTorch | wick / BLIS | wick / PyTorch |\n|---|---|---|---|---|---|\n' "$WICK_NUM_THREADS"
for shape in $(cut -f1 "$OUT/wick.1"); do
  printf '| %s | %s | %s | %s | %.2f | %.2f |\n' "$shape" "$(col blis "$shape" | median)" "$(col wick "$shape" | median)" \
    "$(col torch "$shape" | median)" "$(ratio wick blis "$shape")" "$(ratio wick torch "$shape")"
done
echo "(median of $ROUNDS alternating rounds; $(date -u +%H:%M) UTC; $CPU)"
