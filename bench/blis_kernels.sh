#!/usr/bin/env bash
# bench/blis_kernels.sh [ROUNDS]: BLIS's 'haswell' (AVX2) kernels against the
# ones wick lets it choose (cpu_backend.c: 'skx' where 512-bit FMAs do twice
# the work of 256-bit ones), float32 products at the ports' shapes
# (bench/gemm_shapes.lua), 1 thread pinned, runs alternating. Prints per shape
# the median GFLOP/s of each side over ROUNDS (default 5) and the median of the
# per-round ratios. Only for a build linked with BLIS.
# (BLIS_ARCH_TYPE=haswell would not do: BLIS reads a number, and a name reads
# as 0, which is 'skx'.)
#   bench/blis_kernels.sh [ROUNDS]        (BUILD_DIR=build, CORE=0)
set -euo pipefail
ROUNDS=${1:-5}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
CORE=${CORE:-0}
cd "$ROOT"
[ -x "$BUILD/wick" ] || { echo "blis_kernels.sh: no $BUILD/wick (build first)" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
CPU=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed "s/^ //")
export OMP_NUM_THREADS=1 BLIS_NUM_THREADS=1 WICK_NUM_THREADS=1
unset BLIS_ARCH_TYPE
# BLIS reads BLIS_ARCH_TYPE as a number (its arch_t): the number of 'haswell'
LIB=$(ldd "$BUILD/wick" | awk '/libblis/ { print $3 }')
[ -n "$LIB" ] || { echo "blis_kernels.sh: $BUILD/wick is not linked with BLIS" >&2; exit 1; }
HASWELL=$(python3 -c "
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1]); lib.bli_arch_string.restype = ctypes.c_char_p
print([lib.bli_arch_string(i) for i in range(8)].index(b'haswell'))" "$LIB")
CHOSEN=$(BLIS_ARCH_DEBUG=1 taskset -c "$CORE" "$BUILD/wick" -e 'local w = require("wick"); local _ = w.ones(64, 64):matmul(w.ones(64, 64))' 2>&1 |
  sed -n "s/.*selecting sub-configuration '\([a-z0-9_]*\)'.*/\1/p" | head -1)
run() { # side round
  if [ "$1" = haswell ]; then BLIS_ARCH_TYPE=$HASWELL taskset -c "$CORE" "$BUILD/wick" bench/gemm_shapes.lua >"$OUT/haswell.$2"
  else taskset -c "$CORE" "$BUILD/wick" bench/gemm_shapes.lua >"$OUT/chosen.$2"; fi
}
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then run haswell "$r"; run chosen "$r"; else run chosen "$r"; run haswell "$r"; fi
done
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
printf '| float32 product, 1 thread | haswell (GFLOP/s) | %s, wick'"'"'s choice (GFLOP/s) | chosen / haswell |\n|---|---|---|---|\n' "${CHOSEN:-?}"
for shape in $(cut -f1 "$OUT/haswell.1"); do
  h=$(for r in $(seq "$ROUNDS"); do awk -v s="$shape" '$1 == s { print $2 }' "$OUT/haswell.$r"; done | median)
  c=$(for r in $(seq "$ROUNDS"); do awk -v s="$shape" '$1 == s { print $2 }' "$OUT/chosen.$r"; done | median)
  ratio=$(for r in $(seq "$ROUNDS"); do
    paste <(awk -v s="$shape" '$1 == s { print $2 }' "$OUT/chosen.$r") <(awk -v s="$shape" '$1 == s { print $2 }' "$OUT/haswell.$r")
  done | awk '{ printf "%.4f\n", $1 / $2 }' | median)
  printf '| %s | %s | %s | %.2f |\n' "$shape" "$h" "$c" "$ratio"
done
echo "(median of $ROUNDS alternating rounds; $(date -u +%H:%M) UTC; $CPU)"
