#!/bin/sh
# Mixed precision on the CPU: wick's training under bfloat16 autocast against the
# same training in float32, alternating, ROUNDS rounds, one thread:
#   - the MLP epoch of bench/train.lua (784-512-256-10 on Fashion-MNIST, batch 128):
#     epoch seconds (wall) and test accuracy;
#   - nanoGPT's CPU-size GPT of bench/gpt.lua (random init, ITERS timed iterations
#     after WARMUP): median CPU ms per iteration and the loss after the last step.
# Prints each run, then the medians and the ratios autocast / float32 (issue 17's
# goal: time <= 0.6x, accuracy within 0.5 points, loss within 2%).
#
#   bench/amp.sh [build-dir]     (ROUNDS=3 ITERS=30 WARMUP=3 PARTS="mlp gpt" DTYPE=bfloat16)
set -eu
BUILD=${1:-build}
ROUNDS=${ROUNDS:-3}
ITERS=${ITERS:-30}
WARMUP=${WARMUP:-3}
PARTS=${PARTS:-mlp gpt}
DTYPE=${DTYPE:-bfloat16}
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 BLIS_NUM_THREADS=1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CPU=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
echo "CPU: $CPU; 1 thread; $ROUNDS rounds, float32 and $DTYPE autocast alternating"
median() { sort -g "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
for part in $PARTS; do
  for mode in f32 amp; do : >"$TMP/$part.$mode.t"; : >"$TMP/$part.$mode.q"; done
  r=1
  while [ "$r" -le "$ROUNDS" ]; do
    for mode in f32 amp; do
      extra=float32
      if [ "$mode" = amp ]; then extra=$DTYPE; fi
      if [ "$part" = mlp ]; then
        out=$("$BUILD/wick" bench/train.lua 1 epoch $extra)
        echo "mlp $mode: $(echo "$out" | tr '\n' ' ')"
        echo "$out" | awk -F'\t' '$1 == "epoch_s" {print $2}' >>"$TMP/$part.$mode.t"
        echo "$out" | awk -F'\t' '$1 == "accuracy" {print $2}' >>"$TMP/$part.$mode.q"
      else
        extra=""
        if [ "$mode" = amp ]; then extra="--autocast $DTYPE"; fi
        out=$("$BUILD/wick" bench/gpt.lua --iters "$ITERS" --warmup "$WARMUP" --threads 1 $extra)
        echo "gpt $mode: $out"
        echo "$out" | sed 's/.*ms_per_iter=\([0-9.]*\).*/\1/' >>"$TMP/$part.$mode.t"
        echo "$out" | sed 's/.* loss=\([0-9.]*\).*/\1/' >>"$TMP/$part.$mode.q"
      fi
    done
    r=$((r + 1))
  done
done
echo "--- medians (autocast / float32)"
for part in $PARTS; do
  tf=$(median "$TMP/$part.f32.t"); ta=$(median "$TMP/$part.amp.t")
  qf=$(median "$TMP/$part.f32.q"); qa=$(median "$TMP/$part.amp.q")
  if [ "$part" = mlp ]; then
    echo "mlp epoch_s float32=$tf autocast=$ta ratio=$(ratio "$ta" "$tf")  accuracy float32=$qf autocast=$qa"
  else
    echo "gpt ms_per_iter float32=$tf autocast=$ta ratio=$(ratio "$ta" "$tf")  loss float32=$qf autocast=$qa ratio=$(ratio "$qa" "$qf")"
  fi
done
