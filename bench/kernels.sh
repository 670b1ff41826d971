#!/bin/sh
# The transformer kernels, wick (bench/kernels.lua) against PyTorch
# (bench/kernels_torch.py): one thread on each side, pinned to one core,
# ROUNDS alternating runs; per case the median over rounds of each side's
# fastest call, the ratio wick / PyTorch (below 1: wick is faster) and the
# range of the ratios round by round.
#
#   bench/kernels.sh [build-dir]     (ROUNDS=5 MIN_TIME=0.3 CORE=0 SETS=2 ONLY= PYTHON=... to change;
#                                     SETS=1: nanoGPT's shapes only; ONLY=gelu: one case)
set -eu
BUILD=${1:-build}
ROUNDS=${ROUNDS:-5}
MIN_TIME=${MIN_TIME:-0.3}
CORE=${CORE:-0}
SETS=${SETS:-2}
ONLY=${ONLY:+--only $ONLY}
PYTHON=${PYTHON:-$HOME/.cache/wick-torch-venv/bin/python}
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CPU=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
echo "CPU: $CPU; 1 thread pinned to core $CORE; $ROUNDS alternating rounds; fastest call per round, median over rounds"
r=1
while [ "$r" -le "$ROUNDS" ]; do
  taskset -c "$CORE" "$BUILD/wick" bench/kernels.lua --threads 1 --min-time "$MIN_TIME" --sets "$SETS" $ONLY | grep _us= >>"$TMP/wick"
  taskset -c "$CORE" "$PYTHON" bench/kernels_torch.py --threads 1 --min-time "$MIN_TIME" --sets "$SETS" $ONLY | grep _us= >>"$TMP/torch"
  r=$((r + 1))
done
# median over rounds per (case, shape, column)
med() { # file case shape column
  grep "^$2 *$3 " "$1" | sed "s/.*$4=\([0-9.]*\).*/\1/" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
# the range of the per-round ratios (round r of wick against round r of PyTorch)
spread() { # case shape column
  grep "^$1 *$2 " "$TMP/wick" | sed "s/.*$3=\([0-9.]*\).*/\1/" >"$TMP/w1"
  grep "^$1 *$2 " "$TMP/torch" | sed "s/.*$3=\([0-9.]*\).*/\1/" >"$TMP/t1"
  paste "$TMP/w1" "$TMP/t1" | awk 'NR == 1 {lo = hi = $1 / $2} {r = $1 / $2; if (r < lo) lo = r; if (r > hi) hi = r}
    END {printf "%.2f-%.2f", lo, hi}'
}
printf "%-14s %-16s %12s %12s %7s %9s   %12s %12s %7s %9s\n" case shape "wick fwd us" "torch fwd" ratio spread \
  "wick f+b us" "torch f+b" ratio spread
awk '{print $1, $2}' "$TMP/wick" | awk '!seen[$0]++' | while read -r c s; do
  wf=$(med "$TMP/wick" "$c" "$s" fwd_us); tf=$(med "$TMP/torch" "$c" "$s" fwd_us)
  wb=$(med "$TMP/wick" "$c" "$s" fwdbwd_us); tb=$(med "$TMP/torch" "$c" "$s" fwdbwd_us)
  printf "%-14s %-16s %12s %12s %7.2f %9s   %12s %12s %7.2f %9s\n" "$c" "$s" "$wf" "$tf" "$(echo "$wf / $tf" | bc -l)" \
    "$(spread "$c" "$s" fwd_us)" "$wb" "$tb" "$(echo "$wb / $tb" | bc -l)" "$(spread "$c" "$s" fwdbwd_us)"
done
