#!/bin/sh
# nanoGPT's CPU-size GPT (4 layers, 4 heads, 128 wide, block 64, batch 12), wick
# (bench/gpt.lua) against PyTorch (bench/gpt_torch.py, fused attention), one
# thread on each side, the same text, batches and initial weights; ROUNDS
# alternating runs of ITERS timed iterations after WARMUP, median ms/iteration.
# The time is the process's CPU time per iteration (one thread each, so it is
# the work itself, also on a machine other processes share); wall time beside.
#
#   bench/gpt.sh [build-dir]        (ROUNDS=3 ITERS=50 WARMUP=5 PYTHON=... to change)
set -eu
BUILD=${1:-build}
ROUNDS=${ROUNDS:-3}
ITERS=${ITERS:-50}
WARMUP=${WARMUP:-5}
PYTHON=${PYTHON:-$HOME/.cache/wick-torch-venv/bin/python}
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$PYTHON" bench/gpt_torch.py --write-init "$TMP/init.pt" >/dev/null
CPU=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
echo "CPU: $CPU; 1 thread; $ROUNDS rounds x $ITERS iterations after $WARMUP warm-up"
: >"$TMP/wick" ; : >"$TMP/torch"
r=1
while [ "$r" -le "$ROUNDS" ]; do
  "$PYTHON" bench/gpt_torch.py --init "$TMP/init.pt" --iters "$ITERS" --warmup "$WARMUP" --threads 1 | tee -a "$TMP/torch"
  "$BUILD/wick" bench/gpt.lua --init "$TMP/init.pt" --iters "$ITERS" --warmup "$WARMUP" --threads 1 | tee -a "$TMP/wick"
  r=$((r + 1))
done
median() { sed 's/.*ms_per_iter=\([0-9.]*\).*/\1/' "$1" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
W=$(median "$TMP/wick"); P=$(median "$TMP/torch")
WL=$(tail -1 "$TMP/wick" | sed 's/.*loss=\([0-9.]*\).*/\1/'); PL=$(tail -1 "$TMP/torch" | sed 's/.*loss=\([0-9.]*\).*/\1/')
WW=$(sed 's/.*wall_ms=\([0-9.]*\).*/\1/' "$TMP/wick" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
PW=$(sed 's/.*wall_ms=\([0-9.]*\).*/\1/' "$TMP/torch" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "median CPU ms/iteration: wick $W, PyTorch $P; wick/PyTorch = $(awk -v w="$W" -v p="$P" 'BEGIN {printf "%.2f", w / p}')"
echo "median wall ms/iteration: wick $WW, PyTorch $PW; wick/PyTorch = $(awk -v w="$WW" -v p="$PW" 'BEGIN {printf "%.2f", w / p}')"
echo "loss after $((WARMUP + ITERS)) steps: wick $WL, PyTorch $PL"
